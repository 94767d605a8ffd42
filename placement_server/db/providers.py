"""Resource providers: lookup and the generation compare-and-swap.

Every write to a provider's inventories, traits, aggregates or allocations
goes through ``increment_generation``: an UPDATE guarded by the generation
the writer read, so a concurrent writer makes it touch no row and the
request fails with placement.concurrent_update instead of overwriting.
"""
import sqlalchemy as sa

from placement_server import errors
from placement_server.db import api
from placement_server.db import tables

RP = tables.resource_providers


class ConcurrentUpdate(errors.Conflict):
    code = errors.CONCURRENT_UPDATE


def get(conn, uuid, for_update=False):
    """The provider row (id, uuid, name, generation, parent/root ids) or 404."""
    query = sa.select(RP).where(RP.c.uuid == uuid)
    if for_update:
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    if row is None:
        raise errors.NotFound('No resource provider with uuid %s found' % uuid,
                              code=errors.PROVIDER_NOT_FOUND)
    return row


def increment_generation(conn, provider_id, expected):
    """generation += 1 if it is still ``expected``; else 409 concurrent_update.

    Returns the new generation.
    """
    result = conn.execute(
        RP.update()
        .where(RP.c.id == provider_id, RP.c.generation == expected)
        .values(generation=expected + 1, updated_at=api.utcnow()))
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            'resource provider generation conflict: the provider was updated '
            'by another request since generation %d was read; refresh and '
            'try again.' % expected)
    return expected + 1
