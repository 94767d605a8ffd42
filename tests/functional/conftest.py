"""In-process API tests: the full WSGI stack, no network."""
import pytest

from tests.functional import client as client_mod


@pytest.fixture
def api(database):
    """An admin client of a placement app on each database backend."""
    return client_mod.Client(client_mod.make_app(database))
