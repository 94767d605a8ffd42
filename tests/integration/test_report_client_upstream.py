"""The report client's functional tests, against upstream openstack-placement.

The very same test functions as tests/functional/test_report_client.py;
only ``placement`` differs: upstream placement from PyPI, a real gunicorn
process (tests/upstream.py), reached over HTTP through keystoneauth1.
"""
import pytest

from tests.functional.report_client_fixtures import Placement, http_adapter
from tests.functional.test_report_client import *  # noqa: F401,F403 (the tests)

pytestmark = pytest.mark.integration


@pytest.fixture
def placement(upstream_placement):  # noqa: F811 (replaces ours)
    return Placement(lambda: http_adapter(upstream_placement), 'upstream')
