"""What an operator scrapes or alerts on (Prometheus).

Each agent has its own registry, so that several agents in one process
(tests) never share counters.
"""
from collections.abc import Mapping
from threading import Thread
from wsgiref.simple_server import WSGIServer

import prometheus_client as prom


class Metrics:
    def __init__(self) -> None:
        self.registry = prom.CollectorRegistry()
        r = self.registry
        self.last_success = prom.Gauge(
            'tracker_last_successful_sync_timestamp_seconds',
            'Unix time of the end of the last cycle that synced.',
            registry=r)
        self.cycle_duration = prom.Histogram(
            'tracker_cycle_duration_seconds',
            'Duration of one cycle (discover and sync).',
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r)
        self.cycles = prom.Counter(
            'tracker_cycles', 'Cycles run, by result.', ['result'],
            registry=r)
        self.writes = prom.Gauge(
            'tracker_writes_last_cycle',
            'Writes sent to placement by the last cycle.', registry=r)
        self.writes_total = prom.Counter(
            'tracker_writes', 'Writes sent to placement.', registry=r)
        self.conflicts = prom.Gauge(
            'tracker_conflicts_last_cycle',
            'Generation conflicts (409) met by the last cycle.', registry=r)
        self.conflicts_total = prom.Counter(
            'tracker_conflicts', 'Generation conflicts met.', registry=r)
        self.drift = prom.Gauge(
            'tracker_drift_items',
            'Differences between the host and placement found by the '
            'last audit.', registry=r)
        self.allocation_findings = prom.Gauge(
            'tracker_allocation_findings',
            'Beside nova-compute: guests\' allocations that differ from '
            'their domains, by kind, at the last check.', ['kind'], registry=r)
        self.reachable = prom.Gauge(
            'tracker_placement_reachable',
            '1 when the last request to placement got an answer.',
            registry=r)
        self.provider_config_valid = prom.Gauge(
            'tracker_provider_config_valid',
            '0 while the operator provider config does not validate (the '
            'last good one, if any, stays in force).', registry=r)

        self.device_drained = prom.Gauge(
            'tracker_device_drained',
            '1 for each device taken out of scheduling (tracker-manage '
            'device drain), with the reason.', ['address', 'reason'],
            registry=r)

    def devices_drained(self, drained: Mapping[str, str]) -> None:
        """The drained devices the last discovery saw, and only those."""
        self.device_drained.clear()
        for address, reason in drained.items():
            self.device_drained.labels(address=address, reason=reason).set(1)

    def cycle_done(self, duration: float, writes: int, conflicts: int,
                   finished_at: float) -> None:
        self.cycle_duration.observe(duration)
        self.cycles.labels(result='synced').inc()
        self.writes.set(writes)
        self.writes_total.inc(writes)
        self.conflicts.set(conflicts)
        self.conflicts_total.inc(conflicts)
        self.last_success.set(finished_at)
        self.reachable.set(1)

    def cycle_failed(self, duration: float, reachable: bool) -> None:
        self.cycle_duration.observe(duration)
        self.cycles.labels(result='failed').inc()
        self.reachable.set(1 if reachable else 0)

    def findings_seen(self, counts: Mapping[str, int]) -> None:
        """{kind: n} of the last check (every kind, zeros included)."""
        for kind, n in counts.items():
            self.allocation_findings.labels(kind=kind).set(n)
        self.drift.set(sum(counts.values()))

    def exposition(self) -> str:
        """The text format, as served on /metrics."""
        return prom.generate_latest(self.registry).decode()

    def serve(self, port: int, addr: str = '127.0.0.1') -> tuple[WSGIServer, Thread]:
        """Serve /metrics from a daemon thread; returns (server, thread)."""
        return prom.start_http_server(port, addr=addr, registry=self.registry)
