"""the change sequence resource views follow

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24
"""
from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

SHARDS = 8   # placement_server.db.changes.SHARDS when this was written


def upgrade() -> None:
    counters = op.create_table(
        'resource_view_counters',
        sa.Column('shard', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('seq', sa.BigInteger(), nullable=False),
        sa.Column('floor', sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint('shard', name=op.f('pk_resource_view_counters')))
    op.create_table(
        'resource_view_changes',
        sa.Column('shard', sa.Integer(), autoincrement=False, nullable=False),
        sa.Column('seq', sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column('provider_id', sa.Integer(), autoincrement=False, nullable=False),
        sa.PrimaryKeyConstraint('shard', 'seq', 'provider_id',
                                name=op.f('pk_resource_view_changes')))
    op.bulk_insert(counters, [{'shard': s, 'seq': 0, 'floor': 0} for s in range(SHARDS)])
