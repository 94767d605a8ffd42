"""One tree's application in process, timed in CPU per request (issue 40).

Not run by hand: bench/regression.py starts one of these per tree and per
engine and drives them, interleaved, over stdin/stdout (one JSON object a
line). It imports ``placement_server`` from ``--tree`` (put first on
sys.path, ahead of the virtualenv's editable install), builds the
application as a deployment does (``deploy.load_conf``, oslo.log to a file,
``deploy.init_application``: the middleware stack, metrics written to
PROMETHEUS_MULTIPROC_DIR as under placement-server), fills the database
through the API (placeload's flat providers and the gate's nested trees),
and then answers ``{"cell": NAME, "n": N}`` with the process CPU time
(time.process_time) and wall time the N requests of that cell took,
measured around the application call alone. Every request is a WSGI
environ as gunicorn builds it.

Deliberately uses only what every tree since d69859b has
(deploy.load_conf / init_application, API 1.39), so old commits that cannot
serve are measured too.
"""
import argparse
import io
import json
import logging
import os
import shutil
import sys
import tempfile
import time
import uuid

if __package__:    # imported (bench/regression.py reads CELLS)
    from bench import gate_workload
else:
    # Run as a script: its directory, this checkout's bench/, is first on
    # sys.path, ahead of the compared tree (PYTHONPATH, and first in main),
    # whose own bench/ may have no gate_workload.
    import gate_workload

AGGREGATES, TRAITS, INVENTORY = (gate_workload.AGGREGATES, gate_workload.TRAITS,
                                 gate_workload.INVENTORY)
TREE, FLAT_QUERY, NESTED_QUERY = (gate_workload.TREE, gate_workload.FLAT_QUERY,
                                  gate_workload.NESTED_QUERY)

VERSION = 'placement 1.39'
# The gate cells, in the order they are reported.
CELLS = ('GET /', 'flat candidates', 'nested candidates', 'list providers',
         'PUT /allocations', 'POST /resource_providers')


def environ(method, path, body=None, query=''):
    """A WSGI environ as gunicorn's gthread worker builds it."""
    raw = json.dumps(body).encode() if body is not None else b''
    env = {
        'REQUEST_METHOD': method, 'SCRIPT_NAME': '', 'PATH_INFO': path,
        'QUERY_STRING': query, 'RAW_URI': path + ('?' + query if query else ''),
        'SERVER_NAME': '127.0.0.1', 'SERVER_PORT': '8778', 'SERVER_PROTOCOL': 'HTTP/1.1',
        'REMOTE_ADDR': '127.0.0.1', 'REMOTE_PORT': '40000',
        'wsgi.version': (1, 0), 'wsgi.url_scheme': 'http', 'wsgi.input': io.BytesIO(raw),
        'wsgi.errors': sys.stderr, 'wsgi.multithread': True, 'wsgi.multiprocess': True,
        'wsgi.run_once': False,
        'HTTP_HOST': '127.0.0.1:8778', 'HTTP_USER_AGENT': 'placement-bench',
        'HTTP_ACCEPT': 'application/json', 'HTTP_CONNECTION': 'keep-alive',
        'HTTP_X_AUTH_TOKEN': 'admin', 'HTTP_OPENSTACK_API_VERSION': VERSION,
    }
    if raw:
        env['CONTENT_TYPE'] = 'application/json'
        env['CONTENT_LENGTH'] = str(len(raw))
    return env


class App:
    """The tree's deployed application and a way to call it."""

    def __init__(self, url, workdir):
        # set before prometheus_client is imported: it reads it then
        os.environ['PROMETHEUS_MULTIPROC_DIR'] = os.path.join(workdir, 'metrics')
        os.makedirs(os.environ['PROMETHEUS_MULTIPROC_DIR'], exist_ok=True)
        from oslo_log import log as oslo_log

        from placement_server import deploy
        conf = deploy.load_conf([], config_files=[])
        conf.set_override('connection', url, group='placement_database')
        conf.set_override('sync_on_startup', True, group='placement_database')
        conf.set_override('auth_strategy', 'noauth2', group='api')
        conf.set_override('log_file', os.path.join(workdir, 'placement.log'))
        oslo_log.setup(conf, 'placement')
        self.app = deploy.init_application(conf)
        self.status = None

    def _start(self, status, headers, exc_info=None):
        self.status = int(status.split(' ', 1)[0])
        return lambda data: None

    def call(self, env):
        """(status, body) of one request."""
        body = b''.join(self.app(env, self._start))
        return self.status, body

    def must(self, method, path, body=None, query='', status=None):
        got, answer = self.call(environ(method, path, body, query))
        if status is not None and got != status or got >= 400:
            raise SystemExit('%s %s answered %s: %s' % (method, path, got, answer[:300]))
        return json.loads(answer) if answer else None


def fill(app, flat, trees):
    """placeload's flat providers and the gate's nested trees, by the API."""
    flat_uuids = []
    for i in range(flat):
        rp = app.must('POST', '/resource_providers', {'name': 'rp%d' % i})['uuid']
        app.must('PUT', '/resource_providers/%s/inventories' % rp,
                 {'resource_provider_generation': 0, 'inventories': INVENTORY})
        app.must('PUT', '/resource_providers/%s/aggregates' % rp,
                 {'resource_provider_generation': 1, 'aggregates': AGGREGATES[:i % 3 + 1]})
        app.must('PUT', '/resource_providers/%s/traits' % rp,
                 {'resource_provider_generation': 2, 'traits': TRAITS[:i % 3 + 1]})
        flat_uuids.append(rp)
    app.must('PUT', '/traits/CUSTOM_FOO')
    for t in range(trees):
        made = []
        for name, parent, inventory, traits in TREE:
            body = {'name': 'tree%d-%s' % (t, name)}
            if parent is not None:
                body['parent_provider_uuid'] = made[parent]
            rp = app.must('POST', '/resource_providers', body)['uuid']
            made.append(rp)
            generation = 0
            if inventory:
                app.must('PUT', '/resource_providers/%s/inventories' % rp,
                         {'resource_provider_generation': generation, 'inventories': inventory})
                generation += 1
            if traits:
                app.must('PUT', '/resource_providers/%s/traits' % rp,
                         {'resource_provider_generation': generation, 'traits': traits})
    return flat_uuids


class Cells:
    """Each cell: a request to time, and what (untimed) undoes it."""

    def __init__(self, app, flat_uuids):
        self.app = app
        self.flat = flat_uuids
        self.project, self.user = str(uuid.uuid4()), str(uuid.uuid4())
        self.turn = 0

    def spec(self, cell):
        """((method, path, body, query), undo (method, path) or None): the
        next request of ``cell``, and what (untimed) undoes it."""
        self.turn += 1
        if cell == 'GET /':
            return ('GET', '/', None, ''), None
        if cell == 'flat candidates':
            return ('GET', '/allocation_candidates', None, FLAT_QUERY), None
        if cell == 'nested candidates':
            return ('GET', '/allocation_candidates', None, NESTED_QUERY), None
        if cell == 'list providers':
            return ('GET', '/resource_providers', None, ''), None
        if cell == 'PUT /allocations':
            consumer = str(uuid.uuid4())
            rp = self.flat[self.turn % len(self.flat)]
            claim = {'allocations': {rp: {'resources': {'VCPU': 1, 'MEMORY_MB': 256}}},
                     'consumer_generation': None, 'consumer_type': 'INSTANCE',
                     'project_id': self.project, 'user_id': self.user}
            return (('PUT', '/allocations/' + consumer, claim, ''),
                    ('DELETE', '/allocations/' + consumer))
        if cell == 'POST /resource_providers':
            rp = str(uuid.uuid4())
            return (('POST', '/resource_providers', {'name': 'new-' + rp, 'uuid': rp}, ''),
                    ('DELETE', '/resource_providers/' + rp))
        raise SystemExit('unknown cell %r' % cell)

    def request(self, cell):
        """(environ, undo environ or None) for the next request of ``cell``."""
        (method, path, body, query), undo = self.spec(cell)
        return environ(method, path, body, query), undo and environ(*undo)

    def run(self, cell, n):
        """CPU and wall seconds of ``n`` requests of ``cell``."""
        cpu = wall = 0.0
        for _ in range(n):
            env, undo = self.request(cell)
            c0, w0 = time.process_time(), time.perf_counter()
            status, body = self.app.call(env)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            if status >= 400:
                raise SystemExit('%s answered %s: %s' % (cell, status, body[:300]))
            if undo is not None:
                status, body = self.app.call(undo)
                if status >= 400:
                    raise SystemExit('undo %s answered %s: %s' % (cell, status, body[:300]))
        return cpu, wall


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tree', required=True)
    parser.add_argument('--url', required=True)
    parser.add_argument('--flat', type=int, default=200)
    parser.add_argument('--trees', type=int, default=50)
    parser.add_argument('--profile', metavar='CELL',
                        help='instead: profile N requests of CELL (cProfile, own time)')
    parser.add_argument('--n', type=int, default=200)
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.tree))
    workdir = tempfile.mkdtemp(prefix='cpu-cells-')
    app = App(args.url, workdir)
    import placement_server
    tree = os.path.dirname(os.path.dirname(os.path.abspath(placement_server.__file__)))
    if tree != os.path.abspath(args.tree):
        raise SystemExit('placement_server came from %s, not %s' % (tree, args.tree))
    cells = Cells(app, fill(app, args.flat, args.trees))
    for cell in CELLS:     # warm: caches, views, first-call imports
        cells.run(cell, 3)
    if args.profile:
        import cProfile
        import pstats
        profiler = cProfile.Profile()
        profiler.runcall(cells.run, args.profile, args.n)
        stats = pstats.Stats(profiler)
        stats.sort_stats('tottime').print_stats(40)
        stats.sort_stats('cumulative').print_stats(60)
        return
    print(json.dumps({'ready': True}), flush=True)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            order = json.loads(line)
            cpu, wall = cells.run(order['cell'], order['n'])
            print(json.dumps({'cpu': cpu, 'wall': wall}), flush=True)
    finally:
        logging.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == '__main__':
    main()
