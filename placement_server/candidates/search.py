"""GET /allocation_candidates: which providers can satisfy a request group.

Every search reads the worker's resource view (``view``), brought up to
date at the start of the request, and returns only providers that can take
part in an answer: capacity and unit limits (``fits``), any-of required and
forbidden traits, member_of and forbidden aggregates (on the provider, or
for a group that may spread over a tree, on its root too), the tree asked
for. ``combine`` puts what comes back together. What lists use too (the
capacity rule, that test of traits, aggregates and tree, the 400s for
unknown names) is ``placement_server.filters``; the order names are judged
in is the candidates' own (``emptied_early``). ``GroupQuery``, ``fits``
and ``root_of_uuid`` are also found here, where candidates and
``capacity.explain`` ask for them.
"""
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses

from placement_server import errors
from placement_server.candidates.combine import Capacity
from placement_server.candidates.request import CandidateRequest
from placement_server.filters import GroupQuery as GroupQuery
from placement_server.filters import RequestGroup
from placement_server.filters import fits as fits
from placement_server.filters import in_every_aggregate
from placement_server.filters import known_classes
from placement_server.filters import known_traits
from placement_server.filters import passes
from placement_server.filters import root_of_uuid as root_of_uuid
from placement_server.filters import with_room
from placement_server.view import ResourceView


@dataclasses.dataclass
class Names:
    """What ``resolve`` found: ids by name, and the deployment's shape."""
    classes: dict[str, int]         # {class name: id}
    traits: dict[str, int]          # {trait name: id}
    aggregates: dict[str, int]      # {aggregate uuid: id}
    sharing: dict[int, set[int]]    # {sharing provider id: its aggregate ids}
    trees: bool                     # whether any tree has more than one provider


def emptied_early(view: ResourceView, request: CandidateRequest,
                  finds_nothing: Callable[[RequestGroup], bool]) -> bool:
    """Whether a filter empties the answer before a later name is judged.

    Names are judged in upstream's order, and its search ends at the first
    filter that leaves nothing: the root's traits and the roots they let
    through, then group by group its classes, the providers in its
    aggregates, its traits, its tree, and that group's own search
    (``finds_nothing``: a group alone with no candidate ends the search).
    An unknown name before that point is a 400; one after it is never
    looked at. The filters before an unknown name are only run when there
    is one: otherwise the whole search finds the same emptiness."""
    known_traits(view, request.root_required)
    known_traits(view, request.root_forbidden)

    def emptied(before: list[RequestGroup], member_of: Sequence[set[str]] = ()) -> bool:
        if request.root_required or request.root_forbidden:
            if not matching_roots(view, view.members,
                                  {view.trait_ids[t] for t in request.root_required},
                                  {view.trait_ids[t] for t in request.root_forbidden}):
                return True
        return (any(finds_nothing(group) for group in before)
                or (bool(member_of) and not in_every_aggregate(view, member_of)))

    judged: list[RequestGroup] = []
    for group in request.groups.values():
        try:
            known_classes(view, sorted(group.resources))
        except errors.BadRequest:
            if emptied(judged):
                return True
            raise
        if any(not any(u in view.aggregate_ids for u in any_of) for any_of in group.member_of):
            return True
        try:
            for any_of in group.required:
                known_traits(view, any_of)
            known_traits(view, group.forbidden)
        except errors.BadRequest:
            if emptied(judged, group.member_of):
                return True
            raise
        if group.in_tree and view.provider_of(group.in_tree) is None:
            return True
        judged.append(group)
    return False


def resolve(view: ResourceView, classes: Collection[str], traits: Collection[str],
            aggregates: Collection[str]) -> Names:
    """Ids for a request's names. An unknown class or trait is a 400; an
    unknown aggregate just matches nothing."""
    known_classes(view, sorted(classes))
    known_traits(view, traits)
    return Names({n: view.class_ids[n] for n in classes},
                 {n: view.trait_ids[n] for n in traits},
                 {u: view.aggregate_ids[u] for u in aggregates if u in view.aggregate_ids},
                 {rp: set(view.aggregates.get(rp, ())) for rp in view.sharing},
                 view.children > 0)


def sharing_anchors(view: ResourceView, sharing_ids: Collection[int]) -> dict[int, set[int]]:
    """{sharing provider: roots of the trees it shares an aggregate with,
    its own included}."""
    anchors = {}
    for s in sharing_ids:
        roots = {view.rows[s].root}
        for agg in view.aggregates.get(s, ()):
            roots.update(view.rows[rp].root for rp in view.in_aggregate[agg])
        anchors[s] = roots
    return anchors


def single_providers(view: ResourceView, query: GroupQuery, capacity_of: Collection[int] = ()
                     ) -> tuple[dict[int, int], Capacity]:
    """Providers that alone satisfy a group: every class, trait and aggregate.

    Returns ({provider: root}, {(provider, class): (capacity, used, max_unit)}),
    the second only for the classes in ``capacity_of`` (those other groups
    ask for too, whose amounts may add up).
    """
    rows = view.rows
    meets = passes(view, query)
    roots = {rp: rows[rp].root for rp in with_room(view, query.resources)
             if meets is None or meets(rp)}
    wanted = set(capacity_of) & set(query.resources)
    return roots, capacities(view, roots, wanted) if wanted else {}


def capacities(view: ResourceView, rp_ids: Iterable[int], rc_ids: Iterable[int]) -> Capacity:
    """{(provider, class): (capacity, used, max_unit)} for the given pairs."""
    found: Capacity = {}
    for rc in rc_ids:
        inventories = view.inventories.get(rc, {})
        used = view.used.get(rc, {})
        for rp in rp_ids:
            inv = inventories.get(rp)
            if inv is not None:
                found[rp, rc] = (int(inv[0]), used.get(rp, 0), inv[2])
    return found


def providers_per_class(view: ResourceView, query: GroupQuery) -> tuple[
        dict[int, list[int]], dict[int, int], Capacity, dict[int, set[int]]]:
    """For a group that may spread over a tree: per class, the providers with room.

    Provider filters: forbidden traits on the provider itself; member_of on
    the provider or its root (an aggregate on the root spans the tree);
    forbidden aggregates on neither. Required traits are judged later on the
    whole set of providers a candidate uses, so here each provider only
    says which of the required any-of sets it meets.

    Returns ({class: [provider]}, {provider: root},
             {(provider, class): (capacity, used, max_unit)}, {provider: {set index}}).
    """
    rows = view.rows
    by_class: dict[int, list[int]] = {}
    roots: dict[int, int] = {}
    capacity: Capacity = {}
    meets: dict[int, set[int]] = {}
    empty: frozenset[int] = frozenset()
    for rc, amount in sorted(query.resources.items()):
        inventories = view.inventories.get(rc, {})
        used = view.used.get(rc, {})
        found = by_class[rc] = []
        for rp, inv in inventories.items():
            used_now = used.get(rp, 0)
            if not fits(amount, used_now, inv):
                continue
            root = rows[rp].root
            if query.tree_root is not None and root != query.tree_root:
                continue
            traits = view.traits.get(rp, empty)
            if traits & query.forbidden:
                continue
            mine = view.aggregates.get(rp, empty)
            if query.member_of:
                theirs = view.aggregates.get(root, empty)
                if not (all(mine & s for s in query.member_of)
                        or all(theirs & s for s in query.member_of)):
                    continue
            if query.forbidden_aggs and (
                    mine & query.forbidden_aggs
                    or view.aggregates.get(root, empty) & query.forbidden_aggs):
                continue
            found.append(rp)
            roots[rp] = root
            capacity[rp, rc] = (int(inv[0]), used_now, inv[2])
            meets[rp] = {k for k, any_of in enumerate(query.required) if traits & any_of}
        if not found:
            break
    return by_class, roots, capacity, meets


def matching_roots(view: ResourceView, root_ids: Iterable[int], required: Iterable[int],
                   forbidden: Collection[int]) -> set[int]:
    required = frozenset(required)
    forbidden = frozenset(forbidden)
    empty: frozenset[int] = frozenset()
    return {root for root in root_ids
            if required <= view.traits.get(root, empty)
            and not view.traits.get(root, empty) & forbidden}


def roots_in_aggregates(view: ResourceView, root_ids: Iterable[int],
                        agg_ids: Iterable[int]) -> set[int]:
    wanted = frozenset(agg_ids)
    return {root for root in root_ids if view.aggregates.get(root, frozenset()) & wanted}


def resourceless_providers(view: ResourceView, query: GroupQuery) -> dict[int, int]:
    meets = passes(view, query)
    return {rp: row.root for rp, row in view.rows.items() if meets is None or meets(rp)}
