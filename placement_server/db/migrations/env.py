"""Alembic environment: runs on the connection placement-manage hands it."""
from alembic import context

from placement_server.db import tables

connection = context.config.attributes['connection']
context.configure(connection=connection, target_metadata=tables.metadata,
                  render_as_batch=connection.dialect.name == 'sqlite')
with context.begin_transaction():
    context.run_migrations()
