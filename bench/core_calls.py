"""Core calls, ours against upstream (issue 2).

One client, one call at a time, alternating between the two servers:
  create provider   POST /resource_providers                x N
  set inventory     PUT  /resource_providers/{u}/inventories x N
  claim             PUT  /allocations/{consumer}             x N (one per provider)
  list providers    GET  /resource_providers (all N)         x --list-repeats
  list by resources GET  /resource_providers?resources=...   x --list-repeats

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

CALLS = ('create provider', 'set inventory', 'claim allocation', 'list providers',
         'list providers by resources')

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
            project, user = str(uuid.uuid4()), str(uuid.uuid4())
            each('claim allocation', [
                ('PUT', '/allocations/%s' % uuid.uuid4(),
                 {'allocations': {rp: {'resources': {'VCPU': 2, 'MEMORY_MB': 4096}}},
                  'consumer_generation': None, 'consumer_type': 'INSTANCE',
                  'project_id': project, 'user_id': user}) for rp in uuids])
        if ok('create provider'):
            each('list providers', [('GET', '/resource_providers', None)] * list_repeats,
                 lambda resp: _check_count(resp, providers))
        if ok('set inventory'):
            each('list providers by resources',
                 [('GET', '/resource_providers?resources=VCPU:4,MEMORY_MB:8192', None)]
                 * list_repeats, lambda resp: _check_count(resp, providers))
        return {name: {call: s.summary() for call, s in per.items()}
                for name, per in samples.items()}
    return run


def _check_count(resp, expected):
    # A fast wrong answer is not a result.
    if resp.status_code == 200:
        got = len(resp.json()['resource_providers'])
        if got != expected:
            raise AssertionError('listed %d providers, expected %d' % (got, expected))


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
