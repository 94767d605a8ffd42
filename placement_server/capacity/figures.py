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


@dataclasses.dataclass
class Resolved:
    """A flavor with names resolved to ids (None: a name placement lacks,
    so it fits nowhere)."""
    flavor: flavors_mod.Flavor
    resources: tuple[tuple[int, int], ...] | None
    required: frozenset[int] | None


def resolve(view: view_mod.ResourceView, flavors: list[flavors_mod.Flavor]) -> list[Resolved]:
    found = []
    for f in flavors:
        classes = [view.class_ids.get(n) for n, _ in f.resources]
        traits = [view.trait_ids.get(t) for t in f.required]
        found.append(Resolved(
            f, None if None in classes else tuple(
                (rc, amount) for rc, (_, amount) in zip(classes, f.resources)  # type: ignore[misc]
            ),
            None if None in traits else frozenset(traits)))  # type: ignore[arg-type]
    return found


def instances_in_tree(view: view_mod.ResourceView, root: int, flavor: Resolved) -> int:
    """How many more instances of ``flavor`` the tree of ``root`` holds."""
    if flavor.resources is None or flavor.required is None:
        return 0
    if not flavor.required <= view.traits.get(root, frozenset()):
        return 0
    members = view.members.get(root, ())
    fewest = None
    for rc, amount in flavor.resources:
        inventories = view.inventories.get(rc, {})
        used = view.used.get(rc, {})
        n = sum(flavors_mod.times_fit(amount, used.get(rp, 0), inventories[rp])
                for rp in members if rp in inventories)
        fewest = n if fewest is None else min(fewest, n)
        if not fewest:
            return 0
    return fewest or 0


def of_tree(view: view_mod.ResourceView, raw: inventory.Inventories, root: int,
            flavors: list[Resolved]) -> TreeFigures:
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
    fits = tuple(instances_in_tree(view, root, f) for f in flavors)
    return TreeFigures(root, lines, fits, free, largest, capacity)


class Trees:
    """Every tree's figures for one list of flavors, kept beside the view
    and brought up to date with it (names changed: all again, as a trait
    created since may be one a flavor asks for)."""

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
        if kept is None or changed is None:
            resolved = resolve(view, self.flavors)
            trees = {root: of_tree(view, raw, root, resolved) for root in view.members}
        else:
            trees = kept[1]
            if changed:
                resolved = resolve(view, self.flavors)
                for root in changed:
                    if root in view.members:
                        trees[root] = of_tree(view, raw, root, resolved)
                    else:
                        trees.pop(root, None)
        beside[self._key] = (view.version, trees, names)
        return trees
