"""Provider lists with filters, and trait/aggregate writes, ours against
upstream (issue 2).

World: N compute nodes, each with two NUMA children; every provider has
VCPU and MEMORY_MB inventory, compute nodes are in one of 10 aggregates
and carry one of 4 CPU traits; a quarter of the nodes hold an allocation.
Then, one client, one call at a time, alternating between the servers:

  set traits        PUT /resource_providers/{u}/traits      x N
  set aggregates    PUT /resource_providers/{u}/aggregates  x N
  list all          GET /resource_providers                 x R
  list member_of    ...?member_of=in:A1,A2&member_of=!A3     x R
  list required     ...?required=in:T1,T2&required=!T3      x R
  list resources    ...?resources=VCPU:4,MEMORY_MB:4096     x R
  list in_tree      ...?in_tree={one node}                  x R
  list combined     all of the above but in_tree, at once   x R

    .venv/bin/python bench/provider_filters.py --engine sqlite --engine postgresql \\
        --providers 300 --repeats 30

prints a Markdown table per engine (p50/p99 per call, ratio upstream/ours)
and writes the raw numbers to bench/results/provider_filters-<engine>.json.
"""
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402

AGGS = [str(uuid.UUID(int=i + 1)) for i in range(10)]
TRAITS = ['HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE42', 'HW_CPU_X86_AVX512F']
LISTS = {
    'list all': '',
    'list member_of': '?member_of=in:%s,%s&member_of=!%s' % (AGGS[0], AGGS[1], AGGS[2]),
    'list required': '?required=in:%s,%s&required=!%s' % (TRAITS[0], TRAITS[1], TRAITS[2]),
    'list resources': '?resources=VCPU:4,MEMORY_MB:4096',
    'list in_tree': None,   # filled with the first node's uuid
    'list combined': ('?member_of=in:%s,%s&required=in:%s,%s&required=!%s'
                      '&resources=VCPU:4,MEMORY_MB:4096'
                      % (AGGS[0], AGGS[1], TRAITS[0], TRAITS[1], TRAITS[2])),
}
CALLS = ('set traits', 'set aggregates') + tuple(LISTS)


def workload(providers, repeats):
    def run(clients):
        samples = {name: {call: harness.Samples() for call in CALLS} for name in clients}
        nodes = [str(uuid.uuid4()) for _ in range(providers)]

        def setup(method, path, body):
            for client in clients.values():
                _, resp = client.call(method, path, body)
                if resp.status_code >= 300:
                    raise RuntimeError('%s %s: %s %s' % (method, path, resp.status_code,
                                                         resp.text[:300]))

        def each(call, reqs):
            for i, (method, path, body) in enumerate(reqs):
                for name in (sorted(clients) if i % 2 else sorted(clients, reverse=True)):
                    samples[name][call].add(*clients[name].call(method, path, body))

        inventory = {'VCPU': {'total': 16, 'max_unit': 16},
                     'MEMORY_MB': {'total': 65536, 'max_unit': 65536}}
        for i, node in enumerate(nodes):
            setup('POST', '/resource_providers', {'uuid': node, 'name': 'cn-%s' % node})
            tree = [node]
            for cell in range(2):
                child = str(uuid.uuid4())
                setup('POST', '/resource_providers', {'uuid': child, 'name': 'numa-%s' % child,
                                                      'parent_provider_uuid': node})
                tree.append(child)
            for rp in tree:
                setup('PUT', '/resource_providers/%s/inventories' % rp,
                      {'resource_provider_generation': 0, 'inventories': inventory})
            if i % 4 == 0:
                setup('PUT', '/allocations/%s' % uuid.uuid4(),
                      {'allocations': {node: {'resources': {'VCPU': 14}}},
                       'consumer_generation': None, 'consumer_type': 'INSTANCE',
                       'project_id': 'p', 'user_id': 'u'})
        # Node generations: 1 (inventory), +1 for the allocated ones.
        each('set traits', [('PUT', '/resource_providers/%s/traits' % node,
                             {'traits': [TRAITS[i % 4]],
                              'resource_provider_generation': 2 if i % 4 == 0 else 1})
                            for i, node in enumerate(nodes)])
        each('set aggregates', [('PUT', '/resource_providers/%s/aggregates' % node,
                                 {'aggregates': [AGGS[i % 10]],
                                  'resource_provider_generation': 3 if i % 4 == 0 else 2})
                                for i, node in enumerate(nodes)])
        LISTS['list in_tree'] = '?in_tree=%s' % nodes[0]
        for call, query in LISTS.items():
            each(call, [('GET', '/resource_providers' + query, None)] * repeats)
        return {name: {call: s.summary() for call, s in per.items()}
                for name, per in samples.items()}
    return run


def main(argv=None):
    parser = harness.side_by_side_parser(__doc__)
    parser.add_argument('--providers', type=int, default=300)
    parser.add_argument('--repeats', type=int, default=30)
    args = parser.parse_args(argv)
    for engine in args.engine or ['sqlite']:
        results = harness.side_by_side(
            engine, workload(args.providers, args.repeats), args.workers,
            servers=args.server or ('ours', 'upstream'))
        harness.publish('provider_filters-%s' % engine, results, CALLS,
                        '%s, %d compute nodes (x3 providers), %d gunicorn workers'
                        % (engine, args.providers, args.workers))


if __name__ == '__main__':
    main()
