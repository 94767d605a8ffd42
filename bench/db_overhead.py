"""What the database layer costs per request, in process (issue 16).

Two figures per engine, both CPU time of this process (not wall time, so
that a shared machine's load weighs less):

  connection use  one reader() connection with one ``SELECT 1``: the
                  engine's own overhead per request (pool checkout, ping,
                  event dispatch, rollback, checkin)
  core calls      POST /resource_providers, PUT .../inventories and a
                  claim (PUT /allocations/{new consumer}) through the
                  in-process client, --calls times each on a fresh
                  database; median after the first 50

    .venv/bin/python bench/db_overhead.py --engine postgresql --engine mysql

Run it from another checkout (its bench/db_overhead.py) to compare trees:
the script imports placement_server from the tree it lives in.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOP)

import sqlalchemy as sa  # noqa: E402

from tests import databases  # noqa: E402
from tests.functional import client as client_mod  # noqa: E402

VERSION = '1.39'


def cpu_ms(fn, times):
    samples = []
    for _ in range(times):
        started = time.process_time()
        fn()
        samples.append((time.process_time() - started) * 1000)
    return samples


def connection_use(db, times):
    def use():
        with db.reader() as conn:
            conn.execute(sa.text('SELECT 1')).all()
    cpu_ms(use, 100)   # warm the pool
    return round(statistics.median(cpu_ms(use, times)) * 1000)


def core_calls(db, calls):
    client = client_mod.Client(client_mod.make_app(db))
    cpu = {'create provider': [], 'set inventory': [], 'claim': []}
    for i in range(calls):
        started = time.process_time()
        resp = client.post('/resource_providers', {'name': 'cn-%d' % i}, version=VERSION)
        cpu['create provider'].append(time.process_time() - started)
        assert resp.status_int == 200, resp.body
        rp = resp.json['uuid']
        started = time.process_time()
        resp = client.put('/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': 32}, 'MEMORY_MB': {'total': 1024}}},
            version=VERSION)
        cpu['set inventory'].append(time.process_time() - started)
        assert resp.status_int == 200, resp.body
        started = time.process_time()
        resp = client.put('/allocations/%s' % uuid.uuid4(), {
            'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'},
            version=VERSION)
        cpu['claim'].append(time.process_time() - started)
        assert resp.status_int == 204, resp.body
    return {name: round(statistics.median(values[50:]) * 1000, 2)
            for name, values in cpu.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--engine', action='append', choices=['postgresql', 'mysql'])
    parser.add_argument('--calls', type=int, default=300)
    parser.add_argument('--uses', type=int, default=3000)
    args = parser.parse_args()
    for engine in args.engine or ['postgresql', 'mysql']:
        test_db = databases.TestDatabase(engine, tempfile.mkdtemp())
        try:
            use = connection_use(test_db.db, args.uses)
            calls = core_calls(test_db.db, args.calls)
        finally:
            test_db.drop()
        print('%-10s connection use %d us; CPU ms per call: %s' % (
            engine, use, ', '.join('%s %.2f' % item for item in calls.items())),
            flush=True)


if __name__ == '__main__':
    main()
