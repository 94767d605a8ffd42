"""Allocation candidates on wide trees (issue 24), ours against upstream.

Compute nodes with many interchangeable child providers (nova's PCI in
placement: one provider per device; vGPU: one per GPU), asked for several
of them in separate request groups. Both servers run as real gunicorn
processes (bench/harness.py), each on its own fresh database of the same
engine, with the same configuration file; the query is timed by the
client, the servers alternating call by call. Parts:

cases  upstream 16.0.0's wide-tree and almost-fitting-root cases (the
       shapes and settings of TestWideTreeAllocationCandidateExplosion and
       TestAlmostFittingRoot in its functional tests; issue 24's table):
       N computes (VCPU 8, MEMORY_MB 4096, DISK_GB 500) each with P
       children of CUSTOM_VF holding V units; the root asks VCPU:2,
       MEMORY_MB:2048, DISK_GB:20 and G groups CUSTOM_VF:1,
       group_policy=none, a limit. Servers restarted with each case's
       options on a fresh database. Checked: the count of
       allocation_requests and of computes with candidates against what
       upstream's tests expect.
fleet  1000 computes, each with 8 PF providers of 8 VFs
       (CUSTOM_PCI_8086_154C: 8) and 4 single-GPU providers
       (CUSTOM_PCI_10DE_20B5: 1); 1, 2, 4 and 8 groups of VFs and of GPUs,
       group_policy none and isolate, limit 1000; both servers with
       optimize_for_wide_provider_trees, breadth-first and
       max_allocation_candidates 1000 (what upstream's help advises).
       Every candidate checked against the tree; the same queries within
       one compute (in_tree) compare the candidate sets where nothing is
       cut.
worst  ours only: 64 groups over 64 single-unit providers on each of 2000
       computes, no limit, max_allocation_candidates -1: the answer must
       come within allocation_candidates_time_limit (+ rendering).

The trees are written straight into each server's database in a few bulk
inserts (after the server made its schema and the custom classes were
created through the API), with the same provider uuids on both servers;
ours is told to reload its view (changes.invalidate_all).

    .venv/bin/python bench/wide_trees.py --part cases --engine postgresql
    .venv/bin/python bench/wide_trees.py --part cases --engine sqlite --server ours
    .venv/bin/python bench/wide_trees.py --part fleet --engine postgresql
    .venv/bin/python bench/wide_trees.py --part worst --engine postgresql --server ours

writes bench/results/wide_trees-<part>-<engine>-<commit>.json (or under
--results) and prints Markdown tables. --timeout N: a server that gives no
answer within N s (default 300) is recorded as "no answer in N s" and not
asked that query again; the run goes on. To measure a commit while the
work tree moves on, run from a snapshot of it:

    git archive HEAD | tar -x -C /tmp/snap
    git rev-parse --short HEAD > /tmp/snap/BENCH_COMMIT
    cd /tmp/snap && /work/main/.venv/bin/python bench/wide_trees.py ...
"""
import collections
import hashlib
import os
import statistics
import subprocess
import sys
import time
import uuid

import psutil
import requests

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sqlalchemy as sa  # noqa: E402

from bench import harness  # noqa: E402
from placement_server.db import api as db_api  # noqa: E402
from placement_server.db import changes  # noqa: E402
from placement_server.db import tables  # noqa: E402

VERSION = '1.38'     # upstream's wide-tree tests ask at 1.38
NAMESPACE = uuid.UUID('6d1f3c1e-54a4-4f1e-9c55-2b8f2f0d2a41')
ROOT = {'VCPU': 8, 'MEMORY_MB': 4096, 'DISK_GB': 500}
ROOT_ASK = 'resources=DISK_GB:20,MEMORY_MB:2048,VCPU:2'
BASE = {('placement', 'max_allocation_candidates'): 100000,
        ('placement', 'allocation_candidates_generation_strategy'): 'breadth-first'}
WIDE = ('workarounds', 'optimize_for_wide_provider_trees')
MAX = ('placement', 'max_allocation_candidates')
STRATEGY = ('placement', 'allocation_candidates_generation_strategy')


def case(name, computes, pfs, vfs, groups, limit, expected, roots, **options):
    opts = dict(BASE)
    for key, value in options.items():
        opts[{'wide': WIDE, 'max': MAX, 'strategy': STRATEGY}[key]] = value
    return dict(name=name, computes=computes, pfs=pfs, vfs=vfs, groups=groups, limit=limit,
                expected=expected, roots=roots, options=opts)


# Upstream's cases: tree, query and settings, and what its tests expect.
CASES = [
    case('2x8x8 g2', 2, 8, 8, 2, 1000, 128, 2),
    case('2x8x8 g4 limit 1000', 2, 8, 8, 4, 1000, 1000, 2),
    case('2x8x8 g6 max 100000 depth-first', 2, 8, 8, 6, 1000, 1000, 1, strategy='depth-first'),
    case('2x8x8 g6 max 100000 breadth-first', 2, 8, 8, 6, 1000, 1000, 2),
    case('2x8x8 g4 max 8000', 2, 8, 8, 4, 9000, 8000, 2, max=8000),
    case('2x8x8 g4 max -1', 2, 8, 8, 4, 9000, 8192, 2, max=-1),
    case('1x8x1 g8', 1, 8, 1, 8, 10000, 1000, 1, wide=True, max=1000),
    case('1x21x1 g8', 1, 21, 1, 8, 1000, 1000, 1, wide=True, max=1000),
    case('1x21x1 g16', 1, 21, 1, 16, 1000, 1000, 1, wide=True, max=1000),
    case('1x21x1 g21', 1, 21, 1, 21, 1000, 1000, 1, wide=True, max=1000),
    case('2x21x1 g8', 2, 21, 1, 8, 1000, 1000, 2, wide=True, max=1000),
    case('2x21x1 g21', 2, 21, 1, 21, 1000, 1000, 2, wide=True, max=1000),
    case('2x32x1 g32', 2, 32, 1, 32, 1000, 1000, 2, wide=True, max=1000),
    case('2x48x1 g48 limit 100', 2, 48, 1, 48, 100, 100, 2, wide=True, max=100),
    case('2x64x1 g64 limit 10', 2, 64, 1, 64, 10, 10, 2, wide=True, max=10),
    case('1x63x1 g64 (almost fits), no workaround', 1, 63, 1, 64, 10000, 0, 0,
         wide=False, max=1000),
    case('1x63x1 g64 (almost fits), breadth-first', 1, 63, 1, 64, 10000, 0, 0,
         wide=True, max=1000),
    case('1x63x1 g64 (almost fits), depth-first', 1, 63, 1, 64, 10000, 0, 0,
         wide=True, max=1000, strategy='depth-first'),
    case('2000x2x1 g2 (pre-check)', 2000, 2, 1, 2, 10000, 4000, 2000, max=10000),
]

VF, GPU = 'CUSTOM_PCI_8086_154C', 'CUSTOM_PCI_10DE_20B5'
FLEET_ROOT = {'VCPU': 128, 'MEMORY_MB': 524288, 'DISK_GB': 4000}
FLEET_OPTIONS = {WIDE: True, STRATEGY: 'breadth-first', MAX: 1000}


def commit():
    """HEAD, +dirty when placement_server/ has uncommitted edits. Run from
    a snapshot of a commit (``git archive``, no repository), the commit is
    read from the snapshot's BENCH_COMMIT file."""
    stamp = os.path.join(harness.TOP, 'BENCH_COMMIT')
    if os.path.exists(stamp):
        with open(stamp) as f:
            return f.read().strip()
    head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=harness.TOP,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(['git', 'status', '--porcelain', 'placement_server'],
                           cwd=harness.TOP, capture_output=True, text=True).stdout.strip()
    return head + ('+dirty' if dirty else '')


def rp_uuid(name):
    return str(uuid.uuid5(NAMESPACE, name))


# -- the trees ---------------------------------------------------------------

def trees(computes, root, children):
    """[(root name, root inventory, [(child name, {class: total})])]:
    ``children`` is [(prefix, count, class, total)] under every root."""
    out = []
    for i in range(computes):
        name = 'compute%d' % i
        kids = [('%s:%s%d' % (name, prefix, j), {rc: total})
                for prefix, count, rc, total in children for j in range(count)]
        out.append((name, root, kids))
    return out


def load(client, forest):
    """Write ``forest`` into the server's database in bulk inserts."""
    classes = sorted({rc for _, inv, kids in forest
                      for rc in list(inv) + [c for _, k in kids for c in k]})
    for rc in classes:
        if rc.startswith('CUSTOM_'):
            t, resp = client.call('PUT', '/resource_classes/%s' % rc, version='1.7')
            assert resp.status_code in (201, 204), resp.text
    url = client.server.db_url
    ours = client.server.name == 'ours'
    db = db_api.Database(url) if ours else None
    engine = db.engine if ours else sa.create_engine(url)
    now = db_api.utcnow()
    rp = tables.resource_providers
    try:
        with (db.writer() if ours else engine.begin()) as conn:
            if ours:
                changes.invalidate_all(conn)
            rcs = dict(conn.execute(sa.select(tables.resource_classes.c.name,
                                              tables.resource_classes.c.id)).all())
            if not ours:
                import os_resource_classes
                for i, name in enumerate(os_resource_classes.STANDARDS):
                    rcs.setdefault(name, i)
            missing = [rc for rc in classes if rc not in rcs]
            assert not missing, missing
            for chunk in _chunks(forest, 500):
                conn.execute(rp.insert(), [dict(uuid=rp_uuid(n), name=n, generation=1,
                                                created_at=now) for n, _, _ in chunk])
            conn.execute(rp.update().where(rp.c.parent_provider_id.is_(None))
                         .values(root_provider_id=rp.c.id))
            ids = dict(conn.execute(sa.select(rp.c.name, rp.c.id)).all())
            kids = [(ids[n], k, inv) for n, _, ks in forest for k, inv in ks]
            for chunk in _chunks(kids, 2000):
                conn.execute(rp.insert(), [dict(
                    uuid=rp_uuid(k), name=k, generation=1, created_at=now,
                    parent_provider_id=parent, root_provider_id=parent)
                    for parent, k, _ in chunk])
            ids = dict(conn.execute(sa.select(rp.c.name, rp.c.id)).all())
            rows = [(n, inv) for n, inv, _ in forest] + [(k, inv) for _, k, inv in kids]
            for chunk in _chunks(rows, 2000):
                conn.execute(tables.inventories.insert(), [dict(
                    resource_provider_id=ids[n], resource_class_id=rcs[rc], total=total,
                    reserved=0, min_unit=1, max_unit=total, step_size=1,
                    allocation_ratio=1.0, created_at=now)
                    for n, inv in chunk for rc, total in inv.items()])
    finally:
        engine.dispose()
    t, resp = client.call('GET', '/resource_providers', version=VERSION)
    count = len(resp.json()['resource_providers'])
    want = sum(1 + len(ks) for _, _, ks in forest)
    assert count == want, (client.server.name, count, want)
    return count


def _chunks(items, size):
    return [items[i:i + size] for i in range(0, len(items), size)]


# -- the answers -------------------------------------------------------------

def examine(body, roots, capacity=None, isolate=False):
    """Count, computes with candidates, per-compute spread and, given the
    tree's ``capacity`` {(rp, rc): total}, the invalid candidates."""
    per_root = collections.Counter()
    invalid = 0
    for ar in body['allocation_requests']:
        allocs = ar['allocations']
        per_root.update(set(allocs) & roots)
        if capacity is not None and not _valid(ar, capacity, roots, isolate):
            invalid += 1
    counts = sorted(per_root.values())
    return {'candidates': len(body['allocation_requests']), 'computes': len(per_root),
            'per_compute_min': counts[0] if counts else 0,
            'per_compute_max': counts[-1] if counts else 0,
            **({'invalid': invalid} if capacity is not None else {})}


def _valid(ar, capacity, roots, isolate):
    """One tree; no provider past its capacity; each granular group on a
    provider of that tree holding its class; isolate: on distinct ones."""
    allocs = ar['allocations']
    if len(set(allocs) & roots) != 1:
        return False
    root = (set(allocs) & roots).pop()
    if any(capacity.get(('root', rp)) != root for rp in allocs):
        return False
    if any(used > capacity.get((rp, rc), 0)
           for rp, alloc in allocs.items() for rc, used in alloc['resources'].items()):
        return False
    granular = [rps[0] for suffix, rps in ar.get('mappings', {}).items() if suffix]
    if any(rp not in allocs for rp in granular):
        return False
    return not isolate or len(set(granular)) == len(granular)


def candidate_set(body):
    return {(tuple(sorted((rp, tuple(sorted(a['resources'].items())))
                          for rp, a in ar['allocations'].items())),
             tuple(sorted((s, tuple(r)) for s, r in ar.get('mappings', {}).items())))
            for ar in body['allocation_requests']}


def close(clients):
    # A kept-alive connection holds a threaded worker's graceful stop.
    for client in clients.values():
        client.session.close()


# Seconds the client waits for one answer (--timeout): past it the
# server's answer is recorded as "no answer in N s" and that server is not
# asked that query again (its worker may still be busy with it).
TIMEOUT = 300.0


def get(client, path):
    """(seconds, response), or (seconds, None) when no answer came within
    TIMEOUT."""
    headers = dict(client.headers, **{'OpenStack-API-Version': 'placement %s' % VERSION})
    start = time.perf_counter()
    try:
        resp = client.session.get(client.base + path, headers=headers, timeout=TIMEOUT)
    except requests.exceptions.ReadTimeout:
        client.session.close()
        elapsed = time.perf_counter() - start
        _free_workers(client)
        return elapsed, None
    return time.perf_counter() - start, resp


def _free_workers(client):
    """Kill the server's gunicorn workers (its master starts new ones): a
    worker whose client gave up goes on with the query, and at the server's
    stop it outlives its master (the graceful stop waits for it, the master
    is killed), burning a CPU until killed by hand."""
    for worker in psutil.Process(client.server.proc.pid).children():
        worker.kill()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if client.session.get(client.base + '/', timeout=5).status_code == 200:
                break
        except requests.exceptions.RequestException:
            pass
        time.sleep(0.5)


def cold_path(path, n):
    """``path`` asking DISK_GB:20+n at the root: the same work and counts
    (the roots hold far more), but another request to ours, which keeps a
    request's per-tree searches for the next identical one (--cold)."""
    return path.replace('DISK_GB:20,', 'DISK_GB:%d,' % (20 + n), 1) if n else path


def timed(clients, path, runs, budget=30.0, cold=False):
    """The query on each server: a first call (ours may load its view),
    then up to ``runs`` calls alternating the servers (fewer once a server
    has spent ``budget`` seconds). {name: (result, body of the last call)};
    a server that gave no answer within TIMEOUT gets ``no_answer_s``.
    ``cold``: every call of a server asks a different DISK_GB amount
    (``cold_path``), so no call reuses what an earlier one kept."""
    out, results = {}, {}
    for name, client in clients.items():
        t, resp = get(client, path)
        if resp is None:
            results[name] = ({'no_answer_s': TIMEOUT, 'waited_s': round(t, 1)}, None)
            continue
        out[name] = {'first_s': round(t, 4), 'status': resp.status_code, 'samples': [],
                     'hashes': {hashlib.sha1(resp.content).hexdigest()}, 'resp': resp}
    for i in range(runs):
        for name in sorted(out, reverse=bool(i % 2)):
            r = out[name]
            if sum(r['samples']) + r['first_s'] > budget:
                continue
            t, resp = get(clients[name], cold_path(path, len(r['samples']) + 1) if cold else path)
            if resp is None:
                r['timeouts'] = r.get('timeouts', 0) + 1
                r['first_s'] += budget  # no more calls
                continue
            r['samples'].append(t)
            r['hashes'].add(hashlib.sha1(resp.content).hexdigest())
            r['status'] = max(r['status'], resp.status_code)
    for name, r in out.items():
        samples = r['samples'] or [r['first_s']]
        body = r['resp'].json() if r['status'] == 200 else None
        results[name] = ({'first_s': r['first_s'], 'median_s': round(statistics.median(samples), 4),
                          'runs': len(r['samples']), 'status': r['status'],
                          'same_body_each_run': len(r['hashes']) == 1,
                          'body_bytes': len(r['resp'].content)},
                         body)
    return results


# -- the parts ---------------------------------------------------------------

def case_query(groups, limit, rc='CUSTOM_VF', policy='none'):
    query = '/allocation_candidates?' + ROOT_ASK
    query += ''.join('&resources%d=%s:1' % (g, rc) for g in range(groups))
    query += '&group_policy=%s' % policy
    return query + ('&limit=%d' % limit if limit else '')


def run_cases(engine, workers, servers, runs, only=None):
    rows = []
    for spec in CASES:
        if only and not any(o in spec['name'] for o in only):
            continue
        forest = trees(spec['computes'], ROOT, [('PF', spec['pfs'], 'CUSTOM_VF', spec['vfs'])])
        roots = {rp_uuid(n) for n, _, _ in forest}
        path = case_query(spec['groups'], spec['limit'])

        def workload(clients):
            for client in clients.values():
                load(client, forest)
            out = {}
            for name, (result, body) in timed(clients, path, runs).items():
                if body is not None:
                    result.update(examine(body, roots))
                    result['right'] = (result['candidates'] == spec['expected']
                                       and result['computes'] == spec['roots'])
                out[name] = result
            close(clients)
            return out

        start = time.perf_counter()
        results = harness.side_by_side(engine, workload, workers, spec['options'], servers)
        row = dict(case=spec['name'], query=path,
                   options={'%s.%s' % k: v for k, v in spec['options'].items()},
                   expected=[spec['expected'], spec['roots']], results=results,
                   wall_s=round(time.perf_counter() - start, 1))
        rows.append(row)
        print(case_line(row), flush=True)
    return rows


def case_line(row):
    cells = []
    for name in ('ours', 'upstream'):
        r = row['results'].get(name)
        if r is None:
            cells.append('')
        elif 'error' in r:
            cells.append('ERROR %s' % r['error'][:80])
        elif 'no_answer_s' in r:
            cells.append('**no answer in %d s**' % r['no_answer_s'])
        elif 'candidates' not in r:
            cells.append('HTTP %s, %.2f s' % (r['status'], r['median_s']))
        else:
            cells.append('%d from %d%s, %.3f s (first %.3f)' % (
                r['candidates'], r['computes'], '' if r['right'] else ' **WRONG**',
                r['median_s'], r['first_s']))
    o, u = row['results'].get('ours', {}), row['results'].get('upstream', {})
    speed = harness.ratio(u.get('median_s'), o.get('median_s')) if 'median_s' in u else None
    return '| %s | %d / %d | %s | %s | %s |' % (
        row['case'], row['expected'][0], row['expected'][1], cells[0], cells[1],
        '%sx' % speed if speed else '')


FLEET_QUERIES = [(kind, rc, groups, policy)
                 for kind, rc in (('VF', VF), ('GPU', GPU))
                 for groups in (1, 2, 4, 8) for policy in ('none', 'isolate')]
# Upstream gave no answer in 300 s to 8 groups of VFs with isolate over the
# fleet; its worker stays busy with it after the client gives up, so that
# query goes last, where it slows no other cell.
HOPELESS = ('VF', 8, 'isolate')
FLEET_QUERIES.sort(key=lambda q: (q[0], q[2], q[3]) == HOPELESS)


def run_fleet(engine, workers, servers, runs, computes=1000, kinds=None, cold=False):
    forest = trees(computes, FLEET_ROOT, [('PF', 8, VF, 8), ('GPU', 4, GPU, 1)])
    roots = {rp_uuid(n) for n, _, _ in forest}
    capacity = {}
    for n, inv, kids in forest:
        for rp_name, rp_inv in [(n, inv)] + kids:
            for rc, total in rp_inv.items():
                capacity[(rp_uuid(rp_name), rc)] = total
            capacity[('root', rp_uuid(rp_name))] = rp_uuid(n)
    one = rp_uuid('compute0')

    def workload(clients):
        loaded = {}
        for name, client in clients.items():
            start = time.perf_counter()
            loaded[name] = {'providers': load(client, forest),
                            'load_s': round(time.perf_counter() - start, 1)}
        rows = []
        for kind, rc, groups, policy in FLEET_QUERIES:
            if kinds and kind not in kinds:
                continue
            for scope in ('one compute', 'fleet'):
                path = case_query(groups, 1000, rc, policy)
                if scope == 'one compute':
                    path += '&in_tree=%s' % one
                got = timed(clients, path, runs, cold=cold)
                row = {'kind': kind, 'groups': groups, 'policy': policy, 'scope': scope,
                       'query': path, 'results': {}}
                sets = {}
                for name, (result, body) in got.items():
                    if body is not None:
                        result.update(examine(body, roots, capacity, policy == 'isolate'))
                        sets[name] = candidate_set(body)
                    row['results'][name] = result
                if len(sets) == 2:
                    a, b = sets.values()
                    row['same_set'] = a == b
                    row['common'] = len(a & b)
                rows.append(row)
                print(fleet_line(row), flush=True)
        close(clients)
        return dict({name: dict(v) for name, v in loaded.items()}, rows=rows)

    return harness.side_by_side(engine, workload, workers, FLEET_OPTIONS, servers)


def fleet_line(row):
    cells = []
    for name in ('ours', 'upstream'):
        r = row['results'].get(name)
        if r is None:
            cells.append('')
        elif 'no_answer_s' in r:
            cells.append('**no answer in %d s**' % r['no_answer_s'])
        elif 'candidates' not in r:
            cells.append('HTTP %s' % r['status'])
        else:
            cells.append('%d from %d (%d-%d each)%s, %.3f s' % (
                r['candidates'], r['computes'], r['per_compute_min'], r['per_compute_max'],
                ' **%d INVALID**' % r['invalid'] if r['invalid'] else '', r['median_s']))
    o, u = row['results'].get('ours', {}), row['results'].get('upstream', {})
    speed = harness.ratio(u.get('median_s'), o.get('median_s')) if 'median_s' in u else None
    same = {True: 'same', False: 'differ (%s common)' % row.get('common')}.get(
        row.get('same_set'), '')
    return '| %s x%d %s | %s | %s | %s | %s | %s |' % (
        row['kind'], row['groups'], row['policy'], row['scope'], cells[0], cells[1],
        '%sx' % speed if speed else '', same)


def run_worst(engine, workers, runs, computes=2000, time_limit=None):
    forest = trees(computes, ROOT, [('PF', 64, 'CUSTOM_VF', 1)])
    roots = {rp_uuid(n) for n, _, _ in forest}
    options = {MAX: -1, STRATEGY: 'breadth-first'}
    if time_limit is not None:
        options[('placement', 'allocation_candidates_time_limit')] = time_limit
    path = case_query(64, None)

    def workload(clients):
        client = clients['ours']
        start = time.perf_counter()
        providers = load(client, forest)
        load_s = round(time.perf_counter() - start, 1)
        result, body = timed(clients, path, runs, budget=120)['ours']
        if body is not None:
            result.update(examine(body, roots))
        close(clients)
        return {'ours': dict(result, providers=providers, load_s=load_s, query=path)}

    return harness.side_by_side(engine, workload, workers, options, ('ours',))


def main(argv=None):
    global TIMEOUT
    parser = harness.side_by_side_parser(__doc__)
    parser.add_argument('--part', action='append', choices=('cases', 'fleet', 'worst'))
    parser.add_argument('--runs', type=int, default=3, help='timed calls per server')
    parser.add_argument('--case', action='append', help='only cases whose name has this')
    parser.add_argument('--computes', type=int, help='fleet/worst computes (1000/2000)')
    parser.add_argument('--time-limit', type=float,
                        help='worst: [placement] allocation_candidates_time_limit')
    parser.add_argument('--kind', action='append', choices=('VF', 'GPU'),
                        help='fleet: only these queries (default both)')
    parser.add_argument('--timeout', type=float, default=TIMEOUT,
                        help='seconds the client waits for one answer (%(default)s); '
                             'past it: "no answer in N s", that query not asked again')
    parser.add_argument('--cold', action='store_true',
                        help='fleet: each timed call asks a different DISK_GB amount, so '
                             'ours cannot answer from the searches it kept for the same '
                             'request (the median is a fresh search every time)')
    parser.add_argument('--results', default=os.path.join(harness.TOP, 'bench', 'results'),
                        help='directory for the JSON results')
    args = parser.parse_args(argv)
    TIMEOUT = args.timeout
    servers = tuple(args.server or ('ours', 'upstream'))
    rev = commit()
    for engine in args.engine or ['sqlite']:
        for part in args.part or ['cases']:
            print('\n### %s%s, %s, %s, %d workers, %s\n' % (
                part, ' (cold)' if args.cold else '', engine, '+'.join(servers), args.workers,
                rev), flush=True)
            if part == 'cases':
                print('| case | expected candidates / computes | ours | upstream | '
                      'upstream / ours |\n|---|---|---|---|---|', flush=True)
                data = run_cases(engine, args.workers, servers, args.runs, args.case)
            elif part == 'fleet':
                print('| query | scope | ours | upstream | upstream / ours | sets |\n'
                      '|---|---|---|---|---|---|', flush=True)
                data = run_fleet(engine, args.workers, servers, args.runs,
                                 args.computes or 1000, args.kind, args.cold)
                print({k: v for k, v in data.items() if k != 'rows'})
            else:
                data = run_worst(engine, args.workers, args.runs, args.computes or 2000,
                                 args.time_limit)
                print(data)
            harness.save(os.path.join(args.results, 'wide_trees-%s-%s-%s%s.json'
                                      % (part + ('-cold' if args.cold else ''), engine,
                                         '+'.join(servers),
                                         '-' + rev.replace('+', '-'))),
                         {'commit': rev, 'engine': engine, 'workers': args.workers,
                          'runs': args.runs, 'servers': servers, 'data': data})


if __name__ == '__main__':
    main()
