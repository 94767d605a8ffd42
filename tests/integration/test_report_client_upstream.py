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


def test_a_client_built_from_placement_options(upstream_placement, tmp_path):
    """[placement] keystoneauth options alone lead the client to placement."""
    from tracker import conf as tracker_conf
    from tracker.report_client import ReportClient
    path = tmp_path / 'tracker.conf'
    path.write_text('[placement]\nauth_type = admin_token\nendpoint = %s\n'
                    'token = admin\n' % upstream_placement)
    client = ReportClient(tracker_conf.load(config_files=[str(path)]))
    result = client.sync(host())
    assert result.errors == [] and len(result.created) == 5
    assert client.sync(host()).requests == 0
