"""Fixtures shared by every test layer."""
import pytest

from tests import databases


@pytest.fixture(scope='session')
def _databases(tmp_path_factory):
    made = {}

    def get(backend):
        if backend not in made:
            made[backend] = databases.TestDatabase(
                backend, str(tmp_path_factory.mktemp('db')))
        return made[backend]
    yield get
    for test_db in made.values():
        test_db.drop()


@pytest.fixture(params=databases.BACKENDS)
def database(request, _databases):
    """A placement database on each backend, empty but for standard names."""
    test_db = _databases(request.param)
    test_db.reset()
    return test_db.db
