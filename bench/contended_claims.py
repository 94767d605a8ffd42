"""Contended claims, ours against upstream (issue 2).

Many clients claim from ONE provider at once, more than it holds:
  CLAIMS x PUT /allocations/{new consumer}  (1 VCPU each, consumer_generation null)
from CLIENTS threads, against a provider with CAPACITY VCPU. A correct
server lets exactly CAPACITY claims through and refuses the others with a
409; how fast it gets there is the throughput. The servers take turns
(ours, upstream, ours, ... --rounds times), each round on a fresh provider.

    .venv/bin/python bench/contended_claims.py --engine postgresql \\
        --clients 50 --claims 300 --capacity 200 --workers 4 --rounds 2

prints a Markdown table per engine and writes the raw numbers to
bench/results/contended_claims-<engine>.json.
"""
import collections
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402


def workload(clients_count, claims, capacity, rounds):
    def one_round(client):
        status, body = _json(client.call('POST', '/resource_providers',
                                         {'name': 'cn-%s' % uuid.uuid4()}))
        rp = body['uuid']
        _json(client.call('PUT', '/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 0,
            'inventories': {'VCPU': {'total': capacity}}}))
        samples = harness.Samples()
        codes = collections.Counter()

        def claim():
            seconds, resp = client.call('PUT', '/allocations/%s' % uuid.uuid4(), {
                'allocations': {rp: {'resources': {'VCPU': 1}}},
                'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
                'consumer_type': 'INSTANCE'})
            samples.add(seconds, resp)
            if resp.status_code >= 400:
                codes[resp.json()['errors'][0].get('code')] += 1

        _, wall = harness.concurrently(claim, claims, clients_count)
        status, usages = _json(client.call('GET', '/resource_providers/%s/usages' % rp))
        return {'wall_seconds': round(wall, 2), 'claims_per_second': round(claims / wall, 1),
                'used': usages['usages']['VCPU'], 'error_codes': dict(codes),
                'latency': samples.summary()}

    def run(clients):
        results = {name: {'rounds': []} for name in clients}
        for _ in range(rounds):
            for name in sorted(clients, reverse=True):   # upstream, then ours
                results[name]['rounds'].append(one_round(clients[name]))
        return results
    return run


def _json(timed):
    _, resp = timed
    return resp.status_code, resp.json()


def table(results, capacity):
    rows = ['| server | round | granted (of %d) | 409s | used | claims/s | p50 ms | p99 ms |'
            % capacity, '|---|---|---|---|---|---|---|---|']
    for name in sorted(results, reverse=True):
        for i, r in enumerate(results[name].get('rounds', []), 1):
            statuses = r['latency']['statuses']
            rows.append('| %s | %d | %s | %s %s | %s | %s | %s | %s |' % (
                name, i, statuses.get(204, 0), statuses.get(409, 0), r['error_codes'],
                r['used'], r['claims_per_second'], r['latency'].get('p50'),
                r['latency'].get('p99')))
    return '\n'.join(rows)


def main(argv=None):
    parser = harness.side_by_side_parser(__doc__, workers=4)
    parser.add_argument('--clients', type=int, default=50)
    parser.add_argument('--claims', type=int, default=300)
    parser.add_argument('--capacity', type=int, default=200)
    parser.add_argument('--rounds', type=int, default=2)
    args = parser.parse_args(argv)
    for engine in args.engine or ['postgresql']:
        started = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())
        results = harness.side_by_side(
            engine, workload(args.clients, args.claims, args.capacity, args.rounds),
            args.workers, servers=args.server or ('ours', 'upstream'))
        results['run'] = dict(vars(args), engine=engine, started=started)
        harness.save(os.path.join(harness.TOP, 'bench', 'results',
                                  'contended_claims-%s.json' % engine), results)
        print('\n### %s: %d clients, %d claims of 1 VCPU, capacity %d, %d gunicorn workers\n'
              % (engine, args.clients, args.claims, args.capacity, args.workers))
        print(table({k: v for k, v in results.items() if k != 'run'}, args.capacity))
        for name in ('ours', 'upstream'):
            if 'error' in results.get(name, {}):
                print('\n%s: ERROR %s' % (name, results[name]['error']))


if __name__ == '__main__':
    main()
