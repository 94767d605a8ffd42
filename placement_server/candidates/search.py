"""GET /allocation_candidates: which providers can satisfy a request group.

Every search reads the worker's resource view (``view``), brought up to
date at the start of the request, and returns only providers that can take
part in an answer: capacity and unit limits (``fits``), any-of required and
forbidden traits, member_of and forbidden aggregates (on the provider, or
for a group that may spread over a tree, on its root too), the tree asked
for. ``combine`` puts what comes back together.
"""
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
import dataclasses

from placement_server import errors
from placement_server.candidates.combine import Capacity
from placement_server.candidates.request import CandidateRequest
from placement_server.view import Inv
from placement_server.view import ResourceView


@dataclasses.dataclass
class GroupQuery:
    """A request group with names resolved to ids."""
    suffix: str
    granular: bool
    resources: dict[int, int]           # {class: amount}
    required: list[frozenset[int]]      # any-of trait sets
    forbidden: set[int]                 # traits
    member_of: list[set[int]]           # any-of aggregate sets
    forbidden_aggs: set[int]
    tree_root: int | None = None


@dataclasses.dataclass
class Names:
    """What ``resolve`` found: ids by name, and the deployment's shape."""
    classes: dict[str, int]         # {class name: id}
    traits: dict[str, int]          # {trait name: id}
    aggregates: dict[str, int]      # {aggregate uuid: id}
    sharing: dict[int, set[int]]    # {sharing provider id: its aggregate ids}
    trees: bool                     # whether any tree has more than one provider


def fits(amount: int, used: int, inv: Inv) -> bool:
    """``inv`` can take ``amount`` more with ``used`` allocated: free
    capacity and unit limits. The one rule for lists and candidates (where
    several groups take from one provider, ``combine`` checks only the sum
    against capacity and max_unit; each amount passed here). Claims apply
    it to the rows they lock (``allocations._check_capacity``, which must
    say which limit failed); tests/functional/test_candidates_capacity.py
    holds both to one reference."""
    capacity, min_unit, max_unit, step = inv
    return (used + amount <= capacity and min_unit <= amount <= max_unit
            and (step == 1 or amount % step == 0))


def _known_classes(view: ResourceView, classes: Collection[str]) -> None:
    for name in sorted(classes):
        if name not in view.class_ids:
            raise errors.BadRequest('Invalid resource class in resources parameter: '
                                    'No such resource class %s.' % name)


def _known_traits(view: ResourceView, traits: Collection[str]) -> None:
    missing = sorted(set(traits) - set(view.trait_ids))
    if missing:
        raise errors.BadRequest('No such trait(s): %s.' % ', '.join(missing))


def emptied_early(view: ResourceView, request: CandidateRequest) -> bool:
    """Whether a filter empties the answer before a later name is judged.

    Names are judged in upstream's order, and its search ends at the first
    filter that leaves nothing: the root's traits, then group by group its
    classes, its aggregates (none known: no answer, whatever follows), its
    traits and its tree. An unknown name before that point is a 400; one
    after it is never looked at."""
    _known_traits(view, request.root_required)
    _known_traits(view, request.root_forbidden)
    for group in request.groups.values():
        _known_classes(view, group.resources)
        if any(not any(u in view.aggregate_ids for u in any_of) for any_of in group.member_of):
            return True
        for any_of in group.required:
            _known_traits(view, any_of)
        _known_traits(view, group.forbidden)
        if group.in_tree and group.in_tree not in view.by_uuid:
            return True
    return False


def resolve(view: ResourceView, classes: Collection[str], traits: Collection[str],
            aggregates: Collection[str]) -> Names:
    """Ids for a request's names. An unknown class or trait is a 400; an
    unknown aggregate just matches nothing."""
    _known_classes(view, classes)
    _known_traits(view, traits)
    return Names({n: view.class_ids[n] for n in classes},
                 {n: view.trait_ids[n] for n in traits},
                 {u: view.aggregate_ids[u] for u in aggregates if u in view.aggregate_ids},
                 {rp: set(view.aggregates.get(rp, ())) for rp in view.sharing},
                 view.children > 0)


def root_of_uuid(view: ResourceView, uuid: str) -> int | None:
    rp = view.by_uuid.get(uuid)
    return None if rp is None else view.rows[rp].root


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


def _with_room(view: ResourceView, resources: dict[int, int]) -> set[int] | list[int]:
    """Providers with room for every (class, amount), the smallest
    inventory first."""
    found: list[int] | set[int] | None = None
    empty: dict[int, Inv] = {}
    for rc in sorted(resources, key=lambda rc: len(view.inventories.get(rc, empty))):
        amount = resources[rc]
        inventories = view.inventories.get(rc, empty)
        used = view.used.get(rc, {})
        among = inventories if found is None else (rp for rp in found if rp in inventories)
        found = [rp for rp in among
                 if fits(amount, used.get(rp, 0), inventories[rp])]
        if not found:
            return []
    return found or []


def _filter(view: ResourceView, query: GroupQuery) -> Callable[[int], bool] | None:
    """Whether a provider's own traits and aggregates (and tree) pass the
    group's filters, as a test of its id; None when the group has none."""
    if not (query.required or query.forbidden or query.member_of or query.forbidden_aggs
            or query.tree_root is not None):
        return None
    traits, aggregates, rows = view.traits, view.aggregates, view.rows
    empty: frozenset[int] = frozenset()

    def meets(rp: int) -> bool:
        mine = traits.get(rp, empty)
        if not all(mine & any_of for any_of in query.required) or mine & query.forbidden:
            return False
        mine = aggregates.get(rp, empty)
        return (all(mine & any_of for any_of in query.member_of)
                and not mine & query.forbidden_aggs
                and (query.tree_root is None or rows[rp].root == query.tree_root))
    return meets


def single_providers(view: ResourceView, query: GroupQuery, capacity_of: Collection[int] = ()
                     ) -> tuple[dict[int, int], Capacity]:
    """Providers that alone satisfy a group: every class, trait and aggregate.

    Returns ({provider: root}, {(provider, class): (capacity, used, max_unit)}),
    the second only for the classes in ``capacity_of`` (those other groups
    ask for too, whose amounts may add up).
    """
    rows = view.rows
    meets = _filter(view, query)
    roots = {rp: rows[rp].root for rp in _with_room(view, query.resources)
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
    meets = _filter(view, query)
    return {rp: row.root for rp, row in view.rows.items() if meets is None or meets(rp)}


def providers(view: ResourceView, query: GroupQuery) -> list[int]:
    """Ids of the providers that alone satisfy ``query`` (its classes, if
    any, from their own inventory), in id order: GET /resource_providers."""
    if query.resources:
        found: Collection[int] = single_providers(view, query)[0]
    else:
        found = resourceless_providers(view, query)
    return sorted(found)
