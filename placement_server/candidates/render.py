"""GET /allocation_candidates: the response body, per microversion.

1.10 allocation_requests is a list of allocations lists; 1.12 a dict per
provider; 1.34 adds mappings. provider_summaries gain traits at 1.17,
every resource class of the provider (not only the requested ones) at
1.27, and parent/root provider uuids at 1.29.
"""
from typing import Any

from placement_server.candidates import Result
from placement_server.candidates.request import CandidateRequest

JSON = dict[str, Any]


def _allocation_requests(result: Result, version: tuple[int, ...]
                         ) -> tuple[list[JSON], dict[int, str]]:
    uuid = {rp: row[0] for rp, row in result.providers.items()}
    names = result.class_names
    as_dict = version >= (1, 12)
    with_mappings = version >= (1, 34)
    # Candidates mostly ask the same of each provider: one {class: amount}
    # object per distinct ask, shared by every candidate that makes it,
    # saves building thousands of equal dicts (the encoder writes each out).
    resources_of: dict[tuple[tuple[int, int], ...], JSON] = {}
    for asked in {asked for c in result.candidates for asked in c.amounts.values()}:
        resources_of[asked] = {'resources': {names[rc]: amount for rc, amount in asked}}
    requests: list[JSON] = []
    for amounts, mappings in result.candidates:
        if as_dict:
            item: JSON = {'allocations': {uuid[rp]: resources_of[asked]
                                          for rp, asked in amounts.items()}}
            if with_mappings:
                item['mappings'] = {s: [uuid[rp] for rp in rps] for s, rps in mappings.items()}
        else:
            item = {'allocations': [
                {'resource_provider': {'uuid': uuid[rp]}, **resources_of[asked]}
                for rp, asked in amounts.items()]}
        requests.append(item)
    return requests, uuid


def _provider_summaries(result: Result, request: CandidateRequest, uuid: dict[int, str]
                        ) -> dict[str, JSON]:
    version = request.version
    every_class = version >= (1, 27)
    with_traits = version >= (1, 17)
    with_tree = version >= (1, 29)
    requested = request.all_classes()
    # Providers mostly show the same figures: one {'capacity', 'used'}
    # object per distinct pair, shared, saves building thousands of equal
    # dicts (the JSON encoder writes each out anyway).
    shared: dict[tuple[int, int], dict[str, int]] = {}
    # Providers with the same figures mostly share one resources object
    # (summaries interns them): each is shown once, by identity
    # (every one stays alive in result.summaries while this runs).
    shown_as: dict[int, dict[str, dict[str, int]]] = {}
    summaries: dict[str, JSON] = {}
    for rp, (resources, traits) in result.summaries.items():
        shown = shown_as.get(id(resources))
        if shown is None:
            shown = shown_as[id(resources)] = {}
            for name, pair in resources.items():
                if every_class or name in requested:
                    amounts = shared.get(pair)
                    if amounts is None:
                        amounts = shared[pair] = {'capacity': pair[0], 'used': pair[1]}
                    shown[name] = amounts
        summary: JSON = {'resources': shown}
        if with_traits:
            summary['traits'] = traits
        if with_tree:
            _, parent, root = result.providers[rp]
            summary['parent_provider_uuid'] = uuid.get(parent) if parent else None
            summary['root_provider_uuid'] = uuid[root]
        summaries[uuid[rp]] = summary
    return summaries


def render(result: Result, request: CandidateRequest) -> JSON:
    requests, uuid = _allocation_requests(result, request.version)
    return {'allocation_requests': requests,
            'provider_summaries': _provider_summaries(result, request, uuid)}
