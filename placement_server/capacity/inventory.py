"""Inventories as operators read them: total, reserved, allocation ratio.

The resource view keeps each inventory as the one capacity the search
compares against ((total - reserved) * allocation_ratio); Prometheus series
in openstack-exporter's names need the three columns. This side table keeps
them per provider and follows the view: after the view's refresh it reads
again only the trees the view says changed (``trees_changed_since``), so a
scrape of an unchanged cloud sends no query of its own.
"""
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses
from typing import Any
from typing import Generic
from typing import TypeVar
import weakref

import sqlalchemy as sa

from placement_server import view as view_mod
from placement_server.db import tables

INV = tables.inventories

# (total, reserved, allocation_ratio)
Raw = tuple[int, int, float]

_COLUMNS = (INV.c.resource_provider_id, INV.c.resource_class_id, INV.c.total,
            INV.c.reserved, INV.c.allocation_ratio)

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



Row = TypeVar('Row')


@dataclasses.dataclass
class Kept(Generic[Row]):
    """A side table's rows per provider as of the view's ``version``."""
    version: int = -1
    of: dict[int, Row] = dataclasses.field(default_factory=dict)


class SideTable(Generic[Row]):
    """Rows per provider, kept beside the view under ``key`` and read again
    only for the trees the view says changed. ``columns`` start with the
    provider id; ``add`` files rows into ``Kept.of``."""

    def __init__(self, key: str, columns: Sequence[Any],
                 add: Callable[[dict[int, Row], Iterable[Any]], None]) -> None:
        self.key = key
        self._add = add
        self._all = sa.select(*columns)
        self._of_providers = view_mod.ByIds(
            lambda holds: sa.select(*columns).where(holds(columns[0])))

    def current(self, view: view_mod.ResourceView, conn: sa.Connection) -> Kept[Row]:
        """The rows matching ``view`` (refreshed by the caller, who holds its
        lock)."""
        kept: Kept[Row] | None = beside(view).get(self.key)
        changed = None if kept is None else view.trees_changed_since(kept.version)
        if kept is None or changed is None:
            kept = Kept(view.version, {})
            self._add(kept.of, view_mod.fetch_all(conn, self._all))
        elif changed:
            members = view.members
            ids = {rp for root in changed for rp in members.get(root, ())}
            # Providers moved or deleted: whatever the table had of them goes.
            for rp in [rp for rp in kept.of if rp not in view.rows or rp in ids]:
                del kept.of[rp]
            self._add(kept.of, self._of_providers.rows(conn, ids))
            kept.version = view.version
        beside(view)[self.key] = kept
        return kept


def _add(into: dict[int, dict[int, Raw]], rows: Iterable[Any]) -> None:
    for rp, rc, total, reserved, ratio in rows:
        into.setdefault(rp, {})[rc] = (int(total), int(reserved), float(ratio))


# {provider: {class: Raw}}
Inventories = Kept[dict[int, Raw]]
_TABLE: SideTable[dict[int, Raw]] = SideTable('inventories', _COLUMNS, _add)
current = _TABLE.current
