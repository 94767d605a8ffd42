"""Core calls, ours against upstream (issue 2).

One client, one call at a time, alternating between the two servers:
  create provider   POST /resource_providers                x N
  set inventory     PUT  /resource_providers/{u}/inventories x N
  set aggregates    PUT  /resource_providers/{u}/aggregates  x N (one aggregate for all)
  claim             PUT  /allocations/{consumer}             x N (one per provider)
  claim (POST)      POST /allocations (two new consumers)    x N/2
  list providers    GET  /resource_providers (all N)         x --list-repeats
  list by resources GET  /resource_providers?resources=...   x --list-repeats
  list by aggregate GET  /resource_providers?member_of=...   x --list-repeats

The lists are timed by curl (reading a 1000-provider answer costs a Python
client milliseconds, the same for both servers, which would hide part of
the difference); their count is checked first, once per server.

    .venv/bin/python bench/core_calls.py --engine sqlite --engine postgresql \\
        --providers 1000 --workers 2

prints a Markdown table per engine (p50/p99 per call, ratio upstream/ours)
and writes the raw numbers to bench/results/core_calls-<engine>.json.
"""
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402

CALLS = ('create provider', 'set inventory', 'set aggregates', 'claim allocation',
         'claim allocations (POST)', 'list providers', 'list providers by resources',
         'list providers by aggregate')
AGGREGATE = 'b8a3a9a4-49c4-4a64-bb8c-1c1f8c3b3f35'

INVENTORY = {'VCPU': {'total': 32, 'max_unit': 32},
             'MEMORY_MB': {'total': 131072, 'max_unit': 131072},
             'DISK_GB': {'total': 2048, 'max_unit': 2048}}


def workload(providers, list_repeats):
    def run(clients):
        samples = {name: {call: harness.Samples() for call in CALLS} for name in clients}
        uuids = [str(uuid.uuid4()) for _ in range(providers)]

        def each(call, requests, check=None):
            """Send request i to every server in turn, for each i."""
            for i, (method, path, body) in enumerate(requests):
                for name in (sorted(clients) if i % 2 else sorted(clients, reverse=True)):
                    resp = samples[name][call].add(*clients[name].call(method, path, body))
                    if check:
                        check(resp)

        def ok(call):
            return all(samples[name][call].ok() for name in clients)

        each('create provider', [('POST', '/resource_providers',
                                  {'uuid': rp, 'name': 'cn-' + rp}) for rp in uuids])
        if ok('create provider'):
            each('set inventory', [('PUT', '/resource_providers/%s/inventories' % rp,
                                    {'resource_provider_generation': 0,
                                     'inventories': INVENTORY}) for rp in uuids])
        if ok('set inventory'):
            each('set aggregates', [('PUT', '/resource_providers/%s/aggregates' % rp,
                                     {'resource_provider_generation': 1,
                                      'aggregates': [AGGREGATE]}) for rp in uuids])
            project, user = str(uuid.uuid4()), str(uuid.uuid4())

            def claim(rp):
                return {'allocations': {rp: {'resources': {'VCPU': 2, 'MEMORY_MB': 4096}}},
                        'consumer_generation': None, 'consumer_type': 'INSTANCE',
                        'project_id': project, 'user_id': user}
            each('claim allocation', [('PUT', '/allocations/%s' % uuid.uuid4(), claim(rp))
                                      for rp in uuids])
            each('claim allocations (POST)', [
                ('POST', '/allocations', {str(uuid.uuid4()): claim(rp) for rp in pair})
                for pair in zip(uuids[0::2], uuids[1::2])])

        def listed(call, path):
            if 'floor' in clients:   # the floor sends the very bytes ours sends
                clients['floor'].record(path, clients['ours'].call('GET', path)[1].content)
            for name, client in clients.items():
                _check_count(client.call('GET', path)[1], providers)
            for i in range(list_repeats):
                for name in (sorted(clients) if i % 2 else sorted(clients, reverse=True)):
                    samples[name][call].add_status(*clients[name].curl(path))
        if ok('create provider'):
            listed('list providers', '/resource_providers')
        if ok('set inventory'):
            listed('list providers by resources',
                   '/resource_providers?resources=VCPU:4,MEMORY_MB:8192')
        if ok('set aggregates'):
            listed('list providers by aggregate', '/resource_providers?member_of=' + AGGREGATE)
        return {name: {call: s.summary() for call, s in per.items()}
                for name, per in samples.items()}
    return run


def _check_count(resp, expected):
    # A fast wrong answer is not a result.
    got = len(resp.json()['resource_providers']) if resp.status_code == 200 else None
    if got != expected:
        raise AssertionError('listed %s providers (HTTP %d), expected %d'
                             % (got, resp.status_code, expected))


def main(argv=None):
    parser = harness.side_by_side_parser(__doc__)
    parser.add_argument('--providers', type=int, default=1000)
    parser.add_argument('--list-repeats', type=int, default=50)
    args = parser.parse_args(argv)
    for engine in args.engine or ['sqlite']:
        results = harness.side_by_side(
            engine, workload(args.providers, args.list_repeats), args.workers,
            servers=args.server or ('ours', 'upstream'))
        harness.publish('core_calls-%s' % engine, results, CALLS,
                        '%s, %d providers, %d gunicorn workers'
                        % (engine, args.providers, args.workers))


if __name__ == '__main__':
    main()
