"""GET /allocation_candidates: combining matches into candidates, in Python.

Each request group first becomes *options per anchor*: for every tree root
that could anchor a candidate, the ways this group can be satisfied there
(a ``Piece``: the amounts it takes from which providers). A candidate is
one piece per group, all under the same anchor, that together respect
group_policy, same_subtree and capacity (amounts of one class from one
provider asked by several groups add up).
"""
import collections
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import itertools
from typing import NamedTuple

from placement_server.candidates.request import CandidateRequest

# What is taken of one provider: ((class, amount), ...), classes in order.
Asked = tuple[tuple[int, int], ...]

# {(provider, class): (capacity, used, max_unit)}: what the sum of several
# groups' amounts on one provider is checked against.
Capacity = dict[tuple[int, int], tuple[int, int, int]]


class Piece(NamedTuple):
    """How one group is satisfied: the amounts it takes per provider, the
    providers it maps to, and the same sorted (for the mappings).

    Pieces are built once and reused by every candidate they take part in,
    so merge only puts them together.
    """
    amounts: dict[int, Asked]
    providers: frozenset[int]
    mapped: list[int]


class Candidate(NamedTuple):
    amounts: dict[int, Asked]           # by provider
    mappings: dict[str, list[int]]      # {suffix: sorted providers}


# {anchor root: the pieces that satisfy a group under it}
Options = dict[int, list[Piece]]
# {anchor root: the candidates under it}, anchors in ascending order
ByAnchor = dict[int, list[Candidate]]


def per_provider(amounts: Iterable[tuple[tuple[int, int], int]]) -> dict[int, Asked]:
    """{provider: ((class, amount), ...)} from ((provider, class), amount) pairs."""
    grouped: dict[int, list[tuple[int, int]]] = {}
    for (rp, rc), amount in amounts:
        if rp in grouped:
            grouped[rp].append((rc, amount))
        else:
            grouped[rp] = [(rc, amount)]
    return {rp: tuple(sorted(asked)) for rp, asked in grouped.items()}


def single_provider_options(providers: Iterable[int], resources: dict[int, int],
                            root_of: dict[int, int],
                            shared_with: Mapping[int, Collection[int]]) -> Options:
    """Options of a group one provider must satisfy.

    ``providers`` are the matching provider ids; each serves its own root
    and, for a sharing provider, the roots in ``shared_with[p]``.
    """
    options: Options = collections.defaultdict(list)
    asked = tuple(sorted(resources.items()))
    for rp in sorted(providers):
        piece = Piece({rp: asked} if asked else {}, frozenset([rp]), [rp])
        root = root_of[rp]
        options[root].append(piece)
        for anchor in shared_with.get(rp, ()):
            if anchor != root:
                options[anchor].append(piece)
    return options


def spread_options(by_anchor: dict[int, dict[int, list[int]]], resources: dict[int, int],
                   meets: dict[int, set[int]], n_required: int, root_of: dict[int, int],
                   nested_aware: bool) -> Options:
    """Options of the unsuffixed group, which may take each class from a
    different provider of the anchor's tree or from a sharing provider.

    ``by_anchor`` is {anchor: {class: [provider]}}; ``meets[p]`` the
    indexes of the required any-of trait sets provider p has: the
    providers a piece uses must meet every set between them.
    """
    wanted = set(range(n_required))
    classes = sorted(resources)
    options: Options = {}
    if len(classes) == 1:
        # One provider per piece (most requests' unsuffixed group in a
        # deployment with trees): no products, no sums.
        rc = classes[0]
        asked = ((rc, resources[rc]),)
        for anchor, per_class in by_anchor.items():
            pieces = [Piece({p: asked}, frozenset((p,)), [p]) for p in per_class.get(rc, ())
                      if not wanted or wanted <= meets[p]]
            if pieces:
                options[anchor] = pieces
        return options
    for anchor, per_class in by_anchor.items():
        if any(not per_class.get(rc) for rc in classes):
            continue
        pieces = []
        for choice in itertools.product(*(per_class[rc] for rc in classes)):
            used = frozenset(choice)
            if wanted and not wanted <= set().union(*(meets[p] for p in used)):
                continue
            if not nested_aware and len({root_of[p] for p in used}) != len(used):
                continue
            pieces.append(Piece(per_provider(((p, rc), resources[rc])
                                             for p, rc in zip(choice, classes)),
                                used, sorted(used)))
        if pieces:
            options[anchor] = pieces
    return options


def _ancestors(rp: int, parent_of: Callable[[int], int | None]) -> set[int]:
    found = {rp}
    parent = parent_of(rp)
    while parent is not None:
        found.add(parent)
        parent = parent_of(parent)
    return found


def merge(request: CandidateRequest, options: dict[str, Options], capacity: Capacity,
          root_of: dict[int, int], parent_of: Callable[[int], int | None],
          stop_after: int | None = None, shared: bool = True) -> ByAnchor:
    """The candidates by anchor: one piece per group under a common anchor.

    ``options`` is {suffix: {anchor: [Piece]}}; ``capacity`` is
    {(provider, class): (capacity, used, max_unit)} for every pair whose
    amounts may add up across groups (the others were checked in SQL).
    ``shared`` says whether sharing providers took part: only then can two
    anchors yield the same candidate. Stops after ``stop_after`` distinct
    candidates when given.
    """
    suffixes = list(request.groups)
    if len(suffixes) == 1:
        return _one_group(suffixes[0], options[suffixes[0]], stop_after, shared)
    granular = [i for i, s in enumerate(suffixes) if request.groups[s].granular]
    subtrees = [[suffixes.index(s) for s in subtree] for subtree in request.same_subtrees]
    anchors = set.intersection(*(set(options[s]) for s in suffixes))
    # {provider: itself and its ancestors} of every provider a same_subtree
    # group maps to, worked out once
    chain: dict[int, frozenset[int]] = {}
    for i in {i for subtree in subtrees for i in subtree}:
        for anchor in anchors:
            for piece in options[suffixes[i]][anchor]:
                for rp in piece.mapped:
                    if rp not in chain:
                        chain[rp] = frozenset(_ancestors(rp, parent_of))

    def in_same_subtrees(combo: tuple[Piece, ...]) -> bool:
        for subtree in subtrees:
            chains = [chain[rp] for i in subtree for rp in combo[i].mapped]
            # Only the one nearest its root can be an ancestor (or self) of
            # all the others: its chain must lie within every other chain.
            top = min(chains, key=len)
            for other in chains:
                if not top <= other:
                    return False
        return True

    isolate = request.group_policy == 'isolate'
    seen: set[tuple[frozenset[tuple[int, Asked]], frozenset[tuple[str, frozenset[int]]]]] = set()
    by_anchor: ByAnchor = {}
    count = 0
    for anchor in sorted(anchors):
        found: list[Candidate] = []
        for combo in itertools.product(*(options[s][anchor] for s in suffixes)):
            if isolate and len({p for i in granular for p in combo[i].providers}) != len(granular):
                continue
            if subtrees and not in_same_subtrees(combo):
                continue
            amounts: dict[int, Asked] = {}
            apart = 0
            for piece in combo:
                amounts.update(piece.amounts)
                apart += len(piece.amounts)
            if len(amounts) != apart:
                # Some provider serves several groups: its amounts may add up.
                summed = _summed(combo, capacity)
                if summed is None:
                    continue
                amounts = summed
            if not request.nested_aware:
                if len({root_of[rp] for rp in amounts}) != len(amounts):
                    continue
            if shared:
                key = (frozenset(amounts.items()),
                       frozenset((s, piece.providers) for s, piece in zip(suffixes, combo)))
                if key in seen:
                    continue
                seen.add(key)
            found.append(Candidate(amounts, {s: piece.mapped
                                             for s, piece in zip(suffixes, combo)}))
            count += 1
            if stop_after is not None and count >= stop_after:
                by_anchor[anchor] = found
                return by_anchor
        if found:
            by_anchor[anchor] = found
    return by_anchor


def _summed(combo: tuple[Piece, ...], capacity: Capacity) -> dict[int, Asked] | None:
    """The amounts per provider of pieces that share providers, or None if
    amounts that add up exceed a capacity. Each piece fits on its own
    (checked in SQL): only sums can exceed it."""
    amounts: dict[tuple[int, int], int] = {}
    summed = []
    for piece in combo:
        for rp, asked in piece.amounts.items():
            for rc, amount in asked:
                if (rp, rc) in amounts:
                    amounts[rp, rc] += amount
                    summed.append((rp, rc))
                else:
                    amounts[rp, rc] = amount
    if any(key in capacity and (capacity[key][1] + amounts[key] > capacity[key][0]
                                or amounts[key] > capacity[key][2])
           for key in summed):
        return None
    return per_provider(amounts.items())


def _one_group(suffix: str, options: Options, stop_after: int | None,
               shared: bool) -> ByAnchor:
    """A lone group's pieces are its candidates: each was capacity checked
    in SQL and takes from each (provider, class) once. Only the copies a
    sharing provider leaves under several anchors are dropped."""
    seen: set[tuple[frozenset[tuple[int, Asked]], frozenset[int]]] = set()
    by_anchor: ByAnchor = {}
    count = 0
    for anchor in sorted(options):
        found = by_anchor[anchor] = []
        for piece in options[anchor]:
            if shared:
                key = (frozenset(piece.amounts.items()), piece.providers)
                if key in seen:
                    continue
                seen.add(key)
            found.append(Candidate(piece.amounts, {suffix: piece.mapped}))
            count += 1
            if stop_after is not None and count >= stop_after:
                return by_anchor
    return by_anchor
