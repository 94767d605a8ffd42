"""Traits: the standard ones (seeded from os-traits) and CUSTOM_* ones, and
the set of traits each provider has."""
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Sequence
from typing import NoReturn

import os_traits
import sqlalchemy as sa

from placement_server import errors
from placement_server.db import api
from placement_server.db import changes
from placement_server.db import providers
from placement_server.db import tables

TRAITS = tables.traits
RPT = tables.resource_provider_traits


def list_names(conn: sa.Connection, names: Iterable[str] | None = None,
               prefix: str | None = None,
               associated: bool | None = None) -> Sequence[tables.RowMap]:
    """(name, created_at, updated_at) rows, filtered, ordered by name."""
    query = sa.select(TRAITS.c.name, TRAITS.c.created_at, TRAITS.c.updated_at)
    if names is not None:
        query = query.where(TRAITS.c.name.in_(sorted(names)))
    if prefix is not None:
        query = query.where(TRAITS.c.name.startswith(prefix, autoescape=True))
    if associated is not None:
        used = TRAITS.c.id.in_(sa.select(RPT.c.trait_id))
        query = query.where(used if associated else ~used)
    return conn.execute(query.order_by(TRAITS.c.name)).mappings().all()


def get(conn: sa.Connection, name: str) -> tables.RowMap:
    row = conn.execute(sa.select(TRAITS).where(TRAITS.c.name == name)).mappings().first()
    if row is None:
        raise errors.NotFound('No such trait(s): %s.' % name)
    return row


def create(conn: sa.Connection, name: str) -> tuple[tables.RowMap, bool]:
    """Insert a custom trait; (row, created) where created is False if it
    already existed."""
    try:
        with conn.begin_nested():
            conn.execute(TRAITS.insert().values(name=name, created_at=api.utcnow()))
        created = True
        changes.note_names(conn)
    except api.CONSTRAINT_VIOLATION:
        created = False
    return get(conn, name), created


def delete(conn: sa.Connection, name: str) -> None:
    if name in os_traits.get_traits():
        raise errors.BadRequest('Cannot delete standard trait %s.' % name)
    row = get(conn, name)
    if conn.execute(sa.select(RPT.c.trait_id).where(RPT.c.trait_id == row['id'])
                    .limit(1)).first():
        raise errors.Conflict('The trait %s is in use by a resource provider.' % name)
    try:
        with conn.begin_nested():
            conn.execute(TRAITS.delete().where(TRAITS.c.id == row['id']))
        changes.note_names(conn)
    except api.CONSTRAINT_VIOLATION:
        # A provider took the trait since the check above.
        raise errors.Conflict('The trait %s is in use by a resource provider.' % name)


def of_provider(conn: sa.Connection, provider_id: int) -> Sequence[tables.RowMap]:
    """The provider's trait rows (name, created_at, updated_at), by name."""
    return conn.execute(
        sa.select(TRAITS.c.name, RPT.c.created_at, RPT.c.updated_at)
        .join(RPT, RPT.c.trait_id == TRAITS.c.id)
        .where(RPT.c.resource_provider_id == provider_id)
        .order_by(TRAITS.c.name)).mappings().all()


def _refuse_unknown(names: Collection[str]) -> NoReturn:
    raise errors.BadRequest('No such trait %s' % ', '.join(sorted(names)))


class Unchanged(Exception):
    """The provider already had exactly these traits. The write's first
    statement moved the generation, so the transaction must be rolled
    back: a write that changes nothing leaves the generation, as upstream
    does."""

    def __init__(self, generation: int) -> None:
        super().__init__(generation)
        self.generation = generation


def set_for_provider(conn: sa.Connection, uuid: str, names: Iterable[str],
                     generation: int) -> int:
    """Replace the provider's traits with ``names`` (all must exist).

    The generation must be ``generation``; it goes up by one when the set
    changes. Returns the provider's generation after the write; raises
    Unchanged when there was nothing to write.
    """
    row, changed = providers.take_and_replace_links(
        conn, uuid, generation, RPT.c.trait_id, TRAITS.c.name, set(names), _refuse_unknown,
        providers.CHANGED)
    if not changed:
        raise Unchanged(generation)
    new: int = row['generation']
    return new


def clear_provider(conn: sa.Connection, uuid: str) -> None:
    """Remove every trait of the provider; the generation goes up if any
    were removed."""
    row = providers.get(conn, uuid, for_update=True)
    removed = conn.execute(RPT.delete().where(RPT.c.resource_provider_id == row['id']))
    if removed.rowcount:
        changes.note(conn, [row['id']])
        providers.increment_generation(conn, row['id'], row['generation'])
