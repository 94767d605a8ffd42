"""What steady hosts cost placement (issue 14): requests per host per hour
and server CPU, at --hosts simulated hosts.

Workload: --hosts hosts, each a compute node (VCPU, MEMORY_MB, DISK_GB)
with one GPU child (VGPU) and two instances (one holding a VGPU). Each host
is a real ``tracker.agent.Agent`` running the daemon's cycle (check, sync
providers, sync allocations) with a real ReportClient over HTTP; only
discovery is an in-memory driver returning the same host every time, and
the agents run one after another in this process instead of each on its
own machine.

Against: our placement-server as a real process (gunicorn, --workers) on a
SQLite file, noauth2.

Measured, after every host's first cycle:
  steady cycles: --rounds rounds of one cycle per host (each host's steady
    check alternates between the tree's listing and the root's usages);
  association refresh cycles: one round in which every host's
    [placement] association_refresh_interval has passed (the full reread);
for each: requests (the report clients' wire counters) and the server's
CPU time (user + system of the gunicorn master and workers, from /proc).

Then per host per hour, with the daemon's defaults (interval 60 s, refresh
300 s): 60 cycles, of which 12 are refresh cycles and 48 steady ones.

    .venv/bin/python bench/agent_fleet_steady_state.py --hosts 1000

prints the figures and writes bench/results/agent_fleet_steady_state.json.
"""
import argparse
import os
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOP)

from keystoneauth1 import adapter as ks_adapter  # noqa: E402
from keystoneauth1 import session as ks_session  # noqa: E402
from keystoneauth1 import token_endpoint  # noqa: E402
from oslo_config import cfg  # noqa: E402
import psutil  # noqa: E402

from bench import harness  # noqa: E402
from tests.integration.servers import Server  # noqa: E402
from tracker import agent as agent_mod  # noqa: E402
from tracker import conf as tracker_conf  # noqa: E402
from tracker.drivers import base  # noqa: E402
from tracker.placement.client import ReportClient  # noqa: E402
from tracker.providers.provider import Provider  # noqa: E402
from tracker.providers.provider import inventory  # noqa: E402
from tracker.providers.provider import stable_uuid  # noqa: E402

INTERVAL, REFRESH = 60, 300


class SameHost(base.Driver):
    """A host that never changes (what steady state is)."""
    name = 'bench'

    def __init__(self, hostname):
        root = stable_uuid('compute-node', hostname)
        gpu = stable_uuid(hostname, 'gpu0')
        self.snapshot = base.HostSnapshot(hostname, providers=[
            Provider(root, hostname, inventories={
                'VCPU': inventory(64), 'MEMORY_MB': inventory(262144, reserved=4096),
                'DISK_GB': inventory(2000)}, traits={'HW_CPU_X86_AVX2'}),
            Provider(gpu, hostname + '_gpu0', root, inventories={'VGPU': inventory(8)})],
            instances=[
                base.Instance(stable_uuid(hostname, 'vm1'), 'vm1', 'p', 'u',
                              {root: {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 40}}),
                base.Instance(stable_uuid(hostname, 'vm2'), 'vm2', 'p', 'u',
                              {root: {'VCPU': 2, 'MEMORY_MB': 4096},
                               gpu: {'VGPU': 1}})])

    def discover(self):
        return self.snapshot


def server_cpu(server):
    """CPU seconds (user + system) of the server's processes so far."""
    total = 0.0
    parent = psutil.Process(server.proc.pid)
    for proc in [parent] + parent.children(recursive=True):
        times = proc.cpu_times()
        total += times.user + times.system
    return total


def agents(url, hosts, workdir):
    path = os.path.join(workdir, 'tracker.conf')
    with open(path, 'w') as f:
        f.write('[tracker]\nstate_path =\nnotifications = false\nrpc = false\n')
    conf = tracker_conf.load(['--config-file', path], conf=cfg.ConfigOpts())
    session = ks_session.Session(auth=token_endpoint.Token(url, 'admin'))
    result = []
    for n in range(hosts):
        adapter = ks_adapter.Adapter(session, service_type='placement', raise_exc=False,
                                     additional_headers={'X-Roles': 'admin,service'})
        result.append(agent_mod.Agent(conf, driver=SameHost('bench-%04d' % n),
                                      client=ReportClient(adapter=adapter)))
    return result


def round_of(fleet, server, refresh=False):
    """One cycle of every host; (requests, server CPU s, wall s)."""
    if refresh:
        for agent in fleet:          # the refresh interval has passed for all
            client = agent.client
            for stamps in (client.known.read_at, client.known.consumers_read_at):
                for root in stamps:
                    stamps[root] -= client.known.refresh_interval
    requests = 0
    cpu, started = server_cpu(server), time.monotonic()
    for agent in fleet:
        result = agent.run_cycle()
        assert result.ok and not result.writes, result.summary()
        requests += result.requests
    return requests, server_cpu(server) - cpu, time.monotonic() - started


def run(workdir, hosts, rounds, workers):
    server = Server('sqlite:///%s/placement.sqlite' % workdir, workdir, workers=workers,
                    sync_db=True).start()
    try:
        fleet = agents(server.url, hosts, workdir)
        started = time.monotonic()
        first = sum(agent.run_cycle().requests for agent in fleet)
        first_seconds = time.monotonic() - started
        steady = [round_of(fleet, server) for _ in range(rounds)]
        refresh = round_of(fleet, server, refresh=True)
        steady.append(round_of(fleet, server))
    finally:
        server.stop()
    steady_requests = sum(r[0] for r in steady) / (len(steady) * hosts)
    steady_cpu = sum(r[1] for r in steady) / (len(steady) * hosts)
    refresh_requests, refresh_cpu = refresh[0] / hosts, refresh[1] / hosts
    per_hour = 3600 // INTERVAL
    refreshes = 3600 // REFRESH
    requests_per_hour = ((per_hour - refreshes) * steady_requests
                         + refreshes * refresh_requests)
    cpu_per_hour = (per_hour - refreshes) * steady_cpu + refreshes * refresh_cpu
    return {
        'hosts': hosts, 'rounds': len(steady), 'workers': workers,
        'first_cycle': {'requests': first, 'seconds': round(first_seconds, 1)},
        'steady_cycle': {'requests_per_host': round(steady_requests, 3),
                         'server_cpu_ms_per_host': round(steady_cpu * 1000, 3),
                         'round_seconds': [round(r[2], 1) for r in steady]},
        'refresh_cycle': {'requests_per_host': round(refresh_requests, 3),
                          'server_cpu_ms_per_host': round(refresh_cpu * 1000, 3),
                          'round_seconds': round(refresh[2], 1)},
        'per_host_per_hour': {
            'requests': round(requests_per_hour, 1),
            'of_which_steady_checks': round((per_hour - refreshes) * steady_requests, 1),
            'of_which_refreshes': round(refreshes * refresh_requests, 1),
            'server_cpu_seconds': round(cpu_per_hour, 3)},
        'fleet_per_hour': {
            'requests_per_second': round(requests_per_hour * hosts / 3600, 2),
            'server_cpu_cores': round(cpu_per_hour * hosts / 3600, 4),
            'steady_checks_cpu_cores': round(
                (per_hour - refreshes) * steady_cpu * hosts / 3600, 4)},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=4,
                        help='steady rounds before the refresh round (one more after)')
    parser.add_argument('--workers', type=int, default=1)
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as workdir:
        result = run(workdir, args.hosts, args.rounds, args.workers)
    result['wall_seconds'] = round(time.time() - started, 1)
    harness.save(os.path.join(TOP, 'bench', 'results', 'agent_fleet_steady_state.json'),
                 result)
    print('%(hosts)d hosts, %(rounds)d steady rounds, %(workers)d worker(s)' % result)
    print('first cycles: %(requests)d requests in %(seconds)ss' % result['first_cycle'])
    print('steady cycle: %(requests_per_host)s requests, %(server_cpu_ms_per_host)s ms '
          'server CPU per host' % result['steady_cycle'])
    print('refresh cycle: %(requests_per_host)s requests, %(server_cpu_ms_per_host)s ms '
          'server CPU per host' % result['refresh_cycle'])
    print('per host per hour: %(requests)s requests (%(of_which_steady_checks)s steady '
          'checks, %(of_which_refreshes)s refreshes), %(server_cpu_seconds)s s server CPU'
          % result['per_host_per_hour'])
    print('fleet: %(requests_per_second)s requests/s, %(server_cpu_cores)s server cores '
          '(steady checks alone: %(steady_checks_cpu_cores)s)' % result['fleet_per_hour'])


if __name__ == '__main__':
    main()
