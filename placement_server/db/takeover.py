"""Taking over a database upstream OpenStack Placement made.

Upstream records its schema in alembic's default table, ``alembic_version``;
ours records its own in ``placement_server_version``, so the two never
collide and upstream still finds its head after we took over (the way
back). Upstream's tables at its head are our first schema's tables and
columns (only constraint and index names differ, and nothing here reads
those); what ours adds on top (the change sequence, revision 0002) is new
tables upstream never reads, and ours numbers resource classes as upstream
does (revision 0003), so a database ours made goes to upstream too: ``db
sync`` stamps upstream's head in upstream's table (``stamp_upstream``).

``adopt`` runs inside ``db sync`` before our own migrations. For a
database of an older upstream revision it does what upstream's later
revisions do (as facts about the schema, not upstream's code), so that
the database is at upstream's head and upstream can serve it again.
"""
from collections.abc import Callable
from collections.abc import Collection
from typing import Any
from typing import NamedTuple

from alembic import migration as alembic_migration
from alembic import operations
import sqlalchemy as sa

from placement_server.db import online_migrations

UPSTREAM_VERSION_TABLE = 'alembic_version'
VERSION_TABLE = 'placement_server_version'

# Upstream's revisions, oldest first (openstack-placement 16.0.0's chain):
# what each one changed, which ``_UPSTREAM_STEPS`` repeats.
UPSTREAM_REVISIONS = (
    'b4ed3a175331',   # the initial schema (Stein)
    '611cd6dffd7b',   # refuses providers without a root provider id
    'b5c396305c25',   # refuses allocations without a consumer
    '422ece571366',   # consumer types
    'a082b8bb98d0',   # drops indexes a unique constraint already gives
)
UPSTREAM_HEAD = UPSTREAM_REVISIONS[-1]

# The schema upstream's head and our revision 0001 share.
OURS_AT_UPSTREAM_HEAD = '0001'
# Revisions of ours from before they had their own table.
_OURS_IN_ALEMBIC_VERSION = ('0001', '0002')

class Schema(NamedTuple):
    upstream: str | None
    ours: str | None


class UnknownRevision(Exception):
    """The database's schema is neither one of ours nor one of upstream's."""


def _revision(conn: sa.Connection, table: str) -> str | None:
    context = alembic_migration.MigrationContext.configure(
        conn, opts={'version_table': table})
    heads = context.get_current_heads()
    return ','.join(heads) if heads else None


def found(conn: sa.Connection) -> Schema:
    """The schema revisions in the database: upstream's, ours (None: none)."""
    tables = set(sa.inspect(conn).get_table_names())
    upstream: str | None = None
    ours: str | None = None
    if UPSTREAM_VERSION_TABLE in tables:
        upstream = _revision(conn, UPSTREAM_VERSION_TABLE)
        if upstream in _OURS_IN_ALEMBIC_VERSION:
            upstream, ours = None, upstream
    if VERSION_TABLE in tables:
        ours = _revision(conn, VERSION_TABLE) or ours
    return Schema(upstream, ours)


def check(schema: Schema, ours_known: Collection[str]) -> None:
    """UnknownRevision unless every revision in ``schema`` is known."""
    if schema.upstream and schema.upstream not in UPSTREAM_REVISIONS:
        raise UnknownRevision(
            "unknown schema revision %s in %s: not one of upstream placement's "
            "(up to %s)" % (schema.upstream, UPSTREAM_VERSION_TABLE, UPSTREAM_HEAD))
    if schema.ours and schema.ours not in ours_known:
        raise UnknownRevision('unknown schema revision %s in %s: newer than this '
                              'placement-server?' % (schema.ours, VERSION_TABLE))


def _consumer_types(op: operations.Operations) -> None:
    # Upstream 422ece571366: the consumer_types table, and each consumer's type.
    op.create_table(
        'consumer_types',
        sa.Column('created_at', sa.DateTime(), nullable=True),
        sa.Column('updated_at', sa.DateTime(), nullable=True),
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('name', sa.Unicode(length=255), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name', name='uniq_consumer_types0name'))
    with op.batch_alter_table('consumers') as batch:
        batch.add_column(sa.Column(
            'consumer_type_id', sa.Integer(),
            sa.ForeignKey('consumer_types.id', name='consumers_consumer_type_id_fkey'),
            nullable=True))
    op.create_index('consumers_consumer_type_id_idx', 'consumers', ['consumer_type_id'])


# Upstream a082b8bb98d0: indexes a unique constraint on the same columns made redundant.
_REDUNDANT_INDEXES = (
    ('inventories', 'inventories_resource_provider_id_idx'),
    ('inventories', 'inventories_resource_provider_resource_class_idx'),
    ('placement_aggregates', 'ix_placement_aggregates_uuid'),
    ('resource_providers', 'resource_providers_name_idx'),
    ('resource_providers', 'resource_providers_uuid_idx'),
)


def _drop_redundant_indexes(op: operations.Operations) -> None:
    for table, index in _REDUNDANT_INDEXES:
        op.drop_index(index, table_name=table)


def _no_change(op: operations.Operations) -> None:
    pass


# (revision, what brings the schema to it from the one before). The two
# revisions that refuse incomplete rows change no table: ``adopt`` fills
# such rows first, as upstream's online data migrations do.
_STEPS = ((UPSTREAM_REVISIONS[1], _no_change),
          (UPSTREAM_REVISIONS[2], _no_change),
          (UPSTREAM_REVISIONS[3], _consumer_types),
          (UPSTREAM_REVISIONS[4], _drop_redundant_indexes))


def adopt(conn: sa.Connection, conf: Any, stamp_ours: Callable[[str], object]) -> Schema:
    """Bring an upstream database to upstream's head and mark it as our
    first schema (``stamp_ours(revision)``); move a revision of ours out of
    upstream's table. Returns the Schema found before."""
    schema = found(conn)
    tables = set(sa.inspect(conn).get_table_names())
    if schema.upstream is None and schema.ours and VERSION_TABLE not in tables:
        # Ours from before its own table: alembic_version is upstream's name.
        stamp_ours(schema.ours)
        conn.execute(sa.text('DROP TABLE %s' % UPSTREAM_VERSION_TABLE))
        return schema
    if schema.upstream is None:
        return schema
    online_migrations.run_all(conn, conf)
    start = UPSTREAM_REVISIONS.index(schema.upstream)
    op = operations.Operations(alembic_migration.MigrationContext.configure(conn))
    for revision, step in _STEPS[start:]:
        step(op)
        conn.execute(sa.text('UPDATE %s SET version_num = :rev' % UPSTREAM_VERSION_TABLE),
                     {'rev': revision})
    if schema.ours is None:
        stamp_ours(OURS_AT_UPSTREAM_HEAD)
    return schema


def stamp_upstream(conn: sa.Connection, revision: str) -> None:
    """Record upstream's ``revision`` in its own table, as its ``db stamp`` does."""
    op = operations.Operations(alembic_migration.MigrationContext.configure(conn))
    if UPSTREAM_VERSION_TABLE not in sa.inspect(conn).get_table_names():
        op.create_table(UPSTREAM_VERSION_TABLE,
                        sa.Column('version_num', sa.String(32), nullable=False),
                        sa.PrimaryKeyConstraint('version_num', name='alembic_version_pkc'))
    conn.execute(sa.text('DELETE FROM %s' % UPSTREAM_VERSION_TABLE))
    conn.execute(sa.text('INSERT INTO %s (version_num) VALUES (:rev)' % UPSTREAM_VERSION_TABLE),
                 {'rev': revision})
