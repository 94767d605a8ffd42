"""The agent: one cycle is discover -> sync, repeated for months.

``Agent`` is an oslo.service service (start/stop/wait/reset). Its loop runs
a cycle, then waits ``interval`` plus a random jitter, or less when woken:
by a hardware event, an RPC ``refresh``, or a stop. While placement is
unreachable it retries with a doubling backoff and logs once per change of
state. A stop lets the running cycle finish: every write is keyed by a
stable uuid and a generation, so even a kill -9 mid-cycle leaves nothing
the next cycle cannot converge.
"""
import dataclasses
import logging
import random
import threading
import time
from typing import TYPE_CHECKING
from typing import NamedTuple
from wsgiref.simple_server import WSGIServer

from oslo_config import cfg
import oslo_messaging
from oslo_service import service

from tracker import agent_opts
from tracker import audit as audit_mod
from tracker import metrics as metrics_mod
from tracker import notify
from tracker import nova_api
from tracker import nova_audit
from tracker import nova_compute
from tracker import reconcile
from tracker import rpc
from tracker import systemd
from tracker.drivers import load_driver
from tracker.drivers.base import Driver
from tracker.drivers.base import HostSnapshot
from tracker.placement import ownership
from tracker.placement.client import ReportClient
from tracker.placement.errors import PlacementUnreachable
from tracker.providers import config as provider_config
from tracker.providers import tree as tree_mod

if TYPE_CHECKING:     # imported when hardware events start (pyudev)
    from tracker.drivers.udev import HardwareMonitor

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class CycleResult:
    ok: bool
    reachable: bool
    duration: float = 0.0
    writes: int = 0
    conflicts: int = 0
    requests: int = 0
    changes: list[notify.Event] = dataclasses.field(default_factory=list)
    error: str = ''

    def summary(self) -> str:
        if not self.ok:
            return 'cycle failed: %s' % self.error
        return ('cycle synced in %.2fs: %d change(s), %d request(s), '
                '%d write(s), %d conflict(s)' % (
                    self.duration, len(self.changes), self.requests,
                    self.writes, self.conflicts))


class _Parts(NamedTuple):
    """What a cycle or an audit works with, once built."""
    driver: Driver
    client: ReportClient
    ages: reconcile.ConsumerAges


# oslo.service has no type information: ServiceBase is Any to mypy, which
# strict mode refuses as a base (unused-ignore: the config may be looser).
class Agent(service.ServiceBase):  # type: ignore[misc, unused-ignore]
    def __init__(self, conf: cfg.ConfigOpts, driver: Driver | None = None,
                 client: ReportClient | None = None,
                 publisher: notify.Publisher | None = None,
                 sd_notifier: systemd.Notifier | None = None,
                 rng: random.Random | None = None) -> None:
        self.conf = conf
        self.host = agent_opts.host(conf)
        self.driver = driver
        self.client = client
        self.publisher = publisher
        self.sd = sd_notifier or systemd.Notifier()
        self.metrics = metrics_mod.Metrics()
        self.rng = rng or random.Random()
        self.reachable: bool | None = None   # unknown until the first request
        self.failures = 0            # consecutive cycles placement did not answer
        self.cycles = 0
        self.last_result: CycleResult | None = None
        # the snapshot placement was last made to match
        self._last_synced: HostSnapshot | None = None
        # operator overlays, built on first use
        self._provider_config: provider_config.ProviderConfigSource | None = None
        self._last_error: str | None = None
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()   # one cycle or audit at a time
        self._closing = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._rpc_server: oslo_messaging.MessageHandlingServer | None = None
        self._metrics_server: tuple[WSGIServer, threading.Thread] | None = None
        self._hardware_monitor: HardwareMonitor | None = None
        # beside nova-compute: nova's root uuid, consumers' ages, and the
        # findings notified ({(kind, consumer)})
        self.compute_node: str | None = None
        self._ages: reconcile.ConsumerAges | None = None
        self._reported: set[tuple[str, str]] = set()
        # the drained devices the last discovery saw (None: none yet)
        self._drained: dict[str, str] | None = None
        # nova's API, asked what is moving (tracker/nova_api.py); by default
        # the catalog's compute service with placement's credentials
        self.nova: nova_api.Source | None = None

    @property
    def last_snapshot(self) -> HostSnapshot | None:
        """The host as placement was last made to match (None before)."""
        return self._last_synced

    # -- what a cycle needs, built on first use ---------------------------
    def _ensure_driver(self) -> Driver:
        if self.driver is None:
            self.driver = load_driver(self.conf)
            # the fake driver reports a host of its own: the agent (RPC
            # server, publisher, ownership file) takes its name
            self.host = self.driver.configured_host() or self.host
        return self.driver

    def _ensure_parts(self) -> _Parts:
        driver = self._ensure_driver()
        if self._ages is None:
            # nova's compute_id decides, once: beside nova-compute or not
            self.compute_node = nova_compute.compute_node_uuid(self.conf)
            self._ages = nova_audit.ages_for(self.conf, self.host)
        if self.client is None:
            self.client = ReportClient(
                conf=self.conf, state_file=ownership.path_for(
                    self.conf.tracker.state_path, self.host))
        if self.compute_node and self.nova is None:
            self.nova = nova_api.NovaApi.beside(self.client.http.adapter)
        return _Parts(driver, self.client, self._ages)

    def discover(self) -> HostSnapshot:
        """The host as the driver sees it, plus the operator's provider
        config (re-read each time: editing it needs no restart)."""
        snapshot = self._ensure_driver().discover()
        self.metrics.devices_drained(snapshot.drained)
        if self._provider_config is None:
            self._provider_config = provider_config.ProviderConfigSource(
                self.conf.compute.provider_config_location)
        try:
            overlays = self._provider_config.load()
        finally:
            self.metrics.provider_config_valid.set(
                0 if self._provider_config.error else 1)
        if overlays:
            tree = tree_mod.as_tree(snapshot.providers)
            provider_config.apply(overlays, tree, snapshot.root.uuid)
            snapshot = dataclasses.replace(snapshot, providers=tree.providers())
        return snapshot

    # -- one cycle --------------------------------------------------------
    def run_cycle(self) -> CycleResult:
        with self._lock:
            parts = self._ensure_parts()
            started = time.monotonic()
            result = self._cycle(parts)
            result.duration = time.monotonic() - started
        self.cycles += 1
        self.last_result = result
        if result.ok:
            self.metrics.cycle_done(result.duration, result.writes,
                                    result.conflicts, time.time())
        else:
            self.metrics.cycle_failed(result.duration, result.reachable)
        return result

    def _cycle(self, parts: _Parts) -> CycleResult:
        try:
            snapshot = self.discover()
        except provider_config.ProviderConfigError as exc:
            return self._failed(CycleResult(
                False, bool(self.reachable),
                error='provider config not applied, nothing written: %s' % exc))
        except Exception as exc:
            return self._failed(CycleResult(False, bool(self.reachable),
                                            error='discovery failed: %s' % exc))
        # a drain or undrain is told whoever owns the providers
        events = notify.device_drains(self._drained, snapshot.drained, self.host)
        self._drained = dict(snapshot.drained)
        if events and self.publisher is not None:
            self.publisher.publish(events)
        if self.compute_node:
            result = self._beside_nova_cycle(parts, snapshot, self.compute_node)
        else:
            result = self._standalone_cycle(parts, snapshot)
        result.changes = events + result.changes
        return result

    def _standalone_cycle(self, parts: _Parts, snapshot: HostSnapshot) -> CycleResult:
        authoritative = self.conf.tracker.authoritative_allocations
        client = parts.client
        client.new_request_id()
        before = client.counters.snapshot()
        try:
            # One GET even when nothing changed here: placement gone, or
            # changed behind our back, shows within a cycle or two.
            client.check(snapshot.root.uuid)
            synced = client.sync(snapshot.providers, snapshot.instances)
            allocated = client.sync_allocations(
                snapshot.root.uuid, snapshot.instances,
                authoritative=authoritative)
        except PlacementUnreachable as exc:
            self._placement_state(False, exc)
            return CycleResult(False, False, error='placement unreachable: %s' % exc)
        except Exception as exc:
            # Placement answered, but not as hoped (a 4xx/5xx the client
            # could not resolve): the next cycle tries again.
            self._placement_state(True)
            return self._failed(CycleResult(False, True,
                                            error='sync failed: %s' % exc))
        self._placement_state(True)
        errors = list(synced.errors) + list(allocated.errors)
        after = client.counters
        # What was written is notified even when a part failed.
        changes = notify.notifications(synced, allocated, snapshot)
        if changes and self.publisher is not None:
            self.publisher.publish(changes)
        result = CycleResult(
            ok=not errors, reachable=True, changes=changes,
            requests=after.requests - before.requests,
            writes=after.writes - before.writes,
            conflicts=after.conflicts - before.conflicts)
        if errors:
            result.error = 'sync incomplete: ' + '; '.join(str(e) for e in errors)
            return self._failed(result)
        self._last_error = None
        self._last_synced = snapshot
        return result

    def _beside_nova_cycle(self, parts: _Parts, snapshot: HostSnapshot,
                           compute_node: str) -> CycleResult:
        """Beside nova-compute: check the guests' allocations on nova's
        tree; repair them only when [tracker] repair_allocations says so."""
        client = parts.client
        client.new_request_id()
        before = client.counters.snapshot()
        try:
            found, allocated, changes = nova_audit.cycle(
                snapshot, client, self.conf, parts.ages, compute_node,
                self._reported, self.nova)
        except PlacementUnreachable as exc:
            self._placement_state(False, exc)
            return CycleResult(False, False, error='placement unreachable: %s' % exc)
        except Exception as exc:
            self._placement_state(True)
            return self._failed(CycleResult(False, True, error='check failed: %s' % exc))
        self._placement_state(True)
        self.metrics.findings_seen(nova_audit.counts(found.drift))
        for item in found.drift:
            if (item.kind, item.uuid) not in self._reported:
                LOG.warning('allocation finding: %s', item.describe())
        # a repair's leftovers are told again at the next cycle
        self._reported = set() if allocated else {(d.kind, d.uuid) for d in found.drift}
        if changes and self.publisher is not None:
            self.publisher.publish(changes)
        after = client.counters
        errors = allocated.errors if allocated else []
        result = CycleResult(ok=not errors, reachable=True, changes=changes,
                             requests=after.requests - before.requests,
                             writes=after.writes - before.writes,
                             conflicts=after.conflicts - before.conflicts)
        if errors:
            result.error = 'repair incomplete: ' + '; '.join(str(e) for e in errors)
            return self._failed(result)
        self._last_error = None
        self._last_synced = snapshot
        return result

    def _failed(self, result: CycleResult) -> CycleResult:
        """Log a failure once, not at every cycle while it lasts."""
        if result.error != self._last_error:
            LOG.error('%s (logged again only when it changes)', result.error)
        self._last_error = result.error
        return result

    def _placement_state(self, reachable: bool, exc: Exception | None = None) -> None:
        if reachable:
            if self.reachable is False:
                LOG.info('placement is reachable again after %d failed '
                         'cycle(s)', self.failures)
            self.failures = 0
        else:
            if self.reachable is not False:
                LOG.warning('placement is unreachable (%s); retrying with '
                            'backoff', exc)
            self.failures += 1
        self.reachable = reachable
        self.metrics.reachable.set(1 if reachable else 0)

    def audit(self, fix: bool = False, dry_run: bool = False) -> audit_mod.AuditReport:
        with self._lock:
            parts = self._ensure_parts()
            snapshot = self.discover()
            if self.compute_node:
                report = nova_audit.audit(snapshot, parts.client, self.conf, parts.ages,
                                          self.compute_node, fix=fix, dry_run=dry_run,
                                          nova=self.nova)
                self.metrics.findings_seen(nova_audit.counts(report.drift))
            else:
                report = audit_mod.audit(
                    snapshot, parts.client, fix=fix, dry_run=dry_run,
                    authoritative=self.conf.tracker.authoritative_allocations)
        self.metrics.drift.set(len(report.drift))
        return report

    # -- the loop ---------------------------------------------------------
    def next_delay(self) -> float:
        """Seconds until the next cycle (mutable options read each time)."""
        opts = self.conf.tracker
        delay: float
        if self.failures:
            base = max(1.0, opts.interval / 4.0) * 2 ** (self.failures - 1)
            delay = min(float(opts.backoff_max), base)
        else:
            delay = float(opts.interval)
        return delay + self.rng.uniform(0, opts.jitter)

    def trigger(self, reason: str = 'requested') -> None:
        """Run a cycle now (or right after the running one)."""
        LOG.info('early cycle: %s', reason)
        self._wake.set()

    def _wait(self, delay: float) -> None:
        deadline = time.monotonic() + delay
        while not self._stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            step = min(remaining, self.sd.watchdog_interval or remaining)
            if self._wake.wait(step):
                return
            self.sd.watchdog()

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.clear()
            result = self.run_cycle()
            # Failures are logged where they happen; a quiet cycle is debug.
            if result.ok:
                (LOG.info if result.changes or result.writes
                 else LOG.debug)(result.summary())
            self.sd.watchdog()
            self.sd.status(result.summary())
            self._wait(self.next_delay())
        LOG.info('agent stopped after %d cycle(s)', self.cycles)

    # -- oslo.service's interface -----------------------------------------
    def start(self) -> None:
        driver = self._ensure_parts().driver
        opts = self.conf.tracker
        if opts.metrics_port:
            self._metrics_server = self.metrics.serve(opts.metrics_port,
                                                      opts.metrics_host)
        if opts.notifications and self.publisher is None:
            self.publisher = notify.Publisher(self.conf, self.host)
        if opts.rpc:
            self._start_rpc()
        if opts.hardware_events and driver.name in ('host', 'libvirt'):
            self._start_hardware_monitor()
        if opts.hardware_events:      # the driver's own (libvirt's node devices)
            driver.watch(self.trigger)
        self._thread = threading.Thread(target=self._loop, name='tracker-cycle',
                                        daemon=True)
        self._thread.start()
        self.sd.ready('agent %s started' % self.host)
        LOG.info('agent %s started: driver %s, every %ss (+ up to %ss)',
                 self.host, driver.name, opts.interval, opts.jitter)

    def _start_rpc(self) -> None:
        """Listen for RPC from a thread of its own: while the broker is
        down, oslo.messaging retries the connection forever, and cycles
        must not wait for it."""
        rpc_server = rpc.server(self.conf, self.host, self)

        def listen() -> None:
            try:
                rpc_server.start()
            except Exception as exc:
                LOG.error('RPC server not started: %s', exc)
                return
            self._rpc_server = rpc_server
        threading.Thread(target=listen, name='tracker-rpc', daemon=True).start()

    def _start_hardware_monitor(self) -> None:
        from tracker.drivers import udev
        monitor = udev.HardwareMonitor(
            lambda action, device: self.trigger('hardware %s' % action))
        try:
            monitor.start()
        except Exception as exc:   # no netlink (a container): cycles still run
            LOG.warning('no hardware events (%s); changes show at the next '
                        'cycle', exc)
            return
        self._hardware_monitor = monitor

    def stop(self, graceful: bool = True) -> None:
        """Let the running cycle finish, end the loop, release everything.

        Returns only then: oslo.service's launcher ends the process as soon
        as stop() returns.
        """
        if not self._stopping.is_set():
            LOG.info('stopping: finishing the current cycle, then exiting')
        # No STOPPING=1 here: a SIGHUP also stops this worker (the launcher
        # starts a fresh one), and systemd would take it for a shutdown.
        self._stopping.set()
        self._wake.set()
        self.wait()

    def wait(self) -> None:
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.5)
        with self._closing:       # stop() and the launcher's wait() both get here
            if self._closed:
                return
            self._closed = True
            if self._hardware_monitor is not None:
                self._hardware_monitor.stop()
            if self._rpc_server is not None:
                self._rpc_server.stop()
                self._rpc_server.wait()
            if self._metrics_server is not None:
                self._metrics_server[0].shutdown()
            if self.publisher is not None:
                self.publisher.close()
            if self.driver is not None:
                self.driver.close()

    def reset(self) -> None:
        """After SIGHUP, under a launcher that keeps the service (oslo's
        in-process Launcher): mutable options are read again on the next
        wait. tracker-agent's ServiceLauncher starts a fresh worker instead."""
        opts = self.conf.tracker
        LOG.info('configuration reloaded: every %ss (+ up to %ss)',
                 opts.interval, opts.jitter)
        self._wake.set()


def run(conf: cfg.ConfigOpts, agent: Agent) -> int:
    """Run ``agent`` under oslo.service's launcher until SIGTERM/SIGINT.

    The threading backend (cotyledon) runs it in a worker process: SIGTERM
    to the launcher reaches the worker, whose stop() lets the running cycle
    finish; SIGHUP mutates the mutable options in the launcher, which then
    replaces the worker with one forked from it (it starts with an empty
    cache: its first cycle rereads placement).
    """
    launcher = service.launch(conf, agent, restart_method='mutate')
    status: int = launcher.wait() or 0
    agent.sd.stopping()       # from the launcher, once its worker is gone
    return status
