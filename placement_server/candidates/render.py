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
summaries come written already (``summaries.texts``), and so does every
candidate written for an earlier request: the searches that found it are
kept, and it with them (``Candidate.written``).
"""
import json

from placement_server.candidates import Result
from placement_server.candidates.combine import Candidate
from placement_server.candidates.combine import written_form
from placement_server.candidates.request import CandidateRequest

quoted = json.encoder.encode_basestring   # a JSON string, quotes included


class _Writer:
    """Writes candidates not written yet in this request's form."""

    def __init__(self, result: Result, request: CandidateRequest, form: int) -> None:
        self.names = result.class_names
        self.form = form
        self.uuid = {rp: quoted(u) for rp, u in result.providers.items()}
        self.suffix = {s: quoted(s) for s in request.groups}
        # {((class, amount), ...): '{"resources":{...}}'}, mostly a handful
        self.resources: dict[tuple[tuple[int, int], ...], str] = {}

    def _resources(self, asked: tuple[tuple[int, int], ...]) -> str:
        text = self.resources.get(asked)
        if text is None:
            names = self.names
            text = self.resources[asked] = '{"resources":{%s}}' % ','.join(
                ['%s:%d' % (quoted(names[rc]), amount) for rc, amount in asked])
        return text

    def __call__(self, candidate: Candidate) -> str:
        uuid, amounts = self.uuid, candidate.amounts
        if self.form == 0:
            text = '{"allocations":[%s]}' % ','.join([
                '{"resource_provider":{"uuid":%s},%s' % (uuid[rp], self._resources(asked)[1:])
                for rp, asked in amounts.items()])
        else:
            allocations = ','.join([uuid[rp] + ':' + self._resources(asked)
                                    for rp, asked in amounts.items()])
            if self.form == 2:
                text = '{"allocations":{%s},"mappings":{%s}}' % (allocations, ','.join([
                    '%s:[%s]' % (self.suffix[s], ','.join([uuid[rp] for rp in rps]))
                    for s, rps in candidate.mappings.items()]))
            else:
                text = '{"allocations":{%s}}' % allocations
        candidate.written = (self.form, text)
        return text


def render(result: Result, request: CandidateRequest) -> bytes:
    """The response body, JSON bytes. Summaries come written, their
    provider's uuid included; so do candidates written before in this form
    (``Result.providers`` has the uuids of the others)."""
    form = written_form(request.version)
    write = _Writer(result, request, form)
    requests = ','.join([w[1] if (w := c.written)[0] == form else write(c)
                         for c in result.candidates])
    return ('{"allocation_requests":[%s],"provider_summaries":{%s}}' % (
        requests, ','.join(result.summaries.values()))).encode()
