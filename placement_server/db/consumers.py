"""Consumers: who holds allocations, with their project, user, type and
generation.

A consumer row exists while the consumer has allocations: it is created
(at generation 1) by its first allocation write and deleted when its last
allocation goes. Projects, users and consumer types are created on first
use. All of this happens in the caller's transaction; when a concurrent
request inserted the same row first, ``InsertRace`` asks the caller to
replay the transaction.
"""
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
import contextlib
from typing import Any

import sqlalchemy as sa

from placement_server.db import api
from placement_server.db import providers
from placement_server.db import tables

CONSUMER = tables.consumers
PROJECT = tables.projects
USER = tables.users
CTYPE = tables.consumer_types
ALLOC = tables.allocations


class InsertRace(providers.ConcurrentUpdate):
    """Another transaction inserted the same consumer, project, user or
    type first (its insert waited for that one to commit): the write is
    replayed, and finds the row. Inserting without a savepoint saves two
    round trips on every first use."""


@contextlib.contextmanager
def raced(what: str) -> Iterator[None]:
    """A unique key already holding what was inserted here, as InsertRace."""
    try:
        yield
    except api.CONSTRAINT_VIOLATION:
        raise InsertRace('%s was created by another request meanwhile; try again.' % what)


def _insert(conn: sa.Connection, table: sa.Table, values: dict[str, Any]) -> int:
    """Insert a row; its id, or InsertRace when a unique key already holds it."""
    with raced(table.name.rstrip('s')):
        key = conn.execute(table.insert(), values).inserted_primary_key
        assert key is not None
        return int(key[0])


def _id_of(conn: sa.Connection, table: sa.Table, column: sa.Column[Any], value: str) -> int:
    """The id of the row whose ``column`` is ``value``, inserted if missing."""
    found = conn.execute(sa.select(table.c.id).where(column == value)).scalar()
    if found is not None:
        return int(found)
    return _insert(conn, table, {column.name: value, 'created_at': api.utcnow()})


# What a consumer points at by name: {kind: (table, name column)}.
NAMED = {'project': (PROJECT, PROJECT.c.external_id),
         'user': (USER, USER.c.external_id),
         'consumer_type': (CTYPE, CTYPE.c.name)}


def named_id(conn: sa.Connection, kind: str, name: str,
             known: dict[tuple[str, str], int]) -> int:
    """The id of the project, user or consumer type (``kind``) ``name``.

    ``known`` is {(kind, name): id} of what the caller already read (a
    request reads all its names in one statement); a name not in it is
    looked up or inserted, and remembered there.
    """
    key = (kind, name)
    if key not in known:
        table, column = NAMED[kind]
        known[key] = _id_of(conn, table, column, name)
    return known[key]


def view_query() -> sa.Select[Any]:
    """A consumer with its project, user and type names."""
    return (sa.select(CONSUMER.c.id, CONSUMER.c.uuid, CONSUMER.c.generation,
                      CONSUMER.c.project_id, CONSUMER.c.user_id,
                      CONSUMER.c.consumer_type_id,
                      PROJECT.c.external_id.label('project_external_id'),
                      USER.c.external_id.label('user_external_id'),
                      CTYPE.c.name.label('consumer_type'))
            .select_from(CONSUMER.join(PROJECT, PROJECT.c.id == CONSUMER.c.project_id)
                         .join(USER, USER.c.id == CONSUMER.c.user_id)
                         .outerjoin(CTYPE, CTYPE.c.id == CONSUMER.c.consumer_type_id)))


# What a writer reads of the consumers it locks (``lock``; an allocation
# write's first statement reads them in this order too).
LOCKED_COLUMNS = ('id', 'uuid', 'generation', 'project_id', 'user_id', 'consumer_type_id')
_LOCK = (sa.select(*[CONSUMER.c[name] for name in LOCKED_COLUMNS])
         .where(CONSUMER.c.uuid.in_(sa.bindparam('uuids', expanding=True)))
         .with_for_update())


def by_given(conn: sa.Connection, uuids: Iterable[str], rows: Iterable[tables.RowMap]
              ) -> dict[str, tables.RowMap]:
    """{uuid as given: its row}: a row the database found by another
    spelling (``api.uuid_key``) is found here too."""
    found = {api.uuid_key(conn, r['uuid']): r for r in rows}
    return {u: found[api.uuid_key(conn, u)] for u in uuids if api.uuid_key(conn, u) in found}


def lock(conn: sa.Connection, uuids: Iterable[str]) -> dict[str, tables.RowMap]:
    """Lock the rows of those of ``uuids`` that exist (writers queue here);
    {uuid as given: row (id, uuid, generation and the ids it points at)}."""
    uuids = list(uuids)
    return by_given(conn, uuids, conn.execute(_LOCK, {'uuids': uuids}).mappings())


def get_many(conn: sa.Connection, uuids: Iterable[str]) -> dict[str, tables.RowMap]:
    """{uuid as given: row (as ``view_query``)} of those of ``uuids`` that exist."""
    uuids = list(uuids)
    return by_given(conn, uuids, conn.execute(
        view_query().where(CONSUMER.c.uuid.in_(uuids))).mappings())


def get(conn: sa.Connection, uuid: str) -> tables.RowMap | None:
    """The consumer row (as ``view_query``) or None."""
    return get_many(conn, [uuid]).get(uuid)


def create(conn: sa.Connection, uuid: str, project: int, user: int,
           type_id: int | None) -> dict[str, Any]:
    """Insert a consumer at generation 1, as its first write leaves it; the
    row as ``lock`` gives it, without its id.

    The row goes with the write's next statement (``api.insert_later``),
    so a consumer another request inserted meanwhile is found there, or
    at the commit: the caller turns it into InsertRace (``raced``).
    """
    values = dict(uuid=uuid, project_id=project, user_id=user, generation=1,
                  consumer_type_id=type_id)
    api.insert_later(conn, CONSUMER, [dict(values, created_at=api.utcnow())])
    return values


def update(conn: sa.Connection, consumer: Mapping[str, Any], project: int, user: int,
           type_id: int | None) -> None:
    """Point the consumer at another project/user/type when they changed.

    A ``type_id`` of None (requests before 1.38) keeps the current type.
    """
    values: dict[str, Any] = {}
    if project != consumer['project_id']:
        values['project_id'] = project
    if user != consumer['user_id']:
        values['user_id'] = user
    if type_id is not None and type_id != consumer['consumer_type_id']:
        values['consumer_type_id'] = type_id
    if values:
        conn.execute(CONSUMER.update().where(CONSUMER.c.id == consumer['id'])
                     .values(updated_at=api.utcnow(), **values))


def increment_generation(conn: sa.Connection, consumer: Mapping[str, Any]) -> int:
    """generation += 1 if unchanged since read; else 409 concurrent_update."""
    result = conn.execute(
        CONSUMER.update()
        .where(CONSUMER.c.id == consumer['id'],
               CONSUMER.c.generation == consumer['generation'])
        .values(generation=consumer['generation'] + 1, updated_at=api.utcnow()))
    if result.rowcount != 1:
        raise providers.ConcurrentUpdate(
            'consumer generation conflict: consumer %s was updated by another '
            'request; refresh and try again.' % consumer['uuid'])
    return int(consumer['generation']) + 1


def delete_if_no_allocations(conn: sa.Connection, uuids: Collection[str]) -> None:
    """Delete those of the consumers ``uuids`` that hold no allocation."""
    if not uuids:
        return
    conn.execute(CONSUMER.delete().where(
        CONSUMER.c.uuid.in_(list(uuids)),
        ~sa.exists().where(ALLOC.c.consumer_id == CONSUMER.c.uuid)))
