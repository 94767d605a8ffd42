"""How many more instances of a flavor fit, counted as placing them does.

A scheduler places a flavor one instance at a time: ``GET
/allocation_candidates?limit=1`` (its one unsuffixed request group, at
the newest microversion) and a claim of the candidate it answers, until
none comes. This module counts those claims without making them, by the
candidates search's own rules (``candidates.search``, ``combine``):

- the answer's first candidate comes from the first root provider, by id,
  that anchors one; so roots fill one after the other, each until it
  anchors no candidate (usage only grows: a root that anchors none never
  anchors one again);
- a root anchors the providers of its tree and the sharing providers
  sharing an aggregate with it (``search.sharing_anchors``); per class
  (by class id) the providers with room (``filters.fits``), by id; its
  first candidate is the first choice of one provider per class, in that
  order, whose providers hold every required trait between them;
- that same choice stays the first while each of its providers has room:
  the choices before it lack room or traits, and neither comes back. So
  it is taken as many times at once as its scarcest provider allows.

Roots that share no sharing provider count alone; roots that do (a disk
pool and the hosts of its aggregates) count together, in id order: the
pool's capacity goes to the lowest ids first, as placing gives it, and
the sum over those roots is exact whatever the split.
"""
from collections.abc import Collection
from collections.abc import Iterable
import dataclasses

from placement_server import filters
from placement_server import view as view_mod
from placement_server.candidates import search

# Inventory totals are 32-bit: a larger amount fits nowhere.
MAX_AMOUNT = 2147483647


@dataclasses.dataclass(frozen=True)
class Ask:
    """A flavor as ids: {class: amount} (by class id), and the traits the
    providers of an allocation must hold between them. None: a name
    placement lacks (the request is a 400: nothing is placed)."""
    resources: tuple[tuple[int, int], ...] | None
    required: frozenset[int] | None


def ask(view: view_mod.ResourceView, resources: Iterable[tuple[str, int]],
        required: Iterable[str]) -> Ask:
    classes = [(view.class_ids.get(n), a) for n, a in resources]
    traits = [view.trait_ids.get(t) for t in required]
    if any(rc is None or a > MAX_AMOUNT for rc, a in classes) or None in traits:
        return Ask(None, None)
    return Ask(tuple(sorted((rc, a) for rc, a in classes if rc is not None)),
               frozenset(t for t in traits if t is not None))


def coupled(view: view_mod.ResourceView) -> dict[int, tuple[int, ...]]:
    """{root: the roots it is counted with, by id} for roots that share a
    sharing provider with another root (roots counted alone are absent)."""
    parent: dict[int, int] = {}

    def find(r: int) -> int:
        while parent.get(r, r) != r:
            r = parent[r]
        return r

    for roots in search.sharing_anchors(view, sorted(view.sharing)).values():
        first, *rest = sorted(roots)
        for r in rest:
            a, b = find(first), find(r)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for r in parent:
        groups.setdefault(find(r), []).append(r)
    found: dict[int, tuple[int, ...]] = {}
    for top, members in groups.items():
        together = tuple(sorted(set(members) | {top}))
        for r in together:
            found[r] = together
    return found


def count(view: view_mod.ResourceView, roots: Collection[int], flavor: Ask) -> dict[int, int]:
    """{root: instances placed under it} when ``flavor`` is placed until
    nothing fits, among ``roots`` only (all of a coupled set, or one)."""
    placed = {root: 0 for root in roots}
    if flavor.resources is None or flavor.required is None:
        return placed
    used: dict[tuple[int, int], int] = {}     # what placing adds, by (provider, class)
    anchors = search.sharing_anchors(view, [s for s in view.sharing
                                            if view.rows[s].root in roots])
    for root in sorted(roots):
        pool = set(view.members.get(root, ())) | {
            s for s, served in anchors.items() if root in served}
        _fill(view, root, sorted(pool), flavor, used, placed)
    return placed


def _fill(view: view_mod.ResourceView, anchor: int, pool: list[int], flavor: Ask,
          used: dict[tuple[int, int], int], placed: dict[int, int]) -> None:
    """Place ``flavor`` under ``anchor`` until it anchors no candidate; an
    instance counts for the anchor, or, when it takes only from sharing
    providers of other trees, for the root of the first of them (the
    answer shows it there)."""
    assert flavor.resources is not None and flavor.required is not None
    asked = flavor.resources
    empty: frozenset[int] = frozenset()
    per_class = [[rp for rp in pool if rp in view.inventories.get(rc, {})] for rc, _ in asked]
    traits = {rp: view.traits.get(rp, empty) & flavor.required for rp in pool}
    while True:
        def room(rp: int, rc: int, amount: int) -> bool:
            now = view.used.get(rc, {}).get(rp, 0) + used.get((rp, rc), 0)
            return filters.fits(amount, now, view.inventories[rc][rp])
        with_room = [[rp for rp in rps if room(rp, rc, a)]
                     for rps, (rc, a) in zip(per_class, asked)]
        choice = _first(with_room, traits, flavor.required)
        if choice is None:
            return
        times = min(_times(view, rp, rc, a, used.get((rp, rc), 0))
                    for rp, (rc, a) in zip(choice, asked))
        for rp, (rc, a) in zip(choice, asked):
            used[rp, rc] = used.get((rp, rc), 0) + times * a
        roots = [view.rows[rp].root for rp in choice]
        counted = anchor if anchor in roots else roots[0]
        placed[counted] = placed.get(counted, 0) + times


def _first(with_room: list[list[int]], traits: dict[int, frozenset[int]],
           required: frozenset[int]) -> list[int] | None:
    """The first choice of one provider per class (in the product's order)
    whose providers hold ``required`` between them."""
    if not required:
        return None if any(not rps for rps in with_room) else [rps[0] for rps in with_room]
    # What the classes from k on can still bring.
    still: list[frozenset[int]] = [frozenset()] * (len(with_room) + 1)
    for k in range(len(with_room) - 1, -1, -1):
        still[k] = still[k + 1].union(*(traits[rp] for rp in with_room[k]))
    chosen: list[int] = []

    def walk(k: int, held: frozenset[int]) -> bool:
        if k == len(with_room):
            return held >= required
        if not required <= held | still[k]:
            return False
        for rp in with_room[k]:
            chosen.append(rp)
            if walk(k + 1, held | traits[rp]):
                return True
            chosen.pop()
        return False
    return chosen if walk(0, frozenset()) else None


def _times(view: view_mod.ResourceView, rp: int, rc: int, amount: int, added: int) -> int:
    """How many more times ``amount`` fits on ``rp`` (at least one: it was chosen)."""
    inv = view.inventories[rc][rp]
    now = view.used.get(rc, {}).get(rp, 0) + added
    k = max(1, int((inv.capacity - now) // amount))
    # The capacity is a float (the ratio): settle the edge by the rule itself.
    while k > 1 and not filters.fits(k * amount, now, _no_limits(inv)):
        k -= 1
    while filters.fits((k + 1) * amount, now, _no_limits(inv)):
        k += 1
    return k


def _no_limits(inv: view_mod.Inv) -> view_mod.Inv:
    return view_mod.Inv(inv.capacity, 0, MAX_AMOUNT * 2, 1)
