"""GET /allocation_candidates, our server alone, in process (issue 6).

The upstream gate's flat workload (what placeload creates: every provider
with VCPU 32 (max_unit 16), MEMORY_MB 8192 (min_unit 128), DISK_GB 8192
(min_unit 5); one to three of placeload's aggregates and one to three of
its traits, cycling) is written straight into the tables, plus 99
allocations; then the gate query

    resources=VCPU:1,DISK_GB:10,MEMORY_MB:256
    &member_of=14a5c8a3-5a99-4e8f-88be-00d85fcb1c17&required=HW_CPU_X86_AVX2

is sent through the whole WSGI stack in process (no network, no gunicorn)
at microversion 1.39, ``--repeat`` times, and its median latency printed,
split into the search (``candidates.find``) and the rest (parsing,
rendering, JSON). With ``--upstream``, upstream placement (from
.venv-upstream) gets the same rows in its own schema and is timed the
same way, in its own process (bench/candidates_upstream_direct.py).
bench/allocation_candidates.py is the side-by-side over HTTP under load.

    .venv/bin/python bench/candidates_direct.py --engine sqlite \\
        --engine postgresql --providers 1000 --providers 10000 --upstream
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import os_resource_classes  # noqa: E402
import sqlalchemy as sa  # noqa: E402
import webob.multidict  # noqa: E402

from bench.gate_workload import AGGREGATES  # noqa: E402
from bench.gate_workload import FLAT_QUERY  # noqa: E402
from bench.gate_workload import INVENTORY  # noqa: E402
from bench.gate_workload import NESTED_QUERY  # noqa: E402
from bench.gate_workload import TRAITS  # noqa: E402
from bench.gate_workload import TREE  # noqa: E402
from placement_server import candidates  # noqa: E402
from placement_server import view as resource_view  # noqa: E402
from placement_server.candidates import render as candidates_render  # noqa: E402
from placement_server.candidates import request as candidates_request  # noqa: E402
from placement_server.db import api  # noqa: E402
from placement_server.db import changes  # noqa: E402
from placement_server.db import tables  # noqa: E402
from tests import databases  # noqa: E402
from tests import upstream  # noqa: E402
from tests.functional import client as client_mod  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

VERSION = '1.39'
QUERY = FLAT_QUERY


def load(db, providers, allocations=99, upstream_schema=False):
    """placeload's providers, written in a few bulk inserts.

    Upstream's schema keeps standard resource classes out of its table (their
    ids are their index in os_resource_classes) and fills traits when its
    app starts: both are provided for here.
    """
    now = api.utcnow()
    with db.writer() as conn:
        # rows written behind the API's back: the workers' views reload
        changes.invalidate_all(conn)
        ids = lambda table, names: dict(conn.execute(  # noqa: E731
            sa.select(table.c.name, table.c.id).where(table.c.name.in_(names))).all())
        if upstream_schema:
            rcs = {rc: os_resource_classes.STANDARDS.index(rc) for rc in INVENTORY}
            for name in set(TRAITS) - set(ids(tables.traits, TRAITS)):
                conn.execute(tables.traits.insert().values(name=name, created_at=now))
        else:
            rcs = ids(tables.resource_classes, list(INVENTORY))
        traits = ids(tables.traits, TRAITS)
        aggs = []
        for agg in AGGREGATES:
            aggs.append(conn.execute(tables.placement_aggregates.insert().values(
                uuid=agg, created_at=now)).inserted_primary_key[0])
        rp = tables.resource_providers
        conn.execute(rp.insert(), [dict(uuid=str(uuid.uuid4()), name='rp%d' % i, generation=3,
                                        created_at=now) for i in range(providers)])
        conn.execute(rp.update().values(root_provider_id=rp.c.id))
        rp_ids = sorted(conn.execute(sa.select(rp.c.id)).scalars())
        conn.execute(tables.inventories.insert(), [
            dict(resource_provider_id=i, resource_class_id=rcs[rc], reserved=0, step_size=1,
                 allocation_ratio=1.0, created_at=now, **fields)
            for i in rp_ids for rc, fields in INVENTORY.items()])
        conn.execute(tables.resource_provider_aggregates.insert(), [
            dict(resource_provider_id=i, aggregate_id=a, created_at=now)
            for n, i in enumerate(rp_ids) for a in aggs[:n % 3 + 1]])
        conn.execute(tables.resource_provider_traits.insert(), [
            dict(resource_provider_id=i, trait_id=traits[t], created_at=now)
            for n, i in enumerate(rp_ids) for t in TRAITS[:n % 3 + 1]])
        conn.execute(tables.allocations.insert(), [
            dict(resource_provider_id=rp_ids[n], resource_class_id=rcs[rc],
                 consumer_id=str(uuid.uuid4()), used=amount, created_at=now)
            for n in range(min(allocations, providers))
            for rc, amount in (('VCPU', 1), ('MEMORY_MB', 256), ('DISK_GB', 10))])


def load_nested(db, providers, upstream_schema=False):
    """Trees of the gate's nested topology, ``providers`` in all (rounded down)."""
    now = api.utcnow()
    rp = tables.resource_providers
    with db.writer() as conn:
        # rows written behind the API's back: the workers' views reload
        changes.invalidate_all(conn)
        rcs, traits = {}, {}
        for _, _, inventories, names in TREE:
            for rc in inventories:
                rcs[rc] = (os_resource_classes.STANDARDS.index(rc) if upstream_schema
                           else _ensure(conn, tables.resource_classes, rc, now))
            for name in names:
                traits[name] = _ensure(conn, tables.traits, name, now)
        for n in range(providers // len(TREE)):
            ids = []
            for name, parent, inventories, names in TREE:
                new = conn.execute(rp.insert().values(
                    uuid=str(uuid.uuid4()), name='%s-%d' % (name, n), generation=2,
                    created_at=now, parent_provider_id=None if parent is None else ids[parent],
                    root_provider_id=None if parent is None else ids[0])).inserted_primary_key[0]
                if parent is None:
                    conn.execute(rp.update().where(rp.c.id == new).values(root_provider_id=new))
                ids.append(new)
                for rc, fields in inventories.items():
                    conn.execute(tables.inventories.insert().values(
                        resource_provider_id=new, resource_class_id=rcs[rc], created_at=now,
                        **dict(dict(reserved=0, min_unit=1, max_unit=fields['total'],
                                    step_size=1, allocation_ratio=1.0), **fields)))
                for name in names:
                    conn.execute(tables.resource_provider_traits.insert().values(
                        resource_provider_id=new, trait_id=traits[name], created_at=now))


def _ensure(conn, table, name, now):
    found = conn.execute(sa.select(table.c.id).where(table.c.name == name)).scalar()
    if found is None:
        found = conn.execute(table.insert().values(name=name, created_at=now)
                             ).inserted_primary_key[0]
    return found


def median_ms(fn, repeat):
    """Median wall time and median CPU time of this process, in ms.

    The CPU time does not count waiting for other processes, so it stays
    meaningful on a busy machine (on SQLite it includes the database work;
    on PostgreSQL the server's part is only in the wall time).
    """
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    return round(statistics.median(wall), 2), round(statistics.median(cpu), 2)


# The steps of a request that --breakdown times: (module, function).
STEPS = [(resource_view.ResourceView, 'refresh')] + [
    (candidates.search, n) for n in ('resolve', 'single_providers', 'providers_per_class',
                                      'capacities')] + [
    (candidates.combine, n) for n in ('single_provider_options', 'spread_options', 'merge')] + [
    (candidates.summaries, n) for n in ('tree_members', 'texts')] + [
    (candidates_render, 'render'), (candidates, 'find')]


def breakdown(send, repeat):
    """{step: mean wall ms per request} of the STEPS while ``send()`` runs
    ``repeat`` times, plus the whole request's median ('request').

    Wall time in each step, database waits included: where a request's time
    goes (SQL, combination, rendering), not what it costs the CPU.
    """
    spent = {}
    originals = []

    def timed(module, name):
        fn = getattr(module, name)

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        originals.append((module, name, fn))
        setattr(module, name, wrapper)
    for module, name in STEPS:
        timed(module, name)
    try:
        send()
        spent.clear()
        request = median_ms(send, repeat)
    finally:
        for module, name, fn in originals:
            setattr(module, name, fn)
    result = {name: round(seconds * 1000 / repeat, 2) for name, seconds in spent.items()}
    result['request'] = request[0]
    return result


def run(engine, providers, repeat, shape='flat', with_breakdown=False):
    test_db = databases.TestDatabase(engine, tempfile.mkdtemp())
    query = QUERY if shape == 'flat' else NESTED_QUERY
    try:
        (load if shape == 'flat' else load_nested)(test_db.db, providers)
        client = client_mod.Client(client_mod.make_app(test_db.db))
        resp = client.get('/allocation_candidates?' + query, version=VERSION)
        assert resp.status_int == 200, resp.body
        count = len(resp.json['allocation_requests'])
        request = candidates_request.parse(
            webob.multidict.MultiDict(webob.Request.blank('/?' + query).GET), (1, 39))

        def search():
            with candidates.paused_gc(), test_db.db.reader() as conn:
                candidates.find(conn, request)
        limited = '/allocation_candidates?' + query + '&limit=1000'
        if with_breakdown:
            return {'engine': engine, 'providers': providers, 'shape': shape,
                    'candidates': count, 'breakdown_ms': breakdown(
                        lambda: client.get('/allocation_candidates?' + query,
                                           version=VERSION), repeat)}
        return {
            'engine': engine, 'providers': providers, 'shape': shape, 'candidates': count,
            'request_p50_ms': median_ms(lambda: client.get('/allocation_candidates?' + query,
                                                           version=VERSION), repeat),
            'search_p50_ms': median_ms(search, repeat),
            'limit_1000_p50_ms': median_ms(lambda: client.get(limited, version=VERSION), repeat),
        }
    finally:
        test_db.drop()


def run_upstream(engine, providers, repeat, shape='flat'):
    """The same workload on upstream placement, in its own process."""
    name = 'placement_bench_%s' % uuid.uuid4().hex[:10]
    if engine == 'sqlite':
        url = 'sqlite:///%s' % os.path.join(tempfile.mkdtemp(), name + '.sqlite')
    else:
        admin_url = sa.engine.make_url(databases.ADMIN_URLS[engine])
        admin = sa.create_engine(admin_url, isolation_level='AUTOCOMMIT')
        with admin.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
        url = admin_url.set(database=name).render_as_string(hide_password=False)
    script = os.path.join(HERE, 'candidates_upstream_direct.py')
    python = upstream.venv_bin('python')
    try:
        upstream.ensure_venv()
        subprocess.run([python, script, 'sync', url], check=True, env=upstream.clean_env())
        db = api.Database(url)
        (load if shape == 'flat' else load_nested)(db, providers, upstream_schema=True)
        db.dispose()
        query = QUERY if shape == 'flat' else NESTED_QUERY
        proc = subprocess.run([python, script, 'time', url, query, VERSION, str(repeat)],
                              capture_output=True, text=True, env=upstream.clean_env())
        if proc.returncode:
            raise RuntimeError('upstream run failed: %s' % proc.stderr[-2000:])
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        return dict(result, engine=engine, providers=providers, server='upstream')
    finally:
        if engine != 'sqlite':
            with admin.connect() as conn:
                conn.exec_driver_sql('DROP DATABASE IF EXISTS %s%s' % (
                    name, ' WITH (FORCE)' if engine == 'postgresql' else ''))
            admin.dispose()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--engine', action='append', choices=['sqlite', 'postgresql', 'mysql'])
    parser.add_argument('--providers', action='append', type=int)
    parser.add_argument('--repeat', type=int, default=21)
    parser.add_argument('--shape', choices=['flat', 'nested'], default='flat',
                        help='nested: the gate\'s nested trees and query')
    parser.add_argument('--upstream', action='store_true',
                        help='also time upstream placement on the same workload')
    parser.add_argument('--output', help='write the results as JSON here')
    parser.add_argument('--breakdown', action='store_true',
                        help='where our request\'s time goes: wall ms per step (no upstream)')
    args = parser.parse_args()
    results = []
    if args.breakdown:
        for engine in args.engine or ['sqlite']:
            for n in args.providers or [1000]:
                result = run(engine, n, args.repeat, args.shape, with_breakdown=True)
                results.append(result)
                steps = sorted(result['breakdown_ms'].items(), key=lambda kv: -kv[1])
                print('%s %d %s (%d candidates): %s' % (
                    engine, n, args.shape, result['candidates'],
                    ', '.join('%s %s' % kv for kv in steps)), flush=True)
        if args.output:
            with open(args.output, 'w') as f:
                json.dump(results, f, indent=1)
        return
    for engine in args.engine or ['sqlite']:
        for n in args.providers or [1000]:
            ours = run(engine, n, args.repeat, args.shape)
            results.append(ours)
            if args.upstream:
                theirs = run_upstream(engine, n, args.repeat, args.shape)
                results.append(theirs)
                print('%s %d providers: upstream %s ms, ours %s ms (wall/cpu p50): '
                      '%.1fx / %.1fx lower' % (
                          engine, n, theirs['request_p50_ms'], ours['request_p50_ms'],
                          theirs['request_p50_ms'][0] / ours['request_p50_ms'][0],
                          theirs['request_p50_ms'][1] / ours['request_p50_ms'][1]), flush=True)
    print('engine      providers  candidates  request p50 ms (wall/cpu)  '
          'search p50 ms (wall/cpu)  limit=1000 p50 ms (wall/cpu)')
    for r in results:
        if r.get('server') == 'upstream':
            print('%-10s %10d %11d %15.1f / %5.1f   (upstream)' % (
                r['engine'], r['providers'], r['candidates'], *r['request_p50_ms']))
            continue
        print('%-10s %10d %11d %15.1f / %5.1f %17.1f / %5.1f %21.1f / %5.1f' % (
            r['engine'], r['providers'], r['candidates'], *r['request_p50_ms'],
            *r['search_p50_ms'], *r['limit_1000_p50_ms']))
    if args.output:
        with open(args.output, 'w') as f:
            json.dump(results, f, indent=1)


if __name__ == '__main__':
    main()
