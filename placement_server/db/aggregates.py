"""Aggregates: the uuids a provider is associated with.

An aggregate exists in placement only as a uuid in placement_aggregates,
created the first time a provider is put in it.
"""
from collections.abc import Iterable
from collections.abc import Sequence

import sqlalchemy as sa

from placement_server.db import api
from placement_server.db import providers
from placement_server.db import tables

AGG = tables.placement_aggregates
RPA = tables.resource_provider_aggregates


def of_provider(conn: sa.Connection, provider_id: int) -> Sequence[tables.RowMap]:
    """The provider's aggregate rows (uuid, created_at, updated_at), by uuid."""
    return conn.execute(
        sa.select(AGG.c.uuid, RPA.c.created_at, RPA.c.updated_at)
        .join(RPA, RPA.c.aggregate_id == AGG.c.id)
        .where(RPA.c.resource_provider_id == provider_id)
        .order_by(AGG.c.uuid)).mappings().all()


def ensure(conn: sa.Connection, uuids: Iterable[str]) -> dict[str, int]:
    """{uuid: id} for ``uuids``, inserting the ones not yet known."""
    wanted = set(uuids)
    if not wanted:
        return {}
    query = sa.select(AGG.c.uuid, AGG.c.id).where(AGG.c.uuid.in_(sorted(wanted)))
    found: dict[str, int] = dict(conn.execute(query).all())
    for uuid in sorted(wanted - set(found)):
        try:
            # A concurrent writer may create the same aggregate: that is fine.
            with conn.begin_nested():
                conn.execute(AGG.insert().values(uuid=uuid, created_at=api.utcnow()))
        except api.CONSTRAINT_VIOLATION:
            pass
    if len(found) < len(wanted):
        found = dict(conn.execute(query).all())
    return found


def set_for_provider(conn: sa.Connection, uuid: str, aggregate_uuids: Iterable[str],
                     generation: int | None = None) -> int:
    """Replace the provider's aggregates.

    With ``generation`` (1.19+) the write is a compare-and-swap that bumps
    the provider's generation, even when the set is unchanged (as upstream
    does); without it (before 1.19) the generation is left alone.
    Returns the provider's generation after the write.
    """
    wanted = set(aggregate_uuids)

    def unknown(new: Iterable[str]) -> dict[str, int]:
        return ensure(conn, new)
    if generation is None:
        row = providers.get(conn, uuid, for_update=True)
        providers.replace_links(conn, RPA.c.aggregate_id, AGG.c.uuid, row['id'], wanted,
                                unknown)
    else:
        row, _ = providers.take_and_replace_links(conn, uuid, generation, RPA.c.aggregate_id,
                                                  AGG.c.uuid, wanted, unknown,
                                                  conflict=providers.CHANGED)
    generation_now: int = row['generation']
    return generation_now
