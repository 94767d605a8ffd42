"""GET /allocation_candidates: provider summaries, from the resource view.

A summary is a provider's capacity and usage per resource class, and its
traits. The view keeps each provider's summary with nothing used, built
when first shown and dropped when the provider changes; usage is laid over
it per request.
"""
from collections.abc import Collection
from collections.abc import Iterable
from typing import Any

from placement_server.candidates.view import ResourceView
from placement_server.candidates.view import Row

# (uuid, generation) of a provider
Version = tuple[str, int]
# {class name: (capacity, used)}
Resources = dict[str, tuple[int, int]]

# Distinct summary parts kept for sharing (most of a cloud's providers show
# the same few); beyond this many, changes have left most unused.
INTERNED_LIMIT = 100000

# {(provider, class name): amount used}
Used = dict[tuple[int, str], int]


def tree_members_and_usage(view: ResourceView, root_ids: Iterable[int]
                           ) -> tuple[list[Row], Used]:
    """Rows (id, uuid, parent id, root id, generation) of every provider in
    the given trees, and their usage."""
    members = [view.rows[rp] for root in root_ids for rp in view.members.get(root, ())]
    used = {}
    for row in members:
        rp = row[0]
        for rc in view.used_of.get(rp, ()):
            used[rp, view.class_names[rc]] = view.used[rc][rp]
    return members, used

def summaries_data(view: ResourceView, versions: dict[int, Version],
                   roots: Collection[int] | None = None,
                   known_usage: Used | None = None
                   ) -> tuple[dict[int, Resources], dict[int, list[str]]]:
    """``summaries.summaries_data``, from memory ({provider: {class
    name: (capacity, used)}}, {provider: [trait names]})."""
    resources, traits = {}, {}
    for rp in versions:
        idle, names = _summary(view, rp)
        used_classes = view.used_of.get(rp)
        if used_classes:
            resources[rp] = {
                name: (capacity, view.used[view.class_ids[name]].get(rp, 0)
                       if view.class_ids[name] in used_classes else 0)
                for name, (capacity, _) in idle.items()}
        else:
            resources[rp] = idle
        traits[rp] = names
    return resources, traits

def _summary(view: ResourceView, rp: int) -> tuple[Resources, list[str]]:
    entry = view.summaries.get(rp)
    if entry is None:
        idle = {view.class_names[rc]: (int(view.inventories[rc][rp][0]), 0)
                for rc in sorted(view.classes_of.get(rp, ()))}
        # in trait id order (standard traits before custom ones), as upstream lists them
        names = [view.trait_names[t] for t in sorted(view.traits.get(rp, ()))]
        entry = view.summaries[rp] = (_intern(view, idle), _intern(view, names))
    return entry

def _intern(view: ResourceView, value: Any) -> Any:
    """One object per distinct summary part, shared by every provider
    that shows it (render works each out once, see render.py)."""
    key = (type(value), tuple(value.items()) if isinstance(value, dict) else tuple(value))
    if len(view.interned) > INTERNED_LIMIT:
        # the shared parts of providers changed since: start again
        view.interned.clear()
    return view.interned.setdefault(key, value)


