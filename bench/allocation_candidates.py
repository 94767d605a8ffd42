"""GET /allocation_candidates, ours against upstream (issue 6).

Upstream placement's gate performance jobs, reproduced for both servers:

flat    placeload (from PyPI, in .venv-upstream) creates the providers with
        inventory, one to three aggregates and one to three traits each
        (after a 10-provider warm-up, as the gate does), 200 in flight
        (placeload's default; one at a time on SQLite, where upstream
        refuses concurrent writers): ``load_seconds`` is that creation;
nested  compute nodes with two NUMA children and two device children each
        (DISK_GB on the root, VCPU/MEMORY_MB on NUMA, FPGA/VGPU on devices:
        7 providers per tree, the gate's nested topology).

Then, at microversion ``latest`` with randomize_allocation_candidates on,
with the gate's own clients: the query is timed twice in a row by curl on
each server; allocations are written from candidates (99 flat, 10 nested),
timing the query twice after each; then Apache Bench (``ab``, Debian's
apache2-utils) sends 500 requests at concurrency 10 (in 5 rounds of 100,
alternating between the servers, which are both up and otherwise
interleaved call by call) for the latency distribution and throughput.
Clients written in C keep their own cost (reading a 470 KB answer) off the
two shared CPUs. ``--server floor`` adds a server that does nothing but
send ours' answer (bench/floor_app.py): the best a server could do. The
writes carry consumer_type, which 1.38+ requires (the gate's script omits
it, so there its writes are refused).

    .venv/bin/python bench/allocation_candidates.py --engine sqlite \\
        --engine postgresql --providers 1000 --providers 10000 --workers 2

writes bench/results/allocation_candidates-<shape>-<engine>-<n>.json and
prints a Markdown summary with ratios (upstream / ours).
"""
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402
from tests import upstream  # noqa: E402

AGGREGATE = '14a5c8a3-5a99-4e8f-88be-00d85fcb1c17'   # placeload's first aggregate
QUERIES = {
    'flat': ('resources=VCPU:1,DISK_GB:10,MEMORY_MB:256'
             '&member_of=%s&required=HW_CPU_X86_AVX2' % AGGREGATE),
    'nested': ('resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH'
               '&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO'
               '&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA'),
}
ALLOCATIONS = {'flat': 99, 'nested': 10}
TREE_SIZE = 7
REQUESTS, CONCURRENCY, ROUNDS = 500, 10, 5


# Requests placeload keeps in flight: its own default, as the gate runs it.
PLACELOAD_IN_FLIGHT = 200


def load_writers(client, in_flight=CONCURRENCY):
    # Upstream on SQLite answers concurrent writers with 500 "database is
    # locked": on SQLite both servers are loaded by one writer at a time.
    return 1 if client.server.db_url.startswith('sqlite') else in_flight


def load_flat(client, providers):
    """placeload, as the gate runs it: 10 to warm up, then the count."""
    for count in (10, providers):
        result = subprocess.run([upstream.venv_bin('placeload'), client.base, str(count),
                                 str(load_writers(client, PLACELOAD_IN_FLIGHT))],
                                env=upstream.clean_env(), capture_output=True, text=True)
        failures = [c for c in result.stdout if c in 'RIATC']
        if result.returncode or failures:
            raise RuntimeError('placeload failed (%d failed calls): %s'
                               % (len(failures), result.stdout[-500:] + result.stderr[-500:]))
    return providers + 10


def _nested_tree(client):
    """One compute node tree of the gate's nested topology."""
    def create(name, parent=None, inventories=None, traits=None):
        rp = str(uuid.uuid4())
        body = {'uuid': rp, 'name': '%s-%s' % (name, rp)}
        if parent:
            body['parent_provider_uuid'] = parent
        _expect(client.call('POST', '/resource_providers', body, version='latest'))
        generation = 0
        if inventories:
            _expect(client.call('PUT', '/resource_providers/%s/inventories' % rp,
                                {'resource_provider_generation': generation,
                                 'inventories': inventories}, version='latest'))
            generation += 1
        if traits:
            _expect(client.call('PUT', '/resource_providers/%s/traits' % rp,
                                {'resource_provider_generation': generation,
                                 'traits': traits}, version='latest'))
        return rp

    cn = create('cn', inventories={'DISK_GB': {'total': 20480}},
                traits=['COMPUTE_VOLUME_MULTI_ATTACH'])
    numa0 = create('numa0', cn, {'VCPU': {'total': 4, 'reserved': 2},
                                 'MEMORY_MB': {'total': 2048, 'min_unit': 512,
                                               'step_size': 256}}, ['HW_NUMA_ROOT'])
    create('fpga0', numa0, {'FPGA': {'total': 1}})
    create('pgpu0', numa0, {'VGPU': {'total': 8}})
    numa1 = create('numa1', cn, {'VCPU': {'total': 4},
                                 'MEMORY_MB': {'total': 2048, 'min_unit': 256,
                                               'max_unit': 1024}},
                   ['HW_NUMA_ROOT', 'CUSTOM_FOO'])
    create('fpga1_0', numa1, {'FPGA': {'total': 1}})
    create('fpga1_1', numa1, {'FPGA': {'total': 1}})


def load_nested(client, providers):
    _expect(client.call('PUT', '/traits/CUSTOM_FOO', version='latest'))
    trees = max(1, providers // TREE_SIZE)
    harness.concurrently(lambda: _nested_tree(client), trees, load_writers(client))
    return trees * TREE_SIZE


def _expect(timed):
    resp = timed[1]
    if not 200 <= resp.status_code < 300:
        raise RuntimeError('%s %s: %s %s' % (resp.request.method, resp.request.url,
                                             resp.status_code, resp.text[:300]))
    return resp


def workload(shape, providers, allocations=None, requests=REQUESTS, time_every=1):
    allocations = ALLOCATIONS[shape] if allocations is None else allocations
    query = '/allocation_candidates?' + QUERIES[shape]

    def run(clients):
        results = {name: {} for name in clients}
        for name, client in clients.items():
            if name == 'floor':
                continue   # it answers what ours answered (below)
            result = results[name]
            start = time.perf_counter()
            expected = (load_flat if shape == 'flat' else load_nested)(client, providers)
            result['load_seconds'] = round(time.perf_counter() - start, 1)
            listed = _expect(client.call('GET', '/resource_providers', version='latest'))
            result['providers'] = len(listed.json()['resource_providers'])
            if result['providers'] < expected:
                raise RuntimeError('%s: only %d of %d providers were created'
                                   % (name, result['providers'], expected))
            first = _expect(client.call('GET', query, version='latest')).json()
            result['candidates'] = len(first['allocation_requests'])
        if 'floor' in clients:   # the very bytes ours sends, from a server doing nothing
            for path in (query, query + '&limit=5'):
                clients['floor'].record(path, _expect(
                    clients['ours'].call('GET', path, version='latest')).content)
        timed = {name: harness.Samples() for name in clients}
        writes = {name: harness.Samples() for name in clients}
        loaded = {name: harness.Samples() for name in clients}
        walls = {name: 0.0 for name in clients}

        def in_turn(i):
            return sorted(clients, reverse=bool(i % 2))

        def time_candidates(i):
            # Twice in a row on each server, as the gate times it.
            for name in in_turn(i):
                for _ in range(2):
                    timed[name].add_status(*clients[name].curl(query, version='latest'))

        time_candidates(0)
        for i in range(allocations):
            for name in in_turn(i):
                client = clients[name]
                resp = _expect(client.call('GET', query + '&limit=5', version='latest'))
                body = dict(resp.json()['allocation_requests'][0],
                            consumer_generation=None, consumer_type='INSTANCE',
                            project_id=str(uuid.uuid4()), user_id=str(uuid.uuid4()))
                writes[name].add(*client.call('PUT', '/allocations/%s' % uuid.uuid4(), body,
                                              version='latest'))
            if (i + 1) % time_every == 0:
                time_candidates(i + 1)
        # The concurrent run in rounds, alternating servers between rounds.
        for i in range(ROUNDS):
            for name in in_turn(i):
                ms, wall, failed = clients[name].apache_bench(
                    query, requests // ROUNDS, CONCURRENCY, version='latest')
                # ab counts failures without saying which requests failed.
                for k, value in enumerate(ms):
                    loaded[name].add_status(value / 1000, 500 if k < failed else 200)
                walls[name] += wall
        for name, result in results.items():
            result['timed candidates'] = timed[name].summary()
            result['allocation writes'] = writes[name].summary()
            result['candidates under load'] = loaded[name].summary()
            result['throughput_rps'] = round(requests / walls[name], 1)
        return results
    return run


def report(shape, engine, providers, workers, results):
    ours, theirs = results.get('ours', {}), results.get('upstream', {})
    print('\n### %s, %s, %d providers, %d gunicorn workers\n'
          % (shape, engine, providers, workers))
    print(harness.latency_table(results, ('timed candidates', 'allocation writes',
                                          'candidates under load')))
    print('\n| | ours | upstream | ratio |\n|---|---|---|---|')
    print('| throughput req/s (c=10) | %s | %s | %s |' % (
        ours.get('throughput_rps', 'n/a'), theirs.get('throughput_rps', 'n/a'),
        harness.ratio(ours.get('throughput_rps'), theirs.get('throughput_rps')) or 'n/a'))
    if 'floor' in results:
        floor = results['floor'].get('throughput_rps')
        best = harness.ratio(floor, theirs.get('throughput_rps')) or 'n/a'
        print('| throughput of a floor serving ours\' answer (best possible: floor/upstream) '
              '| %s | | %s |' % (floor, best))
    for key in ('providers', 'candidates', 'load_seconds', 'rss_mib_per_worker', 'error'):
        print('| %s | %s | %s | |' % (key, ours.get(key, ''), theirs.get(key, '')))


def main(argv=None):
    parser = harness.side_by_side_parser(__doc__)
    parser.add_argument('--providers', type=int, action='append')
    parser.add_argument('--shape', action='append', choices=sorted(QUERIES))
    parser.add_argument('--time-every', type=int, default=1,
                        help='time the query after every Nth write only (the gate: 1); '
                             'at 10000 providers each upstream answer takes seconds')
    parser.add_argument('--requests', type=int, default=REQUESTS,
                        help='requests in the concurrent phase (the gate sends 500)')
    parser.add_argument('--allocations', type=int,
                        help='allocations written between timings (the gate: 99 flat, '
                             '10 nested); each is preceded by a candidates request')
    args = parser.parse_args(argv)
    options = {('placement', 'randomize_allocation_candidates'): 'true'}
    for shape in args.shape or sorted(QUERIES):
        for engine in args.engine or ['sqlite']:
            for providers in args.providers or [1000]:
                results = harness.side_by_side(
                    engine, workload(shape, providers, allocations=args.allocations,
                                     requests=args.requests, time_every=args.time_every),
                    args.workers, options,
                    servers=args.server or ('ours', 'upstream'))
                harness.save(os.path.join(
                    harness.TOP, 'bench', 'results', 'allocation_candidates-%s-%s-%d.json'
                    % (shape, engine, providers)), results)
                report(shape, engine, providers, args.workers, results)


if __name__ == '__main__':
    main()
