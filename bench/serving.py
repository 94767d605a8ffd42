"""placement-server's serving designs, side by side (issue 40).

Each candidate is placement-server as docs/install.md starts it (2
workers), from this tree or from another commit's source, with its own
serving options. Rounds run the candidates in ABBA order (A B ... B A),
each on a fresh database of the engine:

  creation   placeload creating N providers with 200 requests in flight:
             wall seconds and the server's CPU seconds
  ab -c 10   the gate's flat candidates query, ``ab -n R -c 10``: req/s
             and the server's CPU milliseconds per request
  latency    the same query one at a time (``ab -c 1``): mean ms
  stalled    200 clients stalled mid-request (100 half a head, 100 a head
             and half a body), then 20 ordinary requests on new
             connections: the slowest, and how many got no answer in 5 s

The server's CPU is the master's and its workers' user+system time
(psutil), so a shared machine's load weighs on wall times, not on it.

    PLACEMENT_UPSTREAM_VENV=... .venv/bin/python bench/serving.py --engine mysql \\
        --candidate 'read-whole-t1=:--threads 1' --candidate 'stock-t32=main:' ...

A candidate is LABEL=COMMIT:ARGS: placement-server from COMMIT's source
(empty: this tree) with ARGS. Two other servers load this tree's
``placement_server.wsgi_app:application`` instead:

  LABEL=uwsgi-kolla:N [KEY=VALUE ...]
                          uWSGI (the test extras') with the ini Kolla-Ansible
                          renders for placement-api, N processes
                          (tests/integration/uwsgi.py), plus any KEY=VALUE
                          lines (e.g. listen=1024 harakiri=5)
  LABEL=granian:ARGS      granian (GRANIAN_PIN, in a side virtualenv this
                          bench builds, .venv-granian) with 2 workers and ARGS

Writes bench/results/serving-<engine>[-<name>].json (with the load
average before and after each run) and prints a markdown table.
"""
import argparse
import glob
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time

import psutil
import requests

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.allocation_candidates import PLACELOAD_IN_FLIGHT  # noqa: E402
from bench.allocation_candidates import QUERIES  # noqa: E402
from tests import databases  # noqa: E402
from tests import upstream  # noqa: E402
from tests.integration import servers  # noqa: E402
from tests.integration import uwsgi  # noqa: E402

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}
STALLED = 200
GRANIAN_PIN = 'granian==2.8.7'
GRANIAN_VENV = os.path.join(HERE, '.venv-granian')
SERVERS = ('uwsgi-kolla', 'granian')    # COMMIT names that are other servers


def source_of(commit, workdir):
    """A directory holding placement_server as ``commit`` has it."""
    if not commit:
        return None
    target = os.path.join(workdir, 'src-%s' % commit)
    if not os.path.isdir(target):
        os.makedirs(target)
        archive = subprocess.run(['git', '-C', HERE, 'archive', commit, 'placement_server'],
                                 capture_output=True, check=True).stdout
        subprocess.run(['tar', '-x', '-C', target], input=archive, check=True)
    return target


class Candidate:
    def __init__(self, spec, workdir):
        self.label, _, rest = spec.partition('=')
        commit, _, args = rest.partition(':')
        self.commit = commit
        self.server = commit if commit in SERVERS else 'placement-server'
        self.source = source_of(commit, workdir) if self.server == 'placement-server' else None
        self.args = shlex.split(args)


class KollaUwsgi(uwsgi.UwsgiServer):
    """Kolla's ini with ``extra`` (key, value) lines added."""
    extra: list[tuple[str, ...]] = []

    def ini(self):
        return super().ini() + self.extra


class Running:
    """A candidate up: its process (the master), URL and port; ``stop``."""

    def __init__(self, proc, base, port, stop):
        self.proc, self.base, self.port, self.stop = proc, base, port, stop


def start(candidate, db_url, workdir):
    where = os.path.join(workdir, '%s-%d' % (candidate.label, time.monotonic_ns()))
    os.makedirs(where)
    if candidate.server == 'uwsgi-kolla':
        processes, *extra = candidate.args
        server = KollaUwsgi(db_url, where, processes=int(processes))
        server.extra = [tuple(line.split('=', 1)) for line in extra]
        server.start()
        return Running(server.proc, server.url, server.port, server.stop)
    if candidate.server == 'granian':
        return start_granian(candidate, db_url, where)
    return start_placement_server(candidate, db_url, workdir)


def granian_site():
    """The site-packages of a side virtualenv holding only granian."""
    venv = upstream.ensure_venv(GRANIAN_VENV, (GRANIAN_PIN,), 'granian-pins.txt')
    return glob.glob(os.path.join(venv, 'lib', 'python3*', 'site-packages'))[0]


def start_granian(candidate, db_url, where):
    """granian serving this tree's application, with our virtualenv's
    Python and packages (granian's own site-packages appended to its path),
    configured as uWSGI is: placement.conf in OS_PLACEMENT_CONFIG_DIR."""
    port = upstream.free_port()
    conf = os.path.join(where, 'placement.conf')
    upstream.write_config(conf, db_url)
    env = upstream.clean_env(HOME=where, OS_PLACEMENT_CONFIG_DIR=where, PYTHONPATH=HERE)
    subprocess.run([servers.PLACEMENT_MANAGE, '--config-file', conf, 'db', 'sync'],
                   check=True, capture_output=True, timeout=300, env=env)
    cmd = [sys.executable, '-c', 'import sys; sys.path.append(%r); '
           'from granian.cli import entrypoint; entrypoint()' % granian_site(),
           '--interface', 'wsgi', '--host', '127.0.0.1', '--port', str(port),
           '--workers', '2', *candidate.args, 'placement_server.wsgi_app:application']
    log = open(os.path.join(where, 'granian.log'), 'ab')
    proc = subprocess.Popen(cmd, cwd=where, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = 'http://127.0.0.1:%d' % port
    upstream.wait_until_up(base, proc, log.name, 120)
    return Running(proc, base, port, lambda: stop_process(proc))


def stop_process(proc):
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_placement_server(candidate, db_url, workdir):
    port = upstream.free_port()
    cmd = [sys.executable, '-c', 'from placement_server.cmd.server import main; main()',
           '--host', '127.0.0.1', '--port', str(port), '--workers', '2',
           '--database-connection', db_url, '--auth-strategy', 'noauth2', '--sync-db',
           *candidate.args]
    env = upstream.clean_env(PATH=os.environ.get('PATH', ''), HOME=workdir,
                             OS_API__METRICS_PORT=str(upstream.free_port()))
    if candidate.source:
        env['PYTHONPATH'] = candidate.source
    log = open(os.path.join(workdir, 'server-%s.log' % candidate.label), 'ab')
    proc = subprocess.Popen(cmd, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = 'http://127.0.0.1:%d' % port
    upstream.wait_until_up(base, proc, log.name, 120)
    return Running(proc, base, port, lambda: stop_process(proc))


def server_cpu(proc):
    master = psutil.Process(proc.pid)
    total = 0.0
    for p in [master] + master.children(recursive=True):
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def creation(proc, base, providers):
    placeload = upstream.venv_bin('placeload')
    subprocess.run([placeload, base, '10', '10'], env=upstream.clean_env(),
                   capture_output=True, check=True)
    cpu, started = server_cpu(proc), time.monotonic()
    result = subprocess.run([placeload, base, str(providers), str(PLACELOAD_IN_FLIGHT)],
                            env=upstream.clean_env(), capture_output=True, text=True,
                            timeout=600)
    wall = time.monotonic() - started
    failures = sum(result.stdout.count(c) for c in 'RIATC')
    return {'wall_s': round(wall, 2), 'cpu_s': round(server_cpu(proc) - cpu, 2),
            'failed': failures + result.returncode}


def ab(proc, base, path, count, concurrency):
    args = ['ab', '-q', '-s', '30', '-n', str(count), '-c', str(concurrency)]
    for k, v in HEADERS.items():
        args += ['-H', '%s: %s' % (k, v)]
    cpu = server_cpu(proc)
    out = subprocess.run(args + [base + path], capture_output=True, text=True,
                         timeout=600).stdout
    cpu = server_cpu(proc) - cpu

    def figure(name):
        for line in out.splitlines():
            if line.startswith(name):
                return float(line.split(':', 1)[1].split()[0])
        raise RuntimeError('ab: no %r in %s' % (name, out[-500:]))
    bad = figure('Failed requests') + (figure('Non-2xx responses')
                                       if 'Non-2xx' in out else 0)
    return {'req_s': figure('Requests per second'),
            'mean_ms': figure('Time per request'),
            'cpu_ms_per_req': round(cpu * 1000 / count, 2), 'failed': bad}


def stalled(port, base):
    socks = []
    try:
        for i in range(STALLED):
            try:
                s = socket.create_connection(('127.0.0.1', port), timeout=5)
            except OSError:
                break     # the listen queue is full: nobody new gets in either
            socks.append(s)
            if i % 2:
                s.sendall(b'GET /resource_providers HTTP/1.1\r\nHost: x\r\nX-Au')
            else:
                s.sendall(b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
                          b'Content-Type: application/json\r\nContent-Length: 40\r\n'
                          b'X-Auth-Token: admin\r\n\r\n{"name": "st')
        time.sleep(1)
        slowest, unanswered = 0.0, 0
        for _ in range(20):
            started = time.monotonic()
            try:
                requests.get(base + '/', headers=dict(HEADERS, Connection='close'), timeout=5)
            except requests.RequestException:
                unanswered += 1
                if unanswered >= 3:
                    break
            slowest = max(slowest, time.monotonic() - started)
        return {'slowest_ms': round(slowest * 1000, 1), 'unanswered': unanswered,
                'stallers_connected': len(socks)}
    finally:
        for s in socks:
            s.close()


def run_one(candidate, engine, providers, count, workdir):
    test_db = databases.TestDatabase(engine, workdir)
    server = None
    try:
        server = start(candidate, test_db.url, workdir)
        proc, base, port = server.proc, server.base, server.port
        result = {'load_before': os.getloadavg()[0],
                  'creation': creation(proc, base, providers)}
        path = '/allocation_candidates?' + QUERIES['flat']
        ab(proc, base, path, 50, 10)     # warm
        result['ab_c10'] = ab(proc, base, path, count, 10)
        result['latency'] = ab(proc, base, path, max(count // 5, 50), 1)
        result['stalled'] = stalled(port, base)
        result['load_after'] = os.getloadavg()[0]
        return result
    finally:
        if server is not None:
            server.stop()
        test_db.drop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--engine', default='mysql')
    parser.add_argument('--providers', type=int, default=1000)
    parser.add_argument('--requests', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=1, help='ABBA pairs')
    parser.add_argument('--candidate', action='append', required=True)
    parser.add_argument('--name', default='',
                        help='results in bench/results/serving-<engine>-<name>.json')
    args = parser.parse_args(argv)
    upstream.ensure_venv()
    workdir = tempfile.mkdtemp(prefix='serving-bench-')
    candidates = [Candidate(spec, workdir) for spec in args.candidate]
    results = {c.label: [] for c in candidates}
    for _ in range(args.rounds):
        for c in candidates + candidates[::-1]:
            r = run_one(c, args.engine, args.providers, args.requests, workdir)
            print(c.label, json.dumps(r), flush=True)
            results[c.label].append(r)
    os.makedirs(os.path.join(HERE, 'bench', 'results'), exist_ok=True)
    name = 'serving-%s%s.json' % (args.engine, '-' + args.name if args.name else '')
    with open(os.path.join(HERE, 'bench', 'results', name), 'w') as f:
        json.dump({'candidates': {c.label: {'commit': c.commit or 'HEAD', 'args': c.args}
                                  for c in candidates}, 'results': results}, f, indent=1)
    print(table(candidates, results))


def _mean(values):
    return sum(values) / len(values)


def table(candidates, results):
    rows = ['| candidate | ab -c 10 req/s | CPU-ms/req | latency ms (c 1) | '
            'creation s (CPU s) | stalled: slowest ms / unanswered | load average |',
            '|---|---|---|---|---|---|---|']
    for c in candidates:
        rs = results[c.label]
        rows.append('| %s | %.0f | %.2f | %.1f | %.1f (%.1f) | %s | %s |' % (
            c.label, _mean([r['ab_c10']['req_s'] for r in rs]),
            _mean([r['ab_c10']['cpu_ms_per_req'] for r in rs]),
            _mean([r['latency']['mean_ms'] for r in rs]),
            _mean([r['creation']['wall_s'] for r in rs]),
            _mean([r['creation']['cpu_s'] for r in rs]),
            ' '.join('%s/%s' % (r['stalled']['slowest_ms'], r['stalled']['unanswered'])
                     + ('' if r['stalled']['stallers_connected'] == STALLED else
                        ' (%d stallers in)' % r['stalled']['stallers_connected'])
                     for r in rs),
            ' '.join('%.0f-%.0f' % (r['load_before'], r['load_after']) for r in rs)))
    return '\n'.join(rows)


if __name__ == '__main__':
    main()
