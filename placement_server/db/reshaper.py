"""The reshaper: new inventories and moved allocations, all or nothing.

Used when a provider tree changes shape under running consumers (a vGPU
inventory moving from the compute node to a child provider): inventories
and allocations are replaced in the caller's one transaction, so any
error leaves every row as it was.
"""
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from placement_server import errors
from placement_server.db import allocations
from placement_server.db import inventories as inventories_db
from placement_server.db import providers


def _check_generation(uuid: str, row: Mapping[str, Any], generation: int) -> None:
    """409 naming the provider as the body spelt it, as upstream."""
    if generation != row['generation']:
        raise providers.ConcurrentUpdate(
            'resource provider generation conflict for provider %s: '
            'actual: %d, given: %d' % (uuid, row['generation'], generation))


def _provider(conn: sa.Connection, uuid: str, for_update: bool = True) -> Any:
    try:
        return providers.get(conn, uuid, for_update=for_update)
    except errors.NotFound as e:
        raise errors.BadRequest('Resource provider %s in inventories not found: %s'
                                % (uuid, e.message),
                                code=errors.PROVIDER_NOT_FOUND)


def reshape(conn: sa.Connection,
            inventories: Mapping[str, tuple[int, Mapping[str, Mapping[str, Any]]]],
            consumers: Sequence[Any]) -> None:
    """Replace inventories, then allocations, in ``conn``'s transaction.

    ``inventories`` is {provider uuid: (generation, {class: fields})};
    ``consumers`` a list of allocations.ConsumerAllocations. A class a
    provider loses stays until the allocations have moved off it, then
    goes (409 placement.inventory.inuse if something still uses it).

    Generations move as upstream's (clients that chain reshapes count on
    it): the interim pass writes each provider given some inventory, the
    allocations bump every provider they touch, the final pass writes every
    provider named.
    """
    # Judged first in the body's order, as upstream: each provider must
    # exist (400), then have the generation given (409). Then locked in
    # uuid order (and judged again under the lock).
    for uuid, (generation, _) in inventories.items():
        _check_generation(uuid, _provider(conn, uuid, for_update=False), generation)
    for uuid in sorted(inventories):
        generation, wanted = inventories[uuid]
        row = _provider(conn, uuid)
        _check_generation(uuid, row, generation)
        if not wanted:
            continue
        current = inventories_db.get_all(conn, row['id'])
        interim = {rc: current[rc] for rc in set(current) - set(wanted)}
        interim.update(wanted)
        inventories_db.replace_inventories(conn, row, interim, generation)
    if consumers:
        allocations.write(conn, consumers)
    for uuid in sorted(inventories):
        row = providers.get(conn, uuid)
        inventories_db.replace_inventories(conn, row, inventories[uuid][1])
