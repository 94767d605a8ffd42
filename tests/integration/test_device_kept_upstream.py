"""A device kept while allocated (tests/functional/test_device_kept.py),
against upstream openstack-placement: its refusal to delete a provider
holding allocations is what the agent relies on."""
import pytest

from tests.functional.report_client_fixtures import Placement
from tests.functional.report_client_fixtures import http_adapter
from tests.functional.test_device_kept import *  # noqa: F401,F403 (the tests)

pytestmark = pytest.mark.integration


@pytest.fixture
def placement(upstream_placement):  # noqa: F811 (replaces ours)
    return Placement(lambda: http_adapter(upstream_placement), 'upstream')
