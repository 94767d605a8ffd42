"""resource class ids as upstream placement's (standard: os-resource-classes
index, custom: from 10000)

Earlier versions numbered the standard classes from 1 in the order they
were seeded and custom ones after them; upstream placement reads a small
id as a standard class. Every row that names a class (the class itself,
inventories, allocations) moves to the new id, in two passes through
negative ids, so no id is ever held twice and no foreign key is ever
broken: a row is copied under its new id, what names it repointed, and
the old row deleted.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-27
"""
from alembic import op
import sqlalchemy as sa

from placement_server.db import resource_classes
from placement_server.db import tables

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

RC = tables.resource_classes
NAMING = (tables.inventories, tables.allocations)


def _move(conn: sa.Connection, old: int, new: int, name: str) -> None:
    row = conn.execute(sa.select(RC.c.created_at, RC.c.updated_at)
                       .where(RC.c.id == old)).one()
    conn.execute(RC.insert().values(id=new, name=name, created_at=row.created_at,
                                    updated_at=row.updated_at))
    for table in NAMING:
        conn.execute(table.update().where(table.c.resource_class_id == old)
                     .values(resource_class_id=new))
    conn.execute(RC.delete().where(RC.c.id == old))


def upgrade() -> None:
    conn = op.get_bind()
    names = dict(conn.execute(sa.select(RC.c.id, RC.c.name)).all())
    moves = {old: new for old, new in resource_classes.upstream_ids(names).items()
             if old != new}
    with resource_classes.zero_ids_kept(conn):
        # First out of the way (names too: they are unique), then home.
        for old, new in moves.items():
            _move(conn, old, -1 - new, 'renumbering %d' % new)
        for old, new in moves.items():
            _move(conn, -1 - new, new, names[old])
