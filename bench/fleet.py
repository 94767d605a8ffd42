"""A fleet of agents against one placement deployment (issue 16).

--hosts simulated hypervisors (1000 by default), each the project's own
agent cycle (tracker.agent.Agent.run_cycle: the fake driver reading the
host's YAML, the real report client over HTTP) with its own configuration,
cache and ownership file, scheduled as the daemon schedules itself
(``next_delay``: the interval plus jitter, the doubling backoff while
placement is away). The hosts live in --processes processes, each running
its due cycles on a thread pool: a few interpreters, not one per host.

Each host: a compute node with 2 GPUs (VGPU) and 2 SR-IOV PFs (5
providers) and 4 instances (allocations on the node, one on a GPU).

Against: placement-server (gunicorn, --workers workers) on a scratch
PostgreSQL database. Phases, measured on the server (its /metrics, sampled
every second, and the CPU time of its processes and of its PostgreSQL
backends):

  storm     every agent starts at once: time until all the trees are in
            placement (every host had a successful cycle), CPU, 5xx count;
  steady    --steady seconds of normal running: requests per host per hour;
  outage    the server is stopped for --outage seconds, then started again;
            meanwhile one instance goes away on every host (agents that
            stayed quiet would not notice an outage at all): time until
            every host has synced again, the peak request rate (1 s and
            10 s windows) and the 5xx count.

    .venv/bin/python bench/fleet.py --hosts 1000 --workers 4

prints a summary and writes bench/results/fleet.json. For comparison it
prints what nova-compute's report client would send for the same fleet in
steady state: one GET of the compute node's allocations every periodic run
(60 s), and every association refresh (300 s) three GETs per provider
(inventories, aggregates, traits).
"""
import argparse
import collections
import heapq
import multiprocessing
import os
import queue
import re
import sys
import tempfile
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOP)

import psutil  # noqa: E402
import requests  # noqa: E402

from bench import harness  # noqa: E402
from tests.integration import agent_env  # noqa: E402
from tests.integration.servers import Server  # noqa: E402

PROVIDERS_PER_HOST = 5
INSTANCES_PER_HOST = 4
NOVA_PERIODIC = 60            # nova's update_available_resource interval
NOVA_ASSOCIATION_REFRESH = 300
NOVA_GETS_PER_REFRESH = 3     # inventories, aggregates, traits per provider


def host_name(i):
    return 'fleet-%04d' % i


def describe(i, instances_count=INSTANCES_PER_HOST):
    name = host_name(i)
    instances = []
    for n in range(instances_count):
        allocations = {name: {'VCPU': 2, 'MEMORY_MB': 2048}}
        if n == 0:
            allocations['%s_gpu0' % name] = {'VGPU': 1}
        instances.append(agent_env.instance('%s-vm%d' % (name, n), **allocations))
    description = agent_env.describe_host(name, gpus=2, instances=instances)
    description['providers'] += [
        {'name': '%s_pf%d' % (name, n), 'inventories': {'SRIOV_NET_VF': 8},
         'traits': ['HW_NIC_SRIOV']} for n in range(2)]
    return description


def write_conf(path, url, host_file, name, interval, jitter):
    lines = ['[tracker]', 'driver = fake', 'interval = %d' % interval,
             'jitter = %d' % jitter, 'rpc = false', 'notifications = false',
             'state_path = %s' % os.path.dirname(path),
             '[compute]', 'host = %s' % name,
             '[fake]', 'host_file = %s' % host_file,
             '[placement]', 'auth_type = admin_token', 'token = admin',
             'endpoint = %s' % url, 'connect_retries = 0']
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


# -- the simulated hosts: one process runs many --------------------------

def run_hosts(first, count, url, workdir, interval, jitter, threads, events, control):
    """Run hosts first..first+count-1 until told to stop; report each cycle
    as ('cycle', wall time, host, ok, requests) on ``events``."""
    import concurrent.futures
    import logging

    from oslo_config import cfg

    from tracker import agent as agent_mod
    from tracker import conf as tracker_conf
    logging.basicConfig(level=logging.CRITICAL)

    agents = {}
    for i in range(first, first + count):
        hostdir = os.path.join(workdir, host_name(i))
        os.makedirs(hostdir, exist_ok=True)
        host_file = os.path.join(hostdir, 'host.yaml')
        agent_env.write_host(host_file, describe(i))
        conf_path = os.path.join(hostdir, 'tracker.conf')
        write_conf(conf_path, url, host_file, host_name(i), interval, jitter)
        conf = tracker_conf.load(['--config-file', conf_path], conf=cfg.ConfigOpts())
        agents[i] = agent_mod.Agent(conf)
    events.put(('ready', first))
    control.wait()

    due = [(time.monotonic(), i) for i in agents]   # all start at once
    heapq.heapify(due)
    done = queue.Queue()
    stop_at = None

    def cycle(i):
        result = agents[i].run_cycle()
        events.put(('cycle', time.time(), i, result.ok, result.requests))
        done.put(i)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        running = 0
        while True:
            now = time.monotonic()
            while due and due[0][0] <= now and stop_at is None:
                _, i = heapq.heappop(due)
                pool.submit(cycle, i)
                running += 1
            try:
                i = done.get(timeout=0.05)
                running -= 1
                heapq.heappush(due, (time.monotonic() + agents[i].next_delay(), i))
            except queue.Empty:
                pass
            if stop_at is None and os.path.exists(os.path.join(workdir, 'STOP')):
                stop_at = now
            if stop_at is not None and running == 0:
                return


# -- the server side -------------------------------------------------------

_SAMPLE = re.compile(r'^placement_http_requests_total\{(.*)\} ([0-9.e+]+)$', re.M)


def scrape(metrics_url):
    """(requests, 5xx responses) served so far, health and metrics aside."""
    text = requests.get(metrics_url, timeout=5).text
    total = errors = 0
    for labels, value in _SAMPLE.findall(text):
        fields = dict(part.split('=', 1) for part in labels.split(','))
        if fields.get('route', '').strip('"') in ('/metrics', '/healthcheck'):
            continue
        total += float(value)
        if fields.get('status', '').strip('"').startswith('5'):
            errors += float(value)
    return int(total), int(errors)


def cpu_seconds(pid, database=None):
    """CPU time of a process and its children; with ``database``, of the
    PostgreSQL backends serving that database instead."""
    if database:
        procs = [p for p in psutil.process_iter(['cmdline'])
                 if ' %s ' % database in ' '.join(p.info['cmdline'] or ())]
    else:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


class Meter:
    """Samples the server's counters once a second."""

    def __init__(self):
        self.server = None
        self.samples = []            # (monotonic, requests, 5xx) per server life
        self._stop = threading.Event()
        self._base = (0, 0)          # counts of the servers before this one
        self._last = (0, 0)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def attach(self, server):
        self._base = (self._base[0] + self._last[0], self._base[1] + self._last[1])
        self._last = (0, 0)
        self.server = server

    def _run(self):
        while not self._stop.wait(1.0):
            server = self.server
            if server is None or server.proc is None:
                continue
            try:
                self._last = scrape(server.metrics_url)
            except requests.RequestException:
                continue
            self.samples.append((time.monotonic(), self._base[0] + self._last[0],
                                 self._base[1] + self._last[1]))

    def totals(self):
        return self.samples[-1][1:] if self.samples else (0, 0)

    def peak(self, since, window):
        """Highest request rate over ``window`` seconds after ``since``."""
        points = [(t, n) for t, n, _ in self.samples if t >= since]
        best = 0.0
        for k, (t, n) in enumerate(points):
            for t2, n2 in points[k + 1:]:
                if t2 - t >= window:
                    best = max(best, (n2 - n) / (t2 - t))
                    break
        return round(best, 1)

    def rates(self, since, seconds):
        """Requests per second, second by second, from ``since`` on."""
        points = [(t - since, n) for t, n, _ in self.samples if t >= since]
        return [round((n2 - n) / (t2 - t), 1)
                for (t, n), (t2, n2) in zip(points, points[1:]) if t2 <= seconds]

    def stop(self):
        self._stop.set()


def wait_synced(hosts, events, since, seen, timeout):
    """Read cycle events until every host had an ok cycle after ``since``
    (wall time); returns that moment, or None after ``timeout`` seconds."""
    synced = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            kind, *rest = events.get(timeout=1)
        except queue.Empty:
            continue
        if kind != 'cycle':
            continue
        at, host, ok, reqs = rest
        seen.append(rest)
        if ok and at >= since and host not in synced:
            synced[host] = at
            if len(synced) == hosts:
                return max(synced.values())
    return None


def drain(events, seen):
    while True:
        try:
            kind, *rest = events.get_nowait()
        except queue.Empty:
            return
        if kind == 'cycle':
            seen.append(rest)


def run(args, workdir):
    result = {'hosts': args.hosts, 'processes': args.processes, 'workers': args.workers,
              'providers_per_host': PROVIDERS_PER_HOST, 'interval': args.interval,
              'jitter': args.jitter}
    with harness.ScratchDatabase('postgresql', workdir, 'fleet') as database:
        server = Server(database.url, workdir, workers=args.workers, sync_db=True).start()
        meter = Meter()
        meter.attach(server)
        ctx = multiprocessing.get_context('fork')
        events, control = ctx.Queue(), ctx.Event()
        per = -(-args.hosts // args.processes)
        procs = [ctx.Process(target=run_hosts, args=(
            first, min(per, args.hosts - first), server.url, workdir, args.interval,
            args.jitter, args.threads, events, control))
            for first in range(0, args.hosts, per)]
        seen = []
        try:
            for p in procs:
                p.start()
            for _ in procs:
                assert events.get(timeout=600)[0] == 'ready'
            fleet_pids = [p.pid for p in procs]

            def fleet_cpu():
                return sum(cpu_seconds(pid) for pid in fleet_pids)

            # -- storm
            cpu0, db0, fleet0 = (cpu_seconds(server.proc.pid),
                                 cpu_seconds(None, database.name), fleet_cpu())
            started, t0 = time.time(), time.monotonic()
            control.set()
            done = wait_synced(args.hosts, events, started, seen, args.timeout)
            assert done, 'the fleet did not sync within %ss' % args.timeout
            storm_seconds = done - started
            time.sleep(1.5)
            requests_storm, errors_storm = meter.totals()
            listing = requests.get(server.url + '/resource_providers', timeout=120,
                                   headers=agent_env.HEADERS).json()['resource_providers']
            result['storm'] = {
                'seconds_until_all_synced': round(storm_seconds, 1),
                'providers_in_placement': len(listing),
                'requests': requests_storm, 'server_5xx': errors_storm,
                'peak_requests_per_s_10s': meter.peak(t0, 10),
                'server_cpu_s': round(cpu_seconds(server.proc.pid) - cpu0, 1),
                'postgresql_cpu_s': round(cpu_seconds(None, database.name) - db0, 1),
                'fleet_cpu_s': round(fleet_cpu() - fleet0, 1),
            }
            print('storm:', result['storm'], flush=True)

            # -- steady state
            drain(events, seen)
            n0, e0 = meter.totals()
            cpu0, db0, t1 = (cpu_seconds(server.proc.pid), cpu_seconds(None, database.name),
                             time.monotonic())
            time.sleep(args.steady)
            n1, e1 = meter.totals()
            elapsed = time.monotonic() - t1
            result['steady'] = {
                'seconds': round(elapsed),
                'requests': n1 - n0, 'server_5xx': e1 - e0,
                'requests_per_host_per_hour': round((n1 - n0) / args.hosts * 3600 / elapsed, 1),
                'requests_per_s': round((n1 - n0) / elapsed, 2),
                'server_cpu_percent': round(100 * (cpu_seconds(server.proc.pid) - cpu0)
                                            / elapsed, 1),
                'postgresql_cpu_percent': round(100 * (cpu_seconds(None, database.name) - db0)
                                                / elapsed, 1),
            }
            print('steady:', result['steady'], flush=True)

            # -- outage: meanwhile an instance goes away on every host, so
            # that every agent has something to write when placement is back
            drain(events, seen)
            server.stop()
            gone = time.monotonic()
            for i in range(args.hosts):
                agent_env.write_host(os.path.join(workdir, host_name(i), 'host.yaml'),
                                     describe(i, INSTANCES_PER_HOST - 1))
            time.sleep(max(0.0, args.outage - (time.monotonic() - gone)))
            n0, e0 = meter.totals()
            server = Server(database.url, workdir, workers=args.workers,
                            port=server.port).start()
            back, t2 = time.time(), time.monotonic()
            meter.attach(server)
            cpu0 = cpu_seconds(server.proc.pid)
            done = wait_synced(args.hosts, events, back, seen, args.timeout)
            assert done, 'the fleet did not resync within %ss' % args.timeout
            time.sleep(1.5)
            n1, e1 = meter.totals()
            failed = sum(1 for at, _, ok, _ in seen if not ok and at < back)
            result['recovery'] = {
                'outage_seconds': args.outage,
                'cycles_failed_during_outage': failed,
                'seconds_until_all_synced': round(done - back, 1),
                'requests': n1 - n0, 'server_5xx': e1 - e0,
                'peak_requests_per_s_1s': meter.peak(t2, 1),
                'peak_requests_per_s_10s': meter.peak(t2, 10),
                'steady_requests_per_s': result['steady']['requests_per_s'],
                'server_cpu_s': round(cpu_seconds(server.proc.pid) - cpu0, 1),
                'requests_per_s_by_second': meter.rates(t2, done - back + 5),
            }
            print('recovery:', result['recovery'], flush=True)
        finally:
            open(os.path.join(workdir, 'STOP'), 'w').close()
            control.set()
            for p in procs:
                p.join(120)
                if p.is_alive():
                    p.kill()
            meter.stop()
            server.stop()
    failed = collections.Counter(ok for _, _, ok, _ in seen)
    result['cycles'] = {'ok': failed[True], 'failed': failed[False]}
    nova_per_host = (3600 / NOVA_PERIODIC + 3600 / NOVA_ASSOCIATION_REFRESH
                     * NOVA_GETS_PER_REFRESH * PROVIDERS_PER_HOST)
    result['nova_steady'] = {
        'requests_per_host_per_hour': nova_per_host,
        'requests_per_s': round(nova_per_host * args.hosts / 3600, 1)}
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, default=1000)
    parser.add_argument('--processes', type=int, default=4,
                        help='processes the hosts are spread over')
    parser.add_argument('--threads', type=int, default=48,
                        help='cycles one process runs at once')
    parser.add_argument('--workers', type=int, default=4, help='placement-server workers')
    parser.add_argument('--interval', type=int, default=60, help='[tracker] interval')
    parser.add_argument('--jitter', type=int, default=10, help='[tracker] jitter')
    parser.add_argument('--steady', type=int, default=300,
                        help='seconds of steady state measured')
    parser.add_argument('--outage', type=int, default=60)
    parser.add_argument('--timeout', type=int, default=900,
                        help='longest wait for the fleet to sync')
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as workdir:
        result = run(args, workdir)
    result['wall_seconds'] = round(time.time() - started)
    harness.save(os.path.join(TOP, 'bench', 'results', 'fleet.json'), result)
    print('nova-compute for the same fleet (computed):', result['nova_steady'])
    print('cycles:', result['cycles'])


if __name__ == '__main__':
    main()
