"""Consumers: who holds allocations, with their project, user, type and
generation.

A consumer row exists while the consumer has allocations: it is created
(generation 0, then bumped to 1 by the write) by its first allocation write
and deleted when its last allocation goes. Projects, users and consumer
types are created on first use. All of this happens in the caller's
transaction; a racing insert of the same name is absorbed by a savepoint.
"""
import sqlalchemy as sa

from placement_server.db import api
from placement_server.db import providers
from placement_server.db import tables

CONSUMER = tables.consumers
PROJECT = tables.projects
USER = tables.users
CTYPE = tables.consumer_types
ALLOC = tables.allocations


def _id_of(conn, table, column, value):
    """The id of the row whose ``column`` is ``value``, inserted if missing."""
    def lookup():
        return conn.execute(sa.select(table.c.id).where(column == value)).scalar()
    found = lookup()
    if found is not None:
        return found
    try:
        with conn.begin_nested():
            return conn.execute(table.insert().values(
                {column.name: value, 'created_at': api.utcnow()})
            ).inserted_primary_key[0]
    except sa.exc.IntegrityError:
        # Another transaction inserted it first and has committed.
        return lookup()


def project_id(conn, external_id):
    return _id_of(conn, PROJECT, PROJECT.c.external_id, external_id)


def user_id(conn, external_id):
    return _id_of(conn, USER, USER.c.external_id, external_id)


def consumer_type_id(conn, name):
    return _id_of(conn, CTYPE, CTYPE.c.name, name)


def view_query():
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


def lock(conn, uuids):
    """Lock the rows of those of ``uuids`` that exist (writers queue here)."""
    conn.execute(sa.select(CONSUMER.c.id).where(CONSUMER.c.uuid.in_(list(uuids)))
                 .with_for_update()).all()


def get_many(conn, uuids):
    """{uuid: row (as ``view_query``)} of those of ``uuids`` that exist."""
    rows = conn.execute(view_query().where(CONSUMER.c.uuid.in_(list(uuids)))).mappings()
    return {r['uuid']: r for r in rows}


def get(conn, uuid):
    """The consumer row (as ``view_query``) or None."""
    return get_many(conn, [uuid]).get(uuid)


def create(conn, uuid, project, user, type_id):
    """Insert a consumer at generation 0; None if it appeared meanwhile."""
    try:
        with conn.begin_nested():
            conn.execute(CONSUMER.insert().values(
                uuid=uuid, project_id=project, user_id=user, generation=0,
                consumer_type_id=type_id, created_at=api.utcnow()))
    except sa.exc.IntegrityError:
        return None
    return get(conn, uuid)


def update(conn, consumer, project, user, type_id):
    """Point the consumer at another project/user/type when they changed.

    A ``type_id`` of None (requests before 1.38) keeps the current type.
    """
    values = {}
    if project != consumer['project_id']:
        values['project_id'] = project
    if user != consumer['user_id']:
        values['user_id'] = user
    if type_id is not None and type_id != consumer['consumer_type_id']:
        values['consumer_type_id'] = type_id
    if values:
        conn.execute(CONSUMER.update().where(CONSUMER.c.id == consumer['id'])
                     .values(updated_at=api.utcnow(), **values))


def increment_generation(conn, consumer):
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
    return consumer['generation'] + 1


def delete_if_no_allocations(conn, uuids):
    """Delete those of the consumers ``uuids`` that hold no allocation."""
    if not uuids:
        return
    conn.execute(CONSUMER.delete().where(
        CONSUMER.c.uuid.in_(list(uuids)),
        ~sa.exists().where(ALLOC.c.consumer_id == CONSUMER.c.uuid)))
