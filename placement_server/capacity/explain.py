"""Why an allocation candidates request found nothing, root by root.

For a query string as nova sends it, every root provider gets a verdict:
it fits (a provider of its tree is in the real answer, ``candidates.find``
without limit, bounded by ``[placement] allocation_candidates_time_limit``
as GET /allocation_candidates is), or the first constraint that ruled it
out (``judge``): per request group its tree, a class lacking, capacity
(naming the drained devices that are why) or unit limits, the group's
shape, a forbidden trait, an aggregate, a required trait -- each judged
by the candidates search's own rules for that group alone -- then
root_required; what is left failed on the rules between groups (isolate,
same_subtree, amounts that add up beyond a provider: ``combined``, only
with several groups), or anchors only candidates of sharing providers
shown under their own roots (``shared_only``), or was not reached in time
(``time_limit``).
"""
import collections
import dataclasses
import time
from typing import Any
import urllib.parse

import sqlalchemy as sa
import webob.multidict

from placement_server import candidates
from placement_server import errors
from placement_server import microversion
from placement_server import view as view_mod
from placement_server.candidates import request as request_mod
from placement_server.capacity import judge

STAGES = judge.STAGES


@dataclasses.dataclass
class Verdict:
    root: str          # uuid
    name: str
    stage: str
    detail: str
    group: str | None = None
    resource_class: str | None = None
    asked: int | None = None
    largest_free: int | None = None
    limits: list[str] | None = None     # unit limits the amount breaks (unit_limits)
    drained: list[str] | None = None    # drained devices among the short (capacity)


@dataclasses.dataclass
class Explanation:
    query: str
    version: str
    verdicts: list[Verdict]
    cut: bool = False        # the time limit ended a search before its end

    def counts(self) -> dict[str, int]:
        found = collections.Counter(v.stage for v in self.verdicts)
        return {stage: found[stage] for stage in STAGES if found[stage]}

    def headline(self) -> str:
        """One line: how many roots fit, or the commonest reason none does."""
        line = self._headline()
        if self.cut:
            line += (' (the search was cut by [placement] allocation_candidates_time_limit: '
                     'more may fit)')
        return line

    def _headline(self) -> str:
        total = len(self.verdicts)
        fit = sum(v.stage == 'fits' for v in self.verdicts)
        if fit or not total:
            return '%d of %d root providers fit' % (fit, total)
        lacking = [v for v in self.verdicts if v.stage == 'class']
        rest = [v for v in self.verdicts if v.stage != 'class']
        stages = {v.stage for v in rest}
        classes = {v.resource_class for v in rest}
        if rest and len(stages) == 1 and len(classes) == 1 and stages <= {
                'capacity', 'unit_limits'}:
            rc = classes.pop()
            asked = max(v.asked or 0 for v in rest)
            if stages == {'capacity'}:
                line = ('no root provider fits: all %d %sare short of %s (asked %d, the '
                        'largest free on one provider is %d)' % (
                            len(rest), 'that have it ' if lacking else '', rc, asked,
                            max(v.largest_free or 0 for v in rest)))
            else:
                limits = sorted({lim for v in rest for lim in v.limits or ()})
                line = ('no root provider fits: %s:%d is outside the unit limits of every '
                        'provider with %s (%s)' % (rc, asked, rc, ', '.join(limits)))
            if lacking:
                missing = sorted({v.resource_class or '' for v in lacking})
                line += '; the other %d have no %s' % (len(lacking), ' or '.join(missing))
            drained = sorted({name for v in rest for name in v.drained or ()})
            if drained:
                line += '; drained devices: %s' % ', '.join(drained)
            return line
        stage, n = collections.Counter(v.stage for v in self.verdicts).most_common(1)[0]
        return 'no root provider fits: %d of %d ruled out at %s' % (n, total, stage)

    def as_dict(self, per_root: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {'query': self.query, 'version': self.version,
                                'summary': self.headline(), 'stages': self.counts(),
                                'cut': self.cut}
        if per_root:
            body['roots'] = [dataclasses.asdict(v) for v in self.verdicts]
        return body


def parse(query: str, version: str) -> request_mod.CandidateRequest:
    params = webob.multidict.MultiDict(urllib.parse.parse_qsl(query, keep_blank_values=True))
    try:
        wanted = microversion.negotiate('placement %s' % version)
    except ValueError as e:
        raise errors.BadRequest(str(e))
    parsed = request_mod.parse(params, wanted)
    parsed.limit = None
    return parsed


class _Clock:
    """One time bound for every search an explanation makes (None: none)."""

    def __init__(self, seconds: float | None) -> None:
        self.deadline = None if not seconds else time.monotonic() + seconds
        self.cut = False

    def find(self, conn: sa.Connection, request: request_mod.CandidateRequest
             ) -> candidates.Result | None:
        """The answer, or None when no time is left to ask."""
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if left is not None and left <= 0:
            self.cut = True
            return None
        result = candidates.find(conn, request, seconds=left)
        self.cut |= result.cut
        return result


def explain(conn: sa.Connection, query: str, version: str = '1.39',
            seconds: float | None = None) -> Explanation:
    """The verdict on every root provider for ``query``; a query placement
    refuses raises its 400 (errors.BadRequest). ``seconds`` bounds the
    searches as [placement] allocation_candidates_time_limit bounds GET
    /allocation_candidates (None: no bound)."""
    request = parse(query, version)
    clock = _Clock(seconds)
    result = clock.find(conn, request)
    view = view_mod.of(conn)
    with view.lock:
        view.refresh(conn)
        found = judge.Judge(view, request, result).verdicts()
        named = {root: (view.rows[root].uuid, view.details[root][0]) for root, _ in found}
    # The request-wide rules ask candidates.find again, which takes the
    # view's lock itself: only after it is released.
    loose = _Loose(conn, request, clock)
    verdicts = []
    for root, verdict in found:
        if verdict is None:
            verdict = _combined(loose, request, root)
        verdicts.append(Verdict(*named[root], *verdict[:2], **verdict[2]))
    return Explanation(query, version, verdicts, clock.cut)


class _Loose:
    """The roots the request would fit without one request-wide rule,
    asked of candidates.find once each."""

    def __init__(self, conn: sa.Connection, request: request_mod.CandidateRequest,
                 clock: _Clock) -> None:
        self.conn, self.request, self.clock = conn, request, clock
        self._fits: dict[str, set[int] | None] = {}

    def fits(self, root: int, **without: Any) -> bool | None:
        """Whether it would; None when that search did not end in time."""
        key = ','.join(sorted(without))
        if key not in self._fits:
            result = self.clock.find(self.conn, dataclasses.replace(self.request, **without))
            self._fits[key] = None if result is None or result.cut else judge.appearing(
                view_mod.of(self.conn), result)
        fitting = self._fits[key]
        return None if fitting is None else root in fitting


def _combined(loose: _Loose, request: request_mod.CandidateRequest, root: int
              ) -> judge.Found:
    """A root every group could use alone, with several groups: which
    request-wide rule kept it out."""
    if request.group_policy == 'isolate' and loose.fits(root, group_policy='none'):
        return 'isolate', 'the groups fit only on shared providers (group_policy=isolate)', {}
    if request.same_subtrees and loose.fits(root, same_subtrees=[]):
        return 'same_subtree', 'the groups fit only outside one subtree (same_subtree)', {}
    if loose.clock.cut:
        return judge.TIME_LIMIT
    return 'combined', 'the groups together exceed what a provider has', {}
