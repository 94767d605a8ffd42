"""GET /allocation_candidates: the response body, per microversion.

1.10 allocation_requests is a list of allocations lists; 1.12 a dict per
provider; 1.34 adds mappings. provider_summaries gain traits at 1.17,
every resource class of the provider (not only the requested ones) at
1.27, and parent/root provider uuids at 1.29.
"""


def render(result, request):
    version = request.version
    uuid = {rp: row[0] for rp, row in result.providers.items()}
    names = result.class_names
    requests = []
    for cand in result.candidates:
        per_provider = {}
        for (rp, rc), amount in sorted(cand.amounts.items()):
            per_provider.setdefault(uuid[rp], {})[names[rc]] = amount
        if version >= (1, 12):
            item = {'allocations': {u: {'resources': r} for u, r in per_provider.items()}}
            if version >= (1, 34):
                item['mappings'] = {s: [uuid[rp] for rp in rps]
                                    for s, rps in cand.mappings.items()}
        else:
            item = {'allocations': [{'resource_provider': {'uuid': u}, 'resources': r}
                                    for u, r in per_provider.items()]}
        requests.append(item)

    requested = request.all_classes()
    summaries = {}
    for rp, (resources, traits) in result.summaries.items():
        summary = {'resources': {
            name: {'capacity': capacity, 'used': used}
            for name, (capacity, used) in sorted(resources.items())
            if version >= (1, 27) or name in requested}}
        if version >= (1, 17):
            summary['traits'] = traits
        if version >= (1, 29):
            _, parent, root = result.providers[rp]
            summary['parent_provider_uuid'] = uuid.get(parent) if parent else None
            summary['root_provider_uuid'] = uuid[root]
        summaries[uuid[rp]] = summary
    return {'allocation_requests': requests, 'provider_summaries': summaries}
