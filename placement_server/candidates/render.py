"""GET /allocation_candidates: the response body, per microversion.

1.10 allocation_requests is a list of allocations lists; 1.12 a dict per
provider; 1.34 adds mappings. provider_summaries gain traits at 1.17,
every resource class of the provider (not only the requested ones) at
1.27, and parent/root provider uuids at 1.29.

The body is written as JSON text, as the provider list is
(``lists.body``): an answer holds thousands of
small objects, many of them alike -- the same amounts asked of a provider
by many candidates -- and each distinct one is written once and joined,
where building dicts for an encoder cost more than the search. Provider
summaries come written already (``summaries.texts``).
"""
import json

from placement_server.candidates import Result
from placement_server.candidates.request import CandidateRequest

quoted = json.encoder.encode_basestring   # a JSON string, quotes included


def _allocation_requests(result: Result, request: CandidateRequest, uuid: dict[int, str]
                         ) -> str:
    names = result.class_names
    version = request.version
    as_dict = version >= (1, 12)
    with_mappings = version >= (1, 34)
    suffix = {s: quoted(s) for s in request.groups}
    # {((class, amount), ...): '{"resources":{...}}'}, mostly a handful
    resources: dict[tuple[tuple[int, int], ...], str] = {}

    def written(asked: tuple[tuple[int, int], ...]) -> str:
        text = resources[asked] = '{"resources":{%s}}' % ','.join(
            ['%s:%d' % (quoted(names[rc]), amount) for rc, amount in asked])
        return text
    requests = []
    for amounts, mappings in result.candidates:
        if not as_dict:
            requests.append('{"allocations":[%s]}' % ','.join([
                '{"resource_provider":{"uuid":%s},%s' % (
                    uuid[rp], (resources.get(asked) or written(asked))[1:])
                for rp, asked in amounts.items()]))
            continue
        allocations = ','.join([uuid[rp] + ':' + (resources.get(asked) or written(asked))
                                for rp, asked in amounts.items()])
        if with_mappings:
            requests.append('{"allocations":{%s},"mappings":{%s}}' % (allocations, ','.join([
                '%s:[%s]' % (suffix[s], ','.join([uuid[rp] for rp in rps]))
                for s, rps in mappings.items()])))
        else:
            requests.append('{"allocations":{%s}}' % allocations)
    return '[%s]' % ','.join(requests)


def render(result: Result, request: CandidateRequest) -> bytes:
    """The response body, JSON bytes."""
    uuid = {rp: quoted(u) for rp, u in result.providers.items()}
    summaries = ','.join(['%s:%s' % (uuid[rp], text) for rp, text in result.summaries.items()])
    return ('{"allocation_requests":%s,"provider_summaries":{%s}}' % (
        _allocation_requests(result, request, uuid), summaries)).encode()
