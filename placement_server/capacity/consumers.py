"""What each consumer holds of each provider, for the per-consumer series.

The resource view keeps usage summed per provider; openstack-exporter's
``resource_provider_allocations`` is one series per provider, consumer and
class. This side table keeps the allocation rows per provider and follows
the view as ``inventory.py`` does: after the view's refresh it reads again
only the trees the view says changed (an allocation write notes every
provider it touches), so a scrape of an unchanged cloud sends no query.
"""
from collections.abc import Iterable
import dataclasses
from typing import Any

import sqlalchemy as sa

from placement_server import view as view_mod
from placement_server.capacity import inventory
from placement_server.db import tables

ALLOC = tables.allocations

# {provider: [(consumer uuid, class, used)]}
Held = dict[int, list[tuple[str, int, int]]]

_COLUMNS = (ALLOC.c.resource_provider_id, ALLOC.c.consumer_id, ALLOC.c.resource_class_id,
            ALLOC.c.used)
_ALL = sa.select(*_COLUMNS)
_OF_PROVIDERS = view_mod.ByIds(
    lambda holds: sa.select(*_COLUMNS).where(holds(ALLOC.c.resource_provider_id)))

_KEY = 'consumer allocations'


@dataclasses.dataclass
class Allocations:
    """``of`` as of the view's ``version``."""
    version: int = -1
    of: Held = dataclasses.field(default_factory=dict)


def _add(into: Held, rows: Iterable[Any]) -> None:
    for rp, consumer, rc, used in rows:
        into.setdefault(rp, []).append((consumer, rc, int(used)))


def current(view: view_mod.ResourceView, conn: sa.Connection) -> Allocations:
    """The allocations matching ``view`` (refreshed by the caller, who
    holds its lock), read again only where the view changed."""
    kept: Allocations | None = inventory.beside(view).get(_KEY)
    changed = None if kept is None else view.trees_changed_since(kept.version)
    if kept is None or changed is None:
        kept = Allocations(view.version, {})
        _add(kept.of, view_mod.fetch_all(conn, _ALL))
    elif changed:
        members = view.members
        ids = {rp for root in changed for rp in members.get(root, ())}
        for rp in [rp for rp in kept.of if rp not in view.rows or rp in ids]:
            del kept.of[rp]
        _add(kept.of, _OF_PROVIDERS.rows(conn, ids))
        kept.version = view.version
    inventory.beside(view)[_KEY] = kept
    return kept
