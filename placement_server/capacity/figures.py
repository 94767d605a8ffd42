"""Capacity figures per tree, kept while the tree does not change.

A scrape of 10000 providers must cost little, and between two scrapes a
cloud changes a few trees (claims, an agent's update): each tree's figures
-- its providers' inventories and usage, how many of each flavor it holds,
its free capacity -- are computed once and kept until the view says that
tree changed (``ResourceView.trees_changed_since``).
"""
import dataclasses

from placement_server import view as view_mod
from placement_server.capacity import flavors as flavors_mod
from placement_server.capacity import inventory
from placement_server.capacity import placing

# (provider, class, total, reserved, allocation_ratio, used)
ProviderLine = tuple[int, int, int, int, float, int]


@dataclasses.dataclass
class TreeFigures:
    root: int
    lines: list[ProviderLine]
    fits: tuple[int, ...]                 # per flavor, in the flavors' order
    free: dict[int, int]                  # {class: free capacity summed}
    largest: dict[int, int]               # {class: the largest one allocation}
    capacity: dict[int, float]            # {class: (total - reserved) * ratio summed}
    # Its lines as exposition text, per exporter metric and flavor (metrics.py)
    rendered: list[bytes] | None = None


def resolve(view: view_mod.ResourceView, flavors: list[flavors_mod.Flavor]
            ) -> list[placing.Ask]:
    return [placing.ask(view, f.resources, f.required) for f in flavors]


def of_tree(view: view_mod.ResourceView, raw: inventory.Inventories, root: int,
            fits: tuple[int, ...]) -> TreeFigures:
    lines: list[ProviderLine] = []
    free: dict[int, int] = {}
    largest: dict[int, int] = {}
    capacity: dict[int, float] = {}
    for rp in sorted(view.members.get(root, ())):
        for rc, (total, reserved, ratio) in sorted(raw.of.get(rp, {}).items()):
            used = view.used.get(rc, {}).get(rp, 0)
            lines.append((rp, rc, total, reserved, ratio, used))
            inv = view.inventories.get(rc, {}).get(rp)
            if inv is None:     # the side table read a newer inventory: next time
                continue
            free[rc] = free.get(rc, 0) + flavors_mod.free(used, inv)
            largest[rc] = max(largest.get(rc, 0), flavors_mod.largest_one(used, inv))
            capacity[rc] = capacity.get(rc, 0.0) + inv[0]
    return TreeFigures(root, lines, fits, free, largest, capacity)


class Trees:
    """Every tree's figures for one list of flavors, kept beside the view
    and brought up to date with it (names changed: all again, as a trait
    created since may be one a flavor asks for). Roots counted together
    (``placing.coupled``: they share a pool) are counted again together
    when any of them changed, or they were counted with one that did."""

    def __init__(self, flavors: list[flavors_mod.Flavor]) -> None:
        self.flavors = flavors
        self._key = ('trees', tuple(flavors))

    def current(self, view: view_mod.ResourceView, raw: inventory.Inventories
                ) -> dict[int, TreeFigures]:
        """{root: its figures}; the caller holds the view's lock."""
        beside = inventory.beside(view)
        kept = beside.get(self._key)
        names = (view.class_ids, view.trait_ids)
        changed = None
        if kept is not None and kept[2][0] is names[0] and kept[2][1] is names[1]:
            changed = view.trees_changed_since(kept[0])
        together = placing.coupled(view)
        if kept is None or changed is None:
            trees: dict[int, TreeFigures] = {}
            again = set(view.members)
        else:
            trees, before = kept[1], kept[3]
            for root in changed:
                if root not in view.members:
                    trees.pop(root, None)
            # Roots whose count depends on a changed tree, now or before.
            again = set(changed)
            for root in changed:
                again.update(together.get(root, ()))
                again.update(before.get(root, ()))
            again.update(r for r in set(together) | set(before)
                         if together.get(r) != before.get(r))
            again &= set(view.members)
        if again:
            fits = self._fits(view, again, together)
            for root in again:
                tree = trees.get(root)
                if tree is None or (changed is None or root in changed):
                    trees[root] = of_tree(view, raw, root, fits[root])
                elif tree.fits != fits[root]:
                    trees[root] = dataclasses.replace(tree, fits=fits[root], rendered=None)
        beside[self._key] = (view.version, trees, names, together)
        return trees

    def _fits(self, view: view_mod.ResourceView, roots: set[int],
              together: dict[int, tuple[int, ...]]) -> dict[int, tuple[int, ...]]:
        """{root: how many of each flavor it takes} for ``roots`` (and the
        roots each is counted with)."""
        asks = resolve(view, self.flavors)
        counts: dict[int, list[int]] = {}
        for root in sorted(roots):
            if root in counts:
                continue
            group = together.get(root, (root,))
            placed = [placing.count(view, group, a) for a in asks]
            for r in group:
                counts[r] = [p[r] for p in placed]
        return {root: tuple(counts[root]) for root in roots}
