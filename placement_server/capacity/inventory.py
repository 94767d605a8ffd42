"""Inventories as operators read them: total, reserved, allocation ratio.

The resource view keeps each inventory as the one capacity the search
compares against ((total - reserved) * allocation_ratio); Prometheus series
in openstack-exporter's names need the three columns. This side table keeps
them per provider and follows the view: after the view's refresh it reads
again only the trees the view says changed (``trees_changed_since``), so a
scrape of an unchanged cloud sends no query of its own.
"""
import dataclasses
from typing import Any
import weakref

import sqlalchemy as sa

from placement_server import view as view_mod
from placement_server.db import tables

INV = tables.inventories

# (total, reserved, allocation_ratio)
Raw = tuple[int, int, float]

_COLUMNS = (INV.c.resource_provider_id, INV.c.resource_class_id, INV.c.total,
            INV.c.reserved, INV.c.allocation_ratio)
_ALL = sa.select(*_COLUMNS)
_OF_PROVIDERS = view_mod.ByIds(
    lambda holds: sa.select(*_COLUMNS).where(holds(INV.c.resource_provider_id)))


@dataclasses.dataclass
class Inventories:
    """{provider: {class: Raw}} as of the view's ``version``."""
    version: int = -1
    of: dict[int, dict[int, Raw]] = dataclasses.field(default_factory=dict)


# What this package keeps beside each view, by key. Not in the view's own
# ``answers``, whose entries are the candidates' (and bounded by their
# count); a whole reload of the view shows here as trees_changed_since
# answering None.
_BESIDE: 'weakref.WeakKeyDictionary[view_mod.ResourceView, dict[Any, Any]]' = (
    weakref.WeakKeyDictionary())


def beside(view: view_mod.ResourceView) -> dict[Any, Any]:
    """What capacity keeps beside ``view`` (the caller holds its lock)."""
    kept = _BESIDE.get(view)
    if kept is None:
        kept = _BESIDE[view] = {}
    return kept


_KEY = 'inventories'


def _add(into: dict[int, dict[int, Raw]], rows: Any) -> None:
    for rp, rc, total, reserved, ratio in rows:
        into.setdefault(rp, {})[rc] = (int(total), int(reserved), float(ratio))


def current(view: view_mod.ResourceView, conn: sa.Connection) -> Inventories:
    """The raw inventories matching ``view`` (refreshed by the caller, who
    holds its lock), read again only where the view changed."""
    kept: Inventories | None = beside(view).get(_KEY)
    changed = None if kept is None else view.trees_changed_since(kept.version)
    if kept is None or changed is None:
        kept = Inventories(view.version, {})
        _add(kept.of, view_mod.fetch_all(conn, _ALL))
    elif changed:
        members = view.members
        ids = {rp for root in changed for rp in members.get(root, ())}
        # Providers moved or deleted: whatever the table had of them goes.
        for rp in [rp for rp in kept.of if rp not in view.rows or rp in ids]:
            del kept.of[rp]
        _add(kept.of, _OF_PROVIDERS.rows(conn, ids))
        kept.version = view.version
    beside(view)[_KEY] = kept
    return kept
