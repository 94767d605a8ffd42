"""Resource classes: the standard ones (seeded) and CUSTOM_* ones.

Their ids are upstream placement's, so that either server can serve a
database the other made: a standard class's id is its index in
os-resource-classes (VCPU is 0), a custom class's the next from 10000 on.
"""
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import contextlib
import datetime

import os_resource_classes
import sqlalchemy as sa

from placement_server import errors
from placement_server import retry
from placement_server.db import api
from placement_server.db import changes
from placement_server.db import tables

RC = tables.resource_classes

FIRST_CUSTOM_ID = 10000
STANDARD_IDS = {name: i for i, name in enumerate(os_resource_classes.STANDARDS)}


def upstream_ids(classes: Mapping[int, str]) -> dict[int, int]:
    """{id: upstream's id} for the classes ``classes`` names by id: standard
    ones at their index, custom ones kept from 10000 on and the others
    given the next ids in the order of their old ones."""
    customs = [i for i, name in classes.items() if name not in STANDARD_IDS]
    next_id = max([i + 1 for i in customs if i >= FIRST_CUSTOM_ID], default=FIRST_CUSTOM_ID)
    wanted = {i: STANDARD_IDS[name] for i, name in classes.items() if name in STANDARD_IDS}
    for i in sorted(customs):
        if i >= FIRST_CUSTOM_ID:
            wanted[i] = i
        else:
            wanted[i], next_id = next_id, next_id + 1
    return wanted


@contextlib.contextmanager
def zero_ids_kept(conn: sa.Connection) -> Iterator[None]:
    """MySQL inserts an id of 0 (VCPU's) as it is, not as the next one."""
    if conn.dialect.name != 'mysql':
        yield
        return
    mode = conn.scalar(sa.text('SELECT @@SESSION.sql_mode'))
    conn.execute(sa.text("SET SESSION sql_mode = CONCAT_WS(',', :mode, 'NO_AUTO_VALUE_ON_ZERO')"),
                 {'mode': mode or None})
    try:
        yield
    finally:
        conn.execute(sa.text('SET SESSION sql_mode = :mode'), {'mode': mode})


def insert_standard(conn: sa.Connection, names: Iterable[str], now: datetime.datetime) -> None:
    """Insert the standard classes ``names``, each with its id."""
    rows = [{'id': STANDARD_IDS[n], 'name': n, 'created_at': now} for n in names]
    if rows:
        with zero_ids_kept(conn):
            conn.execute(RC.insert(), rows)
        changes.note_names(conn)


def list_all(conn: sa.Connection) -> Sequence[tables.RowMap]:
    return conn.execute(sa.select(RC.c.name, RC.c.created_at, RC.c.updated_at)
                        .order_by(RC.c.id)).mappings().all()


def get(conn: sa.Connection, name: str) -> tables.RowMap:
    row = conn.execute(sa.select(RC.c.id, RC.c.name, RC.c.created_at, RC.c.updated_at)
                       .where(RC.c.name == name)).mappings().first()
    if row is None:
        raise errors.NotFound('No such resource class %s.' % name)
    return row


_IDS = sa.select(RC.c.name, RC.c.id).where(RC.c.name.in_(sa.bindparam('names', expanding=True)))


def ids_by_name(conn: sa.Connection, names: Iterable[str]) -> dict[str, int]:
    """{name: id} for ``names``; an unknown name is a 400 naming it."""
    wanted = set(names)
    if not wanted:
        return {}
    found: dict[str, int] = dict(conn.execute(_IDS, {'names': sorted(wanted)}).all())
    unknown = wanted - set(found)
    if unknown:
        raise errors.ResourceClassNotFound('No such resource class %s.' % min(unknown))
    return found


_NEXT_CUSTOM_ID = sa.select(sa.func.coalesce(sa.func.max(RC.c.id) + 1, FIRST_CUSTOM_ID)) \
    .where(RC.c.id >= FIRST_CUSTOM_ID).scalar_subquery()


def create(conn: sa.Connection, name: str) -> bool:
    """Insert a custom class with the next custom id; False if it already
    exists. A writer that took the same id meanwhile makes the write run
    again."""
    try:
        with conn.begin_nested():
            conn.execute(RC.insert().from_select(
                ['id', 'name', 'created_at'],
                sa.select(_NEXT_CUSTOM_ID, sa.literal(name), sa.literal(api.utcnow()))))
    except api.CONSTRAINT_VIOLATION:
        if conn.scalar(sa.select(RC.c.id).where(RC.c.name == name)) is not None:
            return False
        raise retry.Replay(errors.Conflict(
            'Resource class %s: its id was taken by another writer.' % name))
    changes.note_names(conn)
    return True


def delete(conn: sa.Connection, name: str) -> None:
    if name in os_resource_classes.STANDARDS:
        raise errors.BadRequest('Error in delete resource class: '
                                'Cannot delete standard resource class %s.' % name)
    row = get(conn, name)
    in_use = conn.execute(
        sa.select(sa.literal(1)).where(sa.or_(
            sa.exists().where(tables.inventories.c.resource_class_id == row['id']),
            sa.exists().where(tables.allocations.c.resource_class_id == row['id'])))
    ).first()
    if in_use:
        raise errors.Conflict('Error in delete resource class: Cannot delete '
                              'resource class %s. Class is in use in inventory.' % name)
    conn.execute(RC.delete().where(RC.c.id == row['id']))
    changes.note_names(conn)


def rename(conn: sa.Connection, old: str, new: str) -> tables.RowMap:
    if old in os_resource_classes.STANDARDS:
        raise errors.BadRequest('Cannot update standard resource class %s' % old)
    row = get(conn, old)
    try:
        with conn.begin_nested():
            conn.execute(RC.update().where(RC.c.id == row['id'])
                         .values(name=new, updated_at=api.utcnow()))
        changes.note_names(conn)
    except api.CONSTRAINT_VIOLATION:
        raise errors.Conflict('Resource class already exists: %s' % new,
                              code=errors.DUPLICATE_NAME)
    return get(conn, new)
