"""What each consumer holds of each provider, for the per-consumer series.

The resource view keeps usage summed per provider; openstack-exporter's
``resource_provider_allocations`` is one series per provider, consumer and
class. This side table keeps the allocation rows per provider and follows
the view as ``inventory.py`` does: after the view's refresh it reads again
only the trees the view says changed (an allocation write notes every
provider it touches), so a scrape of an unchanged cloud sends no query.
"""
from collections.abc import Iterable
from typing import Any

from placement_server.capacity import inventory
from placement_server.db import tables

ALLOC = tables.allocations

# {provider: [(consumer uuid, class, used)]}
Held = dict[int, list[tuple[str, int, int]]]

_COLUMNS = (ALLOC.c.resource_provider_id, ALLOC.c.consumer_id, ALLOC.c.resource_class_id,
            ALLOC.c.used)


def _add(into: Held, rows: Iterable[Any]) -> None:
    for rp, consumer, rc, used in rows:
        into.setdefault(rp, []).append((consumer, rc, int(used)))


Allocations = inventory.Kept[list[tuple[str, int, int]]]
_TABLE: inventory.SideTable[list[tuple[str, int, int]]] = inventory.SideTable(
    'consumer allocations', _COLUMNS, _add)
current = _TABLE.current
