"""Where a core call's time goes, in process (issue 15).

The calls of bench/core_calls.py through our WSGI application with no HTTP
in front, on a fresh database: per call the statements sent (SQLAlchemy's
cursor events; the pool's own round trips, BEGIN and COMMIT are not
statements), the median wall time, and with --profile CALL where that
call's CPU time goes (cProfile, own time, top 30).

    .venv/bin/python bench/core_calls_direct.py --engine sqlite --engine postgresql \\
        --engine mysql --providers 200

Run it from another checkout (its bench/core_calls_direct.py) to compare
trees: it imports placement_server from the tree it lives in.
"""
import argparse
import collections
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
import uuid

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOP)

from sqlalchemy import event  # noqa: E402

from bench.core_calls import AGGREGATE  # noqa: E402
from bench.core_calls import INVENTORY  # noqa: E402
from tests import databases  # noqa: E402
from tests.functional import client as client_mod  # noqa: E402

VERSION = '1.39'


def calls(providers):
    """(call, method, path, body, expected status) in the order of core_calls."""
    uuids = [str(uuid.uuid4()) for _ in range(providers)]
    project, user = str(uuid.uuid4()), str(uuid.uuid4())

    def claim(rp):
        return {'allocations': {rp: {'resources': {'VCPU': 2, 'MEMORY_MB': 4096}}},
                'consumer_generation': None, 'consumer_type': 'INSTANCE',
                'project_id': project, 'user_id': user}
    for rp in uuids:
        yield 'create provider', 'POST', '/resource_providers', {'uuid': rp, 'name': rp}, 200
    for rp in uuids:
        yield ('set inventory', 'PUT', '/resource_providers/%s/inventories' % rp,
               {'resource_provider_generation': 0, 'inventories': INVENTORY}, 200)
    for rp in uuids:
        yield ('set aggregates', 'PUT', '/resource_providers/%s/aggregates' % rp,
               {'resource_provider_generation': 1, 'aggregates': [AGGREGATE]}, 200)
    for rp in uuids:
        yield 'claim allocation', 'PUT', '/allocations/%s' % uuid.uuid4(), claim(rp), 204
    for pair in zip(uuids[0::2], uuids[1::2]):
        yield ('claim allocations (POST)', 'POST', '/allocations',
               {str(uuid.uuid4()): claim(rp) for rp in pair}, 204)
    for name, path in (('list providers', '/resource_providers'),
                       ('list providers by resources',
                        '/resource_providers?resources=VCPU:1,MEMORY_MB:1024'),
                       ('list providers by aggregate',
                        '/resource_providers?member_of=' + AGGREGATE)):
        for _ in range(20):
            yield name, 'GET', path, None, 200


def run(engine, providers, profile):
    test_db = databases.TestDatabase(engine, tempfile.mkdtemp())
    statements = collections.Counter()
    current = [None]

    def count(*_args):
        statements[current[0]] += 1
    for engine in test_db.db.engines:
        event.listen(engine, 'before_cursor_execute', count)

    client = client_mod.Client(client_mod.make_app(test_db.db), version=VERSION)
    wall = collections.defaultdict(list)
    profiler = cProfile.Profile() if profile else None
    seen = collections.Counter()
    try:
        for name, method, path, body, status in calls(providers):
            current[0] = name
            seen[name] += 1
            if profiler and name == profile:
                profiler.enable()
            started = time.perf_counter()
            resp = client.request(method, path, body)
            wall[name].append((time.perf_counter() - started) * 1000)
            if profiler:
                profiler.disable()
            assert resp.status_int == status, (name, resp.status_int, resp.body)
    finally:
        test_db.drop()
    print('%s, %d providers' % (engine, providers))
    print('| call | statements per call | median ms |')
    print('|---|---|---|')
    for name in seen:
        print('| %s | %.1f | %.2f |' % (name, statements[name] / seen[name],
                                       statistics.median(wall[name])))
    if profiler:
        pstats.Stats(profiler).sort_stats('tottime').print_stats(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--engine', action='append',
                        choices=['sqlite', 'postgresql', 'mysql'])
    parser.add_argument('--providers', type=int, default=200)
    parser.add_argument('--profile', metavar='CALL', help='e.g. "claim allocation"')
    args = parser.parse_args()
    for engine in args.engine or ['sqlite']:
        run(engine, args.providers, args.profile)


if __name__ == '__main__':
    main()
