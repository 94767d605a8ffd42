"""What each of placeload's writes costs the server and the database, in process.

placeload gives each provider four writes: create it, put its inventory,
its aggregates, its traits. This drives N providers through the deployed
application (``placement_server.deploy``: the operator layers, noauth2,
the request log) with no HTTP in front, one write kind after the other,
on a fresh database of the engine, and reports per write the CPU the
application spent (this process), the CPU the database spent (all its
processes: the machine runs nothing else) and the wall time. One writer
at a time: what a round trip and a statement cost, not contention.

    .venv/bin/python bench/write_costs.py --engine postgresql --engine mysql --providers 500
"""
import argparse
import io
import json
import logging
import os
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402
from bench.creation import _cpu  # noqa: E402
from bench.creation import _database_processes  # noqa: E402

AGGREGATE = str(uuid.uuid4())
INVENTORY = {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}, 'DISK_GB': {'total': 100}}
WRITES = (
    ('create', lambda u: ('POST', '/resource_providers', {'uuid': u, 'name': u})),
    ('inventory', lambda u: ('PUT', '/resource_providers/%s/inventories' % u,
                             {'resource_provider_generation': 0, 'inventories': INVENTORY})),
    ('aggregates', lambda u: ('PUT', '/resource_providers/%s/aggregates' % u,
                              {'resource_provider_generation': 1, 'aggregates': [AGGREGATE]})),
    ('traits', lambda u: ('PUT', '/resource_providers/%s/traits' % u,
                          {'resource_provider_generation': 2, 'traits': ['HW_CPU_X86_AVX2']})),
)


def _application(url):
    os.environ.update({'OS_PLACEMENT_DATABASE__CONNECTION': url,
                       'OS_API__AUTH_STRATEGY': 'noauth2',
                       'OS_PLACEMENT_DATABASE__SYNC_ON_STARTUP': 'true'})
    from placement_server import deploy
    app = deploy.application_from_environment()
    for handler in logging.getLogger().handlers:   # the request log is written, to nowhere
        handler.stream = open(os.devnull, 'w')
    return app


def _call(app, method, path, body):
    data = json.dumps(body).encode()
    environ = {'REQUEST_METHOD': method, 'PATH_INFO': path, 'QUERY_STRING': '',
               'SERVER_NAME': 'bench', 'SERVER_PORT': '80', 'SERVER_PROTOCOL': 'HTTP/1.1',
               'wsgi.url_scheme': 'http', 'wsgi.input': io.BytesIO(data),
               'wsgi.errors': sys.stderr, 'CONTENT_LENGTH': str(len(data)),
               'CONTENT_TYPE': 'application/json', 'HTTP_ACCEPT': 'application/json',
               'HTTP_OPENSTACK_API_VERSION': 'placement latest', 'HTTP_X_AUTH_TOKEN': 'admin',
               'REMOTE_ADDR': '127.0.0.1'}
    status = []
    body = b''.join(app(environ, lambda s, headers, exc_info=None: status.append(s)))
    if not status[0].startswith('2'):
        raise RuntimeError('%s %s: %s %s' % (method, path, status[0], body[:300]))


def run(engine, providers):
    with harness.ScratchDatabase(engine, tempfile.mkdtemp(), 'writes') as db:
        app = _application(db.url)
        costs = {}
        for round_ in range(2):   # the first warms up
            uuids = [str(uuid.uuid4()) for _ in range(providers)]
            for name, request in WRITES:
                database = _database_processes(engine)
                db0, app0, wall0 = _cpu(database), time.process_time(), time.perf_counter()
                for u in uuids:
                    _call(app, *request(u))
                costs[name] = [(time.process_time() - app0) / providers * 1e6,
                               (_cpu(database) - db0) / providers * 1e6,
                               (time.perf_counter() - wall0) / providers * 1e6]
    print('\n%s, %d providers, one writer' % (engine, providers))
    print('| write | application CPU us | database CPU us | wall us |')
    print('|---|---|---|---|')
    for name, (app_us, db_us, wall_us) in costs.items():
        print('| %s | %.0f | %.0f | %.0f |' % (name, app_us, db_us, wall_us))
    totals = [sum(c[i] for c in costs.values()) for i in range(3)]
    print('| per provider | %.0f | %.0f | %.0f |' % tuple(totals))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--engine', action='append', choices=harness.ENGINES)
    parser.add_argument('--providers', type=int, default=500)
    args = parser.parse_args()
    for engine in args.engine or ['postgresql']:
        run(engine, args.providers)


if __name__ == '__main__':
    main()
