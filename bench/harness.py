"""Side-by-side benchmark harness: our placement server and upstream's.

Both run as real gunicorn processes with the same command line (sync
workers, same count; tests/upstream.py builds it), under the worker
placement-server runs (``WORKER``: gunicorn's threaded worker, malformed
HTTP answered in JSON, with ``THREADS`` threads), each on its own fresh
database of the same engine (SQLite file, PostgreSQL or MariaDB database), with
the same options. Both are up at once and a workload interleaves them
call by call (``side_by_side``), so the noise of a shared machine weighs
on both alike; the report functions turn the samples into latency
distributions and ratios (upstream / ours for latency, ours / upstream for
throughput: above 1 means ours is better).
"""
import argparse
import concurrent.futures
import contextlib
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import psutil
import requests
import sqlalchemy as sa

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TOP not in sys.path:
    sys.path.insert(0, TOP)

from bench import floor_app  # noqa: E402
from placement_server.cmd import server as server_cmd  # noqa: E402
from placement_server.db import api as db_api  # noqa: E402
from placement_server.db import migration  # noqa: E402
from tests import upstream  # noqa: E402

ADMIN_URLS = {
    'postgresql': os.environ.get('PLACEMENT_BENCH_POSTGRESQL',
                                 'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres'),
    'mysql': os.environ.get('PLACEMENT_BENCH_MYSQL', 'mysql+pymysql://root@127.0.0.1:3306/mysql'),
}
ENGINES = ('sqlite', 'postgresql', 'mysql')


def serve_from_this_tree(workdir, package):
    """Link this tree's ``package`` into a gunicorn's working directory.
    gunicorn puts that directory first on sys.path: linked there, this
    tree's code is what serves, whatever the virtualenv's editable install
    points at (a bench run from a snapshot of a commit measures that commit
    while the work tree moves on)."""
    os.makedirs(workdir, exist_ok=True)
    link = os.path.join(workdir, package)
    if not os.path.lexists(link):
        os.symlink(os.path.join(TOP, package), link)


# Every server of a benchmark runs under the worker placement-server uses.
WORKER = 'placement_server.cmd.gunicorn_worker.Worker'
THREADS = server_cmd.DEFAULT_THREADS


class UnderOurWorker:
    """A server of a benchmark: served under ``WORKER``."""
    worker_class = WORKER
    threads = THREADS

    def start(self):
        serve_from_this_tree(self.workdir, 'placement_server')
        return super().start()


class OurPlacement(UnderOurWorker, upstream.PlacementServer):
    """Our placement server, from this tree's virtualenv."""
    name = 'ours'
    app = 'placement_server.wsgi_app:application'

    def gunicorn(self):
        return os.path.join(os.path.dirname(sys.executable), 'gunicorn')

    def sync_db(self):
        db = db_api.Database(self.db_url)
        try:
            migration.sync(db)
        finally:
            db.dispose()


class UpstreamPlacement(UnderOurWorker, upstream.UpstreamPlacement):
    """Upstream's placement, from its side virtualenv."""


class Floor(UnderOurWorker, upstream.PlacementServer):
    """A server that answers and does nothing (bench/floor_app.py), under
    the same worker: what the client and the serving process cost."""
    name = 'floor'
    app = 'bench.floor_app:application'

    def gunicorn(self):
        return os.path.join(os.path.dirname(sys.executable), 'gunicorn')

    def sync_db(self):
        pass   # no database

    def start(self):
        serve_from_this_tree(self.workdir, 'bench')
        return super().start()


SERVERS = {'ours': OurPlacement, 'upstream': UpstreamPlacement, 'floor': Floor}


class ScratchDatabase:
    """An empty database on ``engine``, dropped on exit."""

    def __init__(self, engine, workdir, label):
        self.engine = engine
        name = 'bench_%s_%s' % (label, uuid.uuid4().hex[:8])
        if engine == 'sqlite':
            self.url = 'sqlite:///%s' % os.path.join(workdir, name + '.sqlite')
            self._admin = None
        else:
            admin = sa.engine.make_url(ADMIN_URLS[engine])
            self._admin = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
            with self._admin.connect() as conn:
                conn.exec_driver_sql('CREATE DATABASE %s' % name)
            self.url = admin.set(database=name).render_as_string(hide_password=False)
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._admin is not None:
            with self._admin.connect() as conn:
                conn.exec_driver_sql('DROP DATABASE IF EXISTS %s%s' % (
                    self.name, ' WITH (FORCE)' if self.engine == 'postgresql' else ''))
            self._admin.dispose()


class Client:
    """HTTP to one server as the admin, timing every call."""

    def __init__(self, server, version='1.39'):
        self.server = server
        self.base = server.url
        self.headers = {'X-Auth-Token': 'admin', 'Accept': 'application/json',
                        'OpenStack-API-Version': 'placement %s' % version}
        self._local = threading.local()

    @property
    def session(self):
        # requests.Session is not thread safe: one per thread.
        if not hasattr(self._local, 'session'):
            self._local.session = requests.Session()
        return self._local.session

    def call(self, method, path, body=None, version=None):
        """(seconds, response) for one request."""
        headers = dict(self.headers)
        if version:
            headers['OpenStack-API-Version'] = 'placement %s' % version
        start = time.perf_counter()
        resp = self.session.request(method, self.base + path, json=body,
                                    headers=headers, timeout=300)
        return time.perf_counter() - start, resp

    def record(self, path, answer):
        """A floor's (``Floor``) answer to GET ``path`` from now on."""
        resp = self.session.put(self.base + path, data=answer,
                                headers={floor_app.RECORD_HEADER: '1'}, timeout=60)
        resp.raise_for_status()

    def curl(self, path, version=None):
        """(seconds, HTTP status) of one GET timed by curl itself, as the
        upstream gate times its single requests (``time curl``); a client
        in C keeps the client's own cost out of the server's latency."""
        out = subprocess.run(
            ['curl', '-s', '-o', '/dev/null', '-w', '%{http_code} %{time_total}',
             *self._header_args(version), self.base + path],
            capture_output=True, text=True, check=True).stdout.split()
        return float(out[1]), int(out[0])

    def apache_bench(self, path, requests, concurrency, version=None):
        """``ab -n requests -c concurrency`` on one GET, as the gate loads
        the server. Returns (per-request milliseconds, wall seconds, count
        of failed or non-2xx responses)."""
        concurrency = min(concurrency, requests)   # ab refuses more
        with tempfile.NamedTemporaryFile(suffix='.tsv') as tsv:
            proc = subprocess.run(
                ['ab', '-q', '-n', str(requests), '-c', str(concurrency), '-g', tsv.name,
                 *self._header_args(version), self.base + path],
                capture_output=True, text=True)
            if proc.returncode:
                raise RuntimeError('ab failed: %s' % (proc.stderr or proc.stdout)[-500:])
            with open(tsv.name) as f:
                ms = [float(row['ttime']) for row in csv.DictReader(f, delimiter='\t')]
        report = proc.stdout
        wall = float(re.search(r'Time taken for tests:\s+([\d.]+)', report).group(1))
        bad = sum(int(m) for m in re.findall(
            r'(?:Failed requests|Non-2xx responses):\s+(\d+)', report))
        return ms, wall, bad

    def _header_args(self, version):
        """-H arguments (curl and ab spell them alike)."""
        headers = dict(self.headers)
        if version:
            headers['OpenStack-API-Version'] = 'placement %s' % version
        return [arg for k, v in headers.items() for arg in ('-H', '%s: %s' % (k, v))]

    def rss_per_worker(self):
        """Resident memory (MiB) of each gunicorn worker."""
        master = psutil.Process(self.server.proc.pid)
        return [round(child.memory_info().rss / 2**20, 1) for child in master.children()]


class Samples:
    """Latencies of one kind of call, and the statuses that came back."""

    def __init__(self):
        self.seconds = []
        self.statuses = {}
        self._lock = threading.Lock()

    def add(self, seconds, resp):
        self.add_status(seconds, resp.status_code)
        return resp

    def add_status(self, seconds, status):
        with self._lock:   # concurrent clients add to one Samples
            self.seconds.append(seconds)
            self.statuses[status] = self.statuses.get(status, 0) + 1

    def ok(self):
        return bool(self.seconds) and all(200 <= s < 300 for s in self.statuses)

    def summary(self):
        if not self.seconds:
            return {'n': 0, 'statuses': self.statuses}
        ms = sorted(s * 1000 for s in self.seconds)
        return {'n': len(ms), 'statuses': self.statuses,
                'p50': round(statistics.median(ms), 2),
                'p90': round(_percentile(ms, 90), 2),
                'p99': round(_percentile(ms, 99), 2),
                'mean': round(statistics.fmean(ms), 2),
                'max': round(ms[-1], 2)}


def _percentile(sorted_values, pct):
    index = min(len(sorted_values) - 1, int(round(pct / 100.0 * (len(sorted_values) - 1))))
    return sorted_values[index]


def concurrently(fn, count, concurrency):
    """Run ``fn()`` ``count`` times on ``concurrency`` threads.

    Returns (results, wall seconds).
    """
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda _: fn(), range(count)))
    return results, time.perf_counter() - start


def side_by_side_parser(doc, workers=2, servers=None):
    """An argument parser with the options every side-by-side bench takes:
    --engine (repeatable), --workers (gunicorn workers per server) and
    --server (repeatable; every one of ``servers`` when not given)."""
    parser = argparse.ArgumentParser(description=doc.split('\n')[0])
    parser.add_argument('--engine', action='append', choices=ENGINES)
    parser.add_argument('--workers', type=int, default=workers)
    parser.add_argument('--server', action='append', choices=sorted(servers or SERVERS))
    return parser


def side_by_side(engine, workload, workers, options=None, servers=('ours', 'upstream')):
    """Run ``workload`` against the servers, all up at once.

    Each server gets its own fresh database on ``engine``.
    ``workload(clients)`` gets {name: Client} and returns {name: result};
    it interleaves the servers call by call, so that whatever else the
    machine is doing weighs on both alike. Returns the results with each
    server's RSS per worker added.
    """
    workdir = tempfile.mkdtemp(prefix='bench-')
    with contextlib.ExitStack() as stack:
        clients = {}
        for name in servers:
            db = stack.enter_context(ScratchDatabase(engine, workdir, name))
            server = SERVERS[name](db.url, os.path.join(workdir, name),
                                   workers=workers, options=options)
            stack.enter_context(server)
            clients[name] = Client(server)
        try:
            results = workload(clients)
        except Exception as e:  # noqa: BLE001 - a missing endpoint is a result
            results = {name: {'error': '%s: %s' % (type(e).__name__, e)} for name in clients}
        for name, client in clients.items():
            results.setdefault(name, {})['rss_mib_per_worker'] = client.rss_per_worker()
    return results


def ratio(theirs, ours):
    if not theirs or not ours:
        return None
    return round(theirs / ours, 2)


def latency_table(results, calls, stat='p50'):
    """Markdown rows: call, our and upstream latency, upstream/ours; with
    a floor in the run, its latency and the best ratio it leaves possible
    (upstream/floor)."""
    floor = 'floor' in results
    rows = ['| call | ours %s ms | upstream %s ms | ours p99 | upstream p99 | '
            'ratio %s (upstream/ours) |%s' % (
                stat, stat, stat, ' floor %s ms | best possible (upstream/floor) |' % stat
                if floor else ''),
            '|---|---|---|---|---|---|' + ('---|---|' if floor else '')]
    for call in calls:
        ours, theirs, least = (_cell(results.get(name, {}).get(call, {}), stat)
                               for name in ('ours', 'upstream', 'floor'))
        rows.append('| %s | %s | %s | %s | %s | %s |' % (
            call, ours, theirs, _cell(results.get('ours', {}).get(call, {}), 'p99'),
            _cell(results.get('upstream', {}).get(call, {}), 'p99'), _ratio_of(theirs, ours))
            + (' %s | %s |' % (least, _ratio_of(theirs, least)) if floor else ''))
    return '\n'.join(rows)


def _ratio_of(theirs, ours):
    return ratio(theirs, ours) if isinstance(theirs, float) and isinstance(ours, float) else 'n/a'


def _cell(summary, stat):
    statuses = summary.get('statuses') or {}
    if any(not 200 <= int(code) < 300 for code in statuses):
        return 'failed %s' % statuses
    return summary.get(stat, 'n/a')


def save(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        json.dump(data, f, indent=1, sort_keys=True)


def publish(result_name, results, calls, heading):
    """Save ``results`` as bench/results/<result_name>.json and print the
    latency table and each server's memory under ``heading``."""
    save(os.path.join(TOP, 'bench', 'results', result_name + '.json'), results)
    print('\n### %s\n' % heading)
    print(latency_table(results, calls))
    for name, result in sorted(results.items()):
        print('\n%s: RSS per worker %s MiB%s' % (
            name, result.get('rss_mib_per_worker'),
            ('; ERROR ' + result['error']) if 'error' in result else ''))
