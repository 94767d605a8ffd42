"""Beside nova-compute against upstream openstack-placement 16.0.0: the
very same tests as tests/functional/test_beside_nova.py (consumers written
as nova 34 writes them, untyped; the repairs upstream must accept); only
``placement`` differs (tests/upstream.py, a real process over HTTP)."""
import pytest

from tests.functional.report_client_fixtures import Placement
from tests.functional.report_client_fixtures import http_adapter
from tests.functional.test_beside_nova import *  # noqa: F401,F403 (the tests)

pytestmark = pytest.mark.integration


@pytest.fixture
def placement(upstream_placement):  # noqa: F811 (replaces ours)
    return Placement(lambda: http_adapter(upstream_placement), 'upstream')
