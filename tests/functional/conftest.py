"""In-process API tests: the full WSGI stack, no network."""
import pytest

from tests import databases
from tests.functional import client as client_mod


@pytest.fixture
def api(database):
    """An admin client of a placement app on each database backend."""
    return client_mod.Client(client_mod.make_app(database))


def _database_on(name, *backends):
    """A fixture ``name``: an emptied placement database on each of
    ``backends`` that this run tests."""
    @pytest.fixture(name=name, params=[b for b in backends if b in databases.BACKENDS])
    def database_on(request, _databases):
        test_db = _databases(request.param)
        test_db.reset()
        return test_db.db
    return database_on


# PostgreSQL and MariaDB only: for races that need transactions really
# running side by side (SQLite has one writer).
server_database = _database_on('server_database', 'postgresql', 'mysql')
# One engine: for what only that engine's driver does.
pg_database = _database_on('pg_database', 'postgresql')
mysql_database = _database_on('mysql_database', 'mysql')
