"""What selects providers, for lists and candidates alike.

GET /resource_providers (``placement_server.lists``) and GET
/allocation_candidates (``placement_server.candidates``) select providers
by the same parameters (``placement_server.query`` parses them into a
``RequestGroup``): amounts of classes, any-of required and forbidden
traits, member_of and forbidden aggregates, a tree. Here they become the
resource view's ids (``group_query``), are refused when a class or trait
does not exist (the texts upstream's clients match on), and are tested on
each provider: the one capacity rule (``fits``), the providers with room
(``with_room``) and the trait, aggregate and tree test (``passes``).

Which name is judged first, and which filter that leaves nothing ends the
search before a later unknown name is looked at, is each endpoint's own
(upstream's): ``lists`` and ``candidates.search.emptied_early``.
"""
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses

from placement_server import errors
from placement_server.view import Inv
from placement_server.view import ResourceView

# Where a list names an unknown trait (candidates say it bare).
IN_REQUIRED = 'Invalid trait(s) in "required" parameter: '


@dataclasses.dataclass
class RequestGroup:
    """A group of the query's filters, by name (as the client wrote them)."""
    suffix: str
    resources: dict[str, int] = dataclasses.field(default_factory=dict)   # class -> amount
    # [any-of set of trait names]
    required: list[frozenset[str]] = dataclasses.field(default_factory=list)
    forbidden: set[str] = dataclasses.field(default_factory=set)          # trait names
    # [any-of set of aggregate uuids]
    member_of: list[set[str]] = dataclasses.field(default_factory=list)
    forbidden_aggs: set[str] = dataclasses.field(default_factory=set)
    in_tree: str | None = None

    @property
    def granular(self) -> bool:
        """Suffixed groups must come from one provider each."""
        return self.suffix != ''


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


def known_classes(view: ResourceView, names: Iterable[str]) -> None:
    """A 400 naming the first of ``names`` (in their order) that is no class."""
    for name in names:
        if name not in view.class_ids:
            raise errors.BadRequest('Invalid resource class in resources parameter: '
                                    'No such resource class %s.' % name)


def known_traits(view: ResourceView, names: Collection[str], where: str = '') -> None:
    """A 400 naming every one of ``names`` that is no trait, after ``where``."""
    known = view.trait_ids
    # (not a set of every trait name: hundreds, for a handful asked)
    missing = sorted({name for name in names if name not in known})
    if missing:
        raise errors.BadRequest('%sNo such trait(s): %s.' % (where, ', '.join(missing)))


def known_aggregates(view: ResourceView, any_of: Iterable[str]) -> set[int]:
    """The ids of the aggregates of ``any_of`` that exist (an unknown one
    matches nothing, it is no error)."""
    ids = view.aggregate_ids
    return {ids[u] for u in any_of if u in ids}


def in_every_aggregate(view: ResourceView, member_of: Sequence[set[str]]) -> set[int]:
    """The providers themselves in one aggregate of each any-of set:
    upstream ends a search that asks for aggregates no provider is in
    (known or not) before it judges the names after them."""
    found: set[int] | None = None
    for any_of in member_of:
        these = set().union(*(view.in_aggregate.get(view.aggregate_ids[u], ())
                              for u in any_of if u in view.aggregate_ids))
        found = these if found is None else found & these
    return found or set()


def root_of_uuid(view: ResourceView, uuid: str) -> int | None:
    rp = view.provider_of(uuid)
    return None if rp is None else view.rows[rp].root


def group_query(view: ResourceView, group: RequestGroup) -> GroupQuery | None:
    """``group`` with its names as ids, or None when it can match nothing
    (none of an any-of set of aggregates exists, or the tree does not).
    Its classes and traits must exist (``known_classes``, ``known_traits``)."""
    member_of = []
    for any_of in group.member_of:
        ids = known_aggregates(view, any_of)
        if not ids:
            return None
        member_of.append(ids)
    tree_root = None
    if group.in_tree:
        tree_root = root_of_uuid(view, group.in_tree)
        if tree_root is None:
            return None
    class_ids, trait_ids = view.class_ids, view.trait_ids
    return GroupQuery(
        suffix=group.suffix, granular=group.granular,
        resources={class_ids[n]: a for n, a in group.resources.items()},
        required=[frozenset(trait_ids[t] for t in any_of) for any_of in group.required],
        forbidden={trait_ids[t] for t in group.forbidden},
        member_of=member_of,
        forbidden_aggs=known_aggregates(view, group.forbidden_aggs),
        tree_root=tree_root)


def with_room(view: ResourceView, resources: dict[int, int]) -> set[int] | list[int]:
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


def passes(view: ResourceView, query: GroupQuery) -> Callable[[int], bool] | None:
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
