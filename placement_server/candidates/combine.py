"""GET /allocation_candidates: each request group's matches as pieces per anchor.

Each request group first becomes *options per anchor*: for every tree root
that could anchor a candidate, the ways this group can be satisfied there
(a ``Piece``: the amounts it takes from which providers). A candidate is
one piece per group, all under the same anchor, that together respect
group_policy, same_subtree and capacity (amounts of one class from one
provider asked by several groups add up): ``assign`` finds them.
"""
import collections
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Mapping
import itertools
from typing import NamedTuple

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


_UNWRITTEN = (-1, '')


class Candidate:
    """One allocation request: the amounts it takes per provider, and the
    providers each group maps to. Candidates are kept with their request's
    searches between requests (``candidates._kept``), so each is written
    as JSON once (``render``): ``written`` is (form, text), the form
    ``written_form`` names (-1 until written; one attribute, so threads
    rendering the same kept candidate never see a form with another's
    text). What it says never changes: a provider keeps its uuid, and a
    change of class names drops every kept search."""
    __slots__ = ('amounts', 'mappings', 'written')

    def __init__(self, amounts: dict[int, Asked], mappings: dict[str, list[int]]) -> None:
        self.amounts = amounts          # by provider
        self.mappings = mappings        # {suffix: sorted providers}
        self.written: tuple[int, str] = _UNWRITTEN

    def __repr__(self) -> str:
        return 'Candidate(%r, %r)' % (self.amounts, self.mappings)


def written_form(version: tuple[int, int]) -> int:
    """How a microversion writes an allocation request: 0 a list of
    allocations (1.10), 1 a dict per provider (1.12), 2 with mappings (1.34)."""
    return 2 if version >= (1, 34) else 1 if version >= (1, 12) else 0


# {anchor root: the pieces that satisfy a group under it}
Options = dict[int, list[Piece]]


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
    asked_all = tuple((rc, resources[rc]) for rc in classes)
    for anchor, per_class in by_anchor.items():
        if any(not per_class.get(rc) for rc in classes):
            continue
        alone = per_class[classes[0]]
        if len(alone) == 1 and all(per_class[rc] == alone for rc in classes):
            # One provider holds every class (a compute node's root, most
            # often): one piece, no product.
            p = alone[0]
            if not wanted or wanted <= meets[p]:
                options[anchor] = [Piece({p: asked_all}, frozenset(alone), [p])]
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
