"""The placement schema, as SQLAlchemy Core tables.

The shapes follow placement's own model (providers in trees, inventories
and allocations keyed by provider and resource class, consumers with
generations), so that a database migrated from this server holds the same
facts any placement holds. Queries live next to the handlers' needs in the
other ``db`` modules; this module only says what is stored.
"""
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

# A row read by column name (SQLAlchemy's RowMapping): its keys typed Any,
# so that it is the Mapping[str, ...] its readers take.
RowMap = Mapping[Any, Any]

# What a uuid column holds (a dashed uuid's length)
UUID_LENGTH = 36

metadata = sa.MetaData(naming_convention={
    'ix': 'ix_%(table_name)s_%(column_0_N_name)s',
    'uq': 'uq_%(table_name)s_%(column_0_N_name)s',
    'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
    'pk': 'pk_%(table_name)s',
})


def _timestamps() -> tuple[sa.Column[Any], sa.Column[Any]]:
    return (sa.Column('created_at', sa.DateTime, nullable=False),
            sa.Column('updated_at', sa.DateTime, nullable=True))


resource_classes = sa.Table(
    'resource_classes', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.String(255), nullable=False, unique=True),
    *_timestamps())

traits = sa.Table(
    'traits', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.String(255), nullable=False, unique=True),
    *_timestamps())

resource_providers = sa.Table(
    'resource_providers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(UUID_LENGTH), nullable=False, unique=True),
    sa.Column('name', sa.String(200), nullable=False, unique=True),
    sa.Column('generation', sa.Integer, nullable=False, default=0),
    # root_provider_id is the provider's own id for a root; it is never
    # NULL once the insert transaction commits.
    sa.Column('root_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=True, index=True),
    sa.Column('parent_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=True, index=True),
    *_timestamps(),
    # SQLite would otherwise give a deleted newest provider's id to the next
    # one; provider ids are never reused on any backend (the summaries of
    # GET /allocation_candidates are kept per id and generation).
    sqlite_autoincrement=True)

inventories = sa.Table(
    'inventories', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=False),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), nullable=False, index=True),
    sa.Column('total', sa.Integer, nullable=False),
    sa.Column('reserved', sa.Integer, nullable=False),
    sa.Column('min_unit', sa.Integer, nullable=False),
    sa.Column('max_unit', sa.Integer, nullable=False),
    sa.Column('step_size', sa.Integer, nullable=False),
    sa.Column('allocation_ratio', sa.Double, nullable=False),
    *_timestamps(),
    sa.UniqueConstraint('resource_provider_id', 'resource_class_id'))

placement_aggregates = sa.Table(
    'placement_aggregates', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(UUID_LENGTH), nullable=False, unique=True),
    *_timestamps())

resource_provider_aggregates = sa.Table(
    'resource_provider_aggregates', metadata,
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), primary_key=True),
    sa.Column('aggregate_id', sa.Integer,
              sa.ForeignKey('placement_aggregates.id'), primary_key=True,
              index=True),
    *_timestamps())

resource_provider_traits = sa.Table(
    'resource_provider_traits', metadata,
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), primary_key=True),
    sa.Column('trait_id', sa.Integer, sa.ForeignKey('traits.id'),
              primary_key=True, index=True),
    *_timestamps())

projects = sa.Table(
    'projects', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('external_id', sa.String(255), nullable=False, unique=True),
    *_timestamps())

users = sa.Table(
    'users', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('external_id', sa.String(255), nullable=False, unique=True),
    *_timestamps())

consumer_types = sa.Table(
    'consumer_types', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('name', sa.String(255), nullable=False, unique=True),
    *_timestamps())

consumers = sa.Table(
    'consumers', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('uuid', sa.String(UUID_LENGTH), nullable=False, unique=True),
    sa.Column('project_id', sa.Integer, sa.ForeignKey('projects.id'),
              nullable=False),
    sa.Column('user_id', sa.Integer, sa.ForeignKey('users.id'),
              nullable=False),
    sa.Column('generation', sa.Integer, nullable=False, default=0),
    sa.Column('consumer_type_id', sa.Integer,
              sa.ForeignKey('consumer_types.id'), nullable=True),
    *_timestamps(),
    sa.Index('ix_consumers_project_id_user_id', 'project_id', 'user_id'))

allocations = sa.Table(
    'allocations', metadata,
    sa.Column('id', sa.Integer, primary_key=True, autoincrement=True),
    sa.Column('resource_provider_id', sa.Integer,
              sa.ForeignKey('resource_providers.id'), nullable=False),
    sa.Column('consumer_id', sa.String(UUID_LENGTH), nullable=False, index=True),
    sa.Column('resource_class_id', sa.Integer,
              sa.ForeignKey('resource_classes.id'), nullable=False),
    sa.Column('used', sa.Integer, nullable=False),
    *_timestamps(),
    sa.Index('ix_allocations_resource_provider_id_resource_class_id',
             'resource_provider_id', 'resource_class_id'))

# The change sequence workers' resource views follow (db/changes.py): one
# counter row per shard, and one row per provider a write changed.
resource_view_counters = sa.Table(
    'resource_view_counters', metadata,
    sa.Column('shard', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('seq', sa.BigInteger, nullable=False),
    # changes of this shard numbered below floor have been pruned
    sa.Column('floor', sa.BigInteger, nullable=False))

resource_view_changes = sa.Table(
    'resource_view_changes', metadata,
    sa.Column('shard', sa.Integer, primary_key=True, autoincrement=False),
    sa.Column('seq', sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column('provider_id', sa.Integer, primary_key=True, autoincrement=False),
    # random, one per record: which history the record belongs to
    sa.Column('token', sa.BigInteger, nullable=False, server_default='0'))
