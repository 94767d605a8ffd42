"""a token on each change record, and a record ending every counter

Each change record carries a random token so that a worker can tell the
history it followed from another one holding the same numbers (a restore,
a promoted replica: placement_server/db/changes.py). Every counter is
moved one on with a record of its own, as ``changes.invalidate_all`` does,
so that no counter is ever without a last record to check and no worker
that ran before this revision goes on from its old position.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""
import random

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # 0: the rows written before tokens (by a server of the version before,
    # still running in a rolling upgrade); no record is given 0 since.
    op.add_column('resource_view_changes',
                  sa.Column('token', sa.BigInteger(), server_default='0', nullable=False))
    op.execute('UPDATE resource_view_counters SET floor = seq + 1, seq = seq + 1')
    op.execute('DELETE FROM resource_view_changes')
    op.execute('INSERT INTO resource_view_changes (shard, seq, provider_id, token) '
               'SELECT shard, seq, 0, %d FROM resource_view_counters'
               % (random.getrandbits(62) + 1))
