"""Alembic environment: runs on the connection placement-manage hands it.

Our revisions live in their own version table (takeover.VERSION_TABLE):
alembic's default table is upstream placement's, left to it.
"""
from alembic import context

from placement_server.db import tables
from placement_server.db import takeover

connection = context.config.attributes['connection']
context.configure(connection=connection, target_metadata=tables.metadata,
                  version_table=takeover.VERSION_TABLE,
                  render_as_batch=connection.dialect.name == 'sqlite')
with context.begin_transaction():
    context.run_migrations()
