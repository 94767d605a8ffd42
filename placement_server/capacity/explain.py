"""Why an allocation candidates request found nothing, root by root.

For a query string as nova sends it, every root provider gets a verdict:
it fits (it anchors a candidate of the real answer, ``candidates.find``
without limit), or the first constraint that ruled it out, checked in the
order placement filters: in_tree, then per request group and class the
class lacking, capacity short (by how much), a forbidden trait, an
aggregate, a required trait, a group no one provider satisfies; then
root_required; what is left failed on combining the groups (isolate,
same_subtree, or amounts that add up beyond a provider). The pool of a
tree is its providers and the sharing providers sharing an aggregate
with it: a stated lack holds for the exact pool too.
"""
import collections
import dataclasses
from typing import Any
import urllib.parse

import sqlalchemy as sa
import webob.multidict

from placement_server import candidates
from placement_server import errors
from placement_server import microversion
from placement_server import view as view_mod
from placement_server.candidates import request as request_mod
from placement_server.candidates import search
from placement_server.capacity import flavors

# Stages in the order they are judged.
STAGES = ('in_tree', 'class', 'capacity', 'forbidden_trait', 'aggregate', 'required_trait',
          'group', 'root_required', 'isolate', 'same_subtree', 'combined', 'fits')


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


@dataclasses.dataclass
class Explanation:
    query: str
    version: str
    verdicts: list[Verdict]

    def counts(self) -> dict[str, int]:
        found = collections.Counter(v.stage for v in self.verdicts)
        return {stage: found[stage] for stage in STAGES if found[stage]}

    def headline(self) -> str:
        """One line: how many roots fit, or the commonest reason none does."""
        total = len(self.verdicts)
        fit = sum(v.stage == 'fits' for v in self.verdicts)
        if fit or not total:
            return '%d of %d root providers fit' % (fit, total)
        short = [v for v in self.verdicts if v.stage == 'capacity']
        classes = {v.resource_class for v in short}
        if len(short) == total and len(classes) == 1:
            largest = max(v.largest_free or 0 for v in short)
            asked = max(v.asked or 0 for v in short)
            return ('no root provider fits: all %d are short of %s (asked %d, the largest '
                    'free on one provider is %d)' % (total, classes.pop(), asked, largest))
        stage, n = collections.Counter(v.stage for v in self.verdicts).most_common(1)[0]
        return 'no root provider fits: %d of %d ruled out at %s' % (n, total, stage)

    def as_dict(self, per_root: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {'query': self.query, 'version': self.version,
                                'summary': self.headline(), 'stages': self.counts()}
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


def explain(conn: sa.Connection, query: str, version: str = '1.39') -> Explanation:
    """The verdict on every root provider for ``query``; a query placement
    refuses raises its 400 (errors.BadRequest)."""
    request = parse(query, version)
    fitting = _fitting(conn, request)
    view = view_mod.of(conn)
    with view.lock:
        view.refresh(conn)
        names = search.resolve(view, request.all_classes(), request.all_traits(),
                               {u for g in request.groups.values()
                                for s in g.member_of + [g.forbidden_aggs] for u in s})
        anchors = search.sharing_anchors(view, view.sharing)
        found: list[tuple[int, Found | None]] = []
        for root in sorted(view.members):
            if root in fitting:
                found.append((root, ('fits', 'anchors a candidate', {})))
                continue
            pool = set(view.members[root]) | {s for s, roots in anchors.items() if root in roots}
            found.append((root, _ruled_out(view, request, names, root, pool)))
        named = {root: (view.rows[root].uuid, view.details[root][0]) for root, _ in found}
    # The request-wide rules ask candidates.find again, which takes the
    # view's lock itself: only after it is released.
    loose = _Loose(conn, request)
    verdicts = []
    for root, verdict in found:
        if verdict is None:
            verdict = _combined(loose, request, root)
        verdicts.append(Verdict(*named[root], *verdict[:2], **verdict[2]))
    return Explanation(query, version, verdicts)


class _Loose:
    """The roots the request would fit without one request-wide rule,
    asked of candidates.find once each."""

    def __init__(self, conn: sa.Connection, request: request_mod.CandidateRequest) -> None:
        self.conn, self.request = conn, request
        self._fits: dict[str, set[int]] = {}

    def fits(self, root: int, **without: Any) -> bool:
        key = ','.join(sorted(without))
        if key not in self._fits:
            self._fits[key] = _fitting(self.conn, dataclasses.replace(self.request, **without))
        return root in self._fits[key]


def _fitting(conn: sa.Connection, request: request_mod.CandidateRequest) -> set[int]:
    result = candidates.find(conn, request)
    view = view_mod.of(conn)
    rows = view.rows
    return {rows[rp].root for c in result.candidates for rp in c.amounts if rp in rows}


Found = tuple[str, str, dict[str, Any]]


def _ruled_out(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
               names: search.Names, root: int, pool: set[int]) -> Found | None:
    empty: frozenset[int] = frozenset()
    for suffix, group in request.groups.items():
        label = {'group': suffix or '(unsuffixed)'}
        if group.in_tree is not None and search.root_of_uuid(view, group.in_tree) != root:
            return 'in_tree', 'in_tree%s names another tree' % suffix, label
        forbidden = {names.traits[t] for t in group.forbidden}
        member_of = [{names.aggregates[u] for u in s if u in names.aggregates}
                     for s in group.member_of]
        bad_aggs = {names.aggregates[u] for u in group.forbidden_aggs if u in names.aggregates}
        root_aggs = view.aggregates.get(root, empty)
        passing: list[set[int]] = []
        for rc_name, amount in sorted(group.resources.items()):
            rc = names.classes[rc_name]
            inventories = view.inventories.get(rc, {})
            used = view.used.get(rc, {})
            have = [rp for rp in pool if rp in inventories]
            facts = dict(label, resource_class=rc_name, asked=amount)
            if not have:
                return 'class', 'no provider has %s' % rc_name, facts
            room = [rp for rp in have if search.fits(amount, used.get(rp, 0), inventories[rp])]
            if not room:
                largest = max(flavors.largest_one(used.get(rp, 0), inventories[rp])
                              for rp in have)
                facts['largest_free'] = largest
                if largest < amount:
                    return ('capacity', '%s short by %d (asked %d, largest free %d)'
                            % (rc_name, amount - largest, amount, largest), facts)
                return 'capacity', '%s: %d is outside every provider\'s unit limits' % (
                    rc_name, amount), facts
            room = [rp for rp in room if not view.traits.get(rp, empty) & forbidden]
            if not room:
                return 'forbidden_trait', 'every provider with room for %s has a ' \
                    'forbidden trait' % rc_name, facts
            room = [rp for rp in room
                    if all((view.aggregates.get(rp, empty) | root_aggs) & s for s in member_of)
                    and not (view.aggregates.get(rp, empty) | root_aggs) & bad_aggs]
            if not room:
                return 'aggregate', 'no provider with room for %s is in the aggregates ' \
                    'asked (or all are in a forbidden one)' % rc_name, facts
            passing.append(set(room))
        required = [frozenset(names.traits[t] for t in s) for s in group.required]
        if group.granular:
            alone = set.intersection(*passing) if passing else set()
            met = [rp for rp in alone
                   if all(view.traits.get(rp, empty) & s for s in required)]
            if alone and not met:
                return 'required_trait', 'no provider for group %s has its required ' \
                    'traits' % suffix, label
            if not alone:
                return 'group', 'no one provider has room for all of group %s' % suffix, label
        elif required:
            held = frozenset().union(*(view.traits.get(rp, empty)
                                       for rps in passing for rp in rps))
            held |= view.traits.get(root, empty)
            if not all(held & s for s in required):
                return 'required_trait', 'no provider with room has the required traits', label
    root_traits = view.traits.get(root, empty)
    if (not {names.traits[t] for t in request.root_required} <= root_traits
            or {names.traits[t] for t in request.root_forbidden} & root_traits):
        return 'root_required', 'the root provider does not meet root_required', {}
    return None


def _combined(loose: _Loose, request: request_mod.CandidateRequest, root: int) -> Found:
    """A root every group could use alone: which request-wide rule kept it out."""
    if request.group_policy == 'isolate' and loose.fits(root, group_policy='none'):
        return 'isolate', 'the groups fit only on shared providers (group_policy=isolate)', {}
    if request.same_subtrees and loose.fits(root, same_subtrees=[]):
        return 'same_subtree', 'the groups fit only outside one subtree (same_subtree)', {}
    return 'combined', 'the groups together exceed what a provider has', {}
