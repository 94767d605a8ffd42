"""Schema migrations (alembic) and the standard resource classes and traits.

``sync`` is what ``placement-manage db sync`` and ``placement-server
--sync-db`` run: upgrade to the newest schema, then make sure every
standard resource class and trait the installed os-resource-classes and
os-traits know is in the database. Running it again changes nothing.
"""
import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script
import os_resource_classes
import os_traits
import sqlalchemy as sa

from placement_server.db import api
from placement_server.db import changes
from placement_server.db import tables

_HERE = os.path.join(os.path.dirname(__file__), 'migrations')


def _config(connection=None):
    cfg = alembic_config.Config(os.path.join(_HERE, 'alembic.ini'))
    cfg.set_main_option('script_location', _HERE)
    cfg.attributes['connection'] = connection
    return cfg


def head():
    return alembic_script.ScriptDirectory.from_config(_config()).get_current_head()


def current(db):
    with db.engine.connect() as conn:
        return alembic_migration.MigrationContext.configure(conn).get_current_revision()


def is_current(db):
    return current(db) == head()


@api.retry_on_deadlock
def _seed(db):
    now = api.utcnow()
    with db.writer() as conn:
        for table, names in ((tables.resource_classes, os_resource_classes.STANDARDS),
                             (tables.traits, os_traits.get_traits())):
            have = set(conn.scalars(sa.select(table.c.name)))
            new = [{'name': n, 'created_at': now} for n in names if n not in have]
            if new:
                conn.execute(table.insert(), new)
                changes.note_names(conn)


def sync(db):
    """Create or upgrade the schema, then seed the standard names."""
    with db.engine.begin() as conn:
        command.upgrade(_config(conn), 'head')
    _seed(db)
