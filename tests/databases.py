"""Real databases for the tests: SQLite, PostgreSQL and MariaDB.

Each test run (each xdist worker) creates its own database on each server
and drops it at the end; between tests the rows are deleted, keeping the
schema and the seeded standard resource classes and traits. Where the
servers live can be changed with PLACEMENT_TEST_POSTGRESQL and
PLACEMENT_TEST_MYSQL (admin URLs); they are expected to be up: a test
that cannot reach them fails, it does not skip.

PLACEMENT_TEST_BACKENDS (comma-separated) narrows the engines: the quick
tier (``tools/run-tests.sh --quick``) runs on SQLite alone.
"""
import os
import uuid

import os_resource_classes
import os_traits
import sqlalchemy as sa

from placement_server.db import api
from placement_server.db import changes
from placement_server.db import migration
from placement_server.db import tables

BACKENDS = tuple(os.environ.get('PLACEMENT_TEST_BACKENDS', 'sqlite,postgresql,mysql')
                 .split(','))

ADMIN_URLS = {
    'postgresql': os.environ.get('PLACEMENT_TEST_POSTGRESQL',
                                 'postgresql+psycopg2://postgres@127.0.0.1:5432/postgres'),
    'mysql': os.environ.get('PLACEMENT_TEST_MYSQL',
                            'mysql+pymysql://root@127.0.0.1:3306/mysql'),
}

# Children before parents: the order rows can be deleted in.
_DELETE_ORDER = ['allocations', 'consumers', 'consumer_types', 'projects', 'users',
                 'inventories', 'resource_provider_traits',
                 'resource_provider_aggregates', 'placement_aggregates']


class TestDatabase:
    """One scratch database on one backend."""

    def __init__(self, backend, tmpdir, sync=True):
        self.backend = backend
        self.name = 'placement_test_%s' % uuid.uuid4().hex[:12]
        if backend == 'sqlite':
            self.url = 'sqlite:///%s' % os.path.join(tmpdir, self.name + '.sqlite')
        else:
            admin = sa.engine.make_url(ADMIN_URLS[backend])
            self._admin = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
            with self._admin.connect() as conn:
                conn.exec_driver_sql('CREATE DATABASE %s' % self.name)
            self.url = admin.set(database=self.name).render_as_string(hide_password=False)
        self.db = api.Database(self.url)
        if sync:
            migration.sync(self.db)

    def reset(self):
        """Delete every row a test may have written."""
        with self.db.writer() as conn:
            for name in _DELETE_ORDER:
                conn.execute(tables.metadata.tables[name].delete())
            rp = tables.resource_providers
            # providers point at each other: children first
            conn.execute(rp.update().values(parent_provider_id=None, root_provider_id=None))
            conn.execute(rp.delete())
            conn.execute(tables.resource_classes.delete().where(
                tables.resource_classes.c.name.not_in(os_resource_classes.STANDARDS)))
            conn.execute(tables.traits.delete().where(
                tables.traits.c.name.not_in(os_traits.get_traits())))
            # behind the workers' backs: their views load everything again
            changes.invalidate_all(conn)

    def drop(self):
        self.db.dispose()
        if self.backend != 'sqlite':
            with self._admin.connect() as conn:
                if self.backend == 'postgresql':
                    conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)' % self.name)
                else:
                    conn.exec_driver_sql('DROP DATABASE IF EXISTS %s' % self.name)
            self._admin.dispose()
