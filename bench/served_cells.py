"""One tree's placement-server, timed in server CPU per request and
throughput (issue 40; bench/regression.py --served).

The tree's own ``placement-server`` (its cmd/server.py, run with the tree
first on sys.path: the commit's worker, threads and middleware) on its own
database with ``--workers`` workers, filled over HTTP as bench/cpu_cells.py
fills it in process, the same gate cells sent by ``--concurrency`` client
threads (``ab -c 10``-style). Per batch: the wall time (throughput) and
the CPU the server's processes spent (master and workers, from /proc).
Commits whose server cannot start (879492d to a007cbe) can only be
measured in process.
"""
import concurrent.futures
import json
import os
import sys
import threading
import time

import psutil
import requests

from bench import cpu_cells
from tests.integration import servers


class _TreeServer(servers.Server):
    """placement-server of ``tree``, under this virtualenv's Python."""

    def __init__(self, tree, python, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tree = tree
        self.python = python
        self.env = dict(self.env, PYTHONPATH=tree)

    def command(self):
        launch = ('import sys; sys.path.insert(0, %r); '
                  'from placement_server.cmd import server; server.main()' % self.tree)
        return [self.python, '-c', launch] + super().command()[1:]


class ServedSide:
    """A running server of one tree, driven over HTTP."""

    def __init__(self, label, tree, url, workdir, workers, concurrency, python=sys.executable):
        self.label = label
        self.concurrency = concurrency
        self.server = _TreeServer(tree, python, url, os.path.join(workdir, label),
                                  workers=workers, sync_db=True).start()
        self.local = threading.local()
        self.pool = concurrent.futures.ThreadPoolExecutor(concurrency)

    def _session(self):
        session = getattr(self.local, 'session', None)
        if session is None:
            session = self.local.session = requests.Session()
            session.headers.update({'X-Auth-Token': 'admin', 'Accept': 'application/json',
                                    'OpenStack-API-Version': cpu_cells.VERSION})
        return session

    def send(self, method, path, body=None, query=''):
        url = self.server.url + path + ('?' + query if query else '')
        kwargs = dict(data=None if body is None else json.dumps(body), headers={
            'Content-Type': 'application/json'} if body is not None else None)
        try:
            resp = self._session().request(method, url, **kwargs)
        except requests.ConnectionError:
            # A kept-alive connection the server closed, at its keep-alive
            # expiry, as the request went: it was not read (trees before
            # b53fca7 close one even when its next request has come), so
            # sent again once on a new connection.
            resp = self._session().request(method, url, **kwargs)
        if resp.status_code >= 400:
            raise SystemExit('%s: %s %s answered %s: %s' % (
                self.label, method, path, resp.status_code, resp.text[:300]))
        return resp

    def must(self, method, path, body=None, query='', status=None):
        resp = self.send(method, path, body, query)
        return resp.json() if resp.content else None

    def _cpu(self):
        """CPU seconds of the server's master and workers so far."""
        master = psutil.Process(self.server.proc.pid)
        total = 0.0
        for proc in [master] + master.children(recursive=True):
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def ready(self, flat, trees):
        """Fill the database; then ``run`` may be called."""
        self.cells = cpu_cells.Cells(self, cpu_cells.fill(self, flat, trees))
        for cell in cpu_cells.CELLS:    # warm every worker a little
            self.run(cell, 2 * self.concurrency)

    def run(self, cell, n):
        """{'cpu', 'wall'} of ``n`` requests of ``cell`` sent ``concurrency`` at a time."""
        specs = [self.cells.spec(cell) for _ in range(n)]
        cpu, started = self._cpu(), time.perf_counter()
        list(self.pool.map(lambda spec: self.send(*spec[0]), specs))
        took = {'wall': time.perf_counter() - started, 'cpu': self._cpu() - cpu}
        for _, undo in specs:
            if undo is not None:
                self.send(*undo)
        return took

    def close(self):
        self.pool.shutdown()
        self.server.stop()

