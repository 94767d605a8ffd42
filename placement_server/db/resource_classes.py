"""Resource classes: the standard ones (seeded) and CUSTOM_* ones."""
from collections.abc import Iterable
from collections.abc import Sequence

import os_resource_classes
import sqlalchemy as sa

from placement_server import errors
from placement_server.db import api
from placement_server.db import changes
from placement_server.db import tables

RC = tables.resource_classes


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


def create(conn: sa.Connection, name: str) -> bool:
    """Insert a custom class; False if it already exists."""
    try:
        with conn.begin_nested():
            conn.execute(RC.insert().values(name=name, created_at=api.utcnow()))
    except api.CONSTRAINT_VIOLATION:
        return False
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
