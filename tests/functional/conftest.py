"""In-process API tests: the full WSGI stack, no network."""
import pytest

from tests import databases
from tests.functional import client as client_mod


@pytest.fixture
def api(database):
    """An admin client of a placement app on each database backend."""
    return client_mod.Client(client_mod.make_app(database))


@pytest.fixture(params=[b for b in ('postgresql', 'mysql') if b in databases.BACKENDS])
def server_database(request, _databases):
    """A placement database on PostgreSQL and MariaDB only: for races that
    need transactions really running side by side (SQLite has one writer)."""
    test_db = _databases(request.param)
    test_db.reset()
    return test_db.db
