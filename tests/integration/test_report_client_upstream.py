"""The report client's functional tests, against upstream openstack-placement.

The very same test functions as tests/functional/test_report_client.py;
only ``placement`` differs: upstream placement from PyPI, a real gunicorn
process (tests/upstream.py), reached over HTTP through keystoneauth1.
"""
import pytest

from tests.functional.report_client_fixtures import Placement
from tests.functional.report_client_fixtures import http_adapter
from tests.functional.test_report_client import *  # noqa: F401,F403 (the tests)
from tests.functional.test_report_client_allocations import *  # noqa: F401,F403

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


def test_placement_is_found_in_the_service_catalog(upstream_placement):
    """A keystone catalog naming placement's endpoint is all the client needs."""
    from keystoneauth1 import access
    from keystoneauth1 import adapter as ks_adapter
    from keystoneauth1 import fixture as ks_fixture
    from keystoneauth1 import session as ks_session
    from keystoneauth1.identity import access as access_plugin

    from tracker.report_client import ReportClient
    token = ks_fixture.V3Token()
    token.add_service('compute').add_standard_endpoints(public='http://nova.invalid')
    token.add_service('placement').add_standard_endpoints(public=upstream_placement,
                                                          internal=upstream_placement)
    # noauth2 upstream: the token is the user, 'admin'
    auth = access_plugin.AccessInfoPlugin(access.create(body=token, auth_token='admin'))
    adapter = ks_adapter.Adapter(ks_session.Session(auth=auth), service_type='placement',
                                 interface='internal')
    client = ReportClient(adapter=adapter)
    assert client.sync(host()).errors == []
    assert client.fetch_tree(ROOT).get(ROOT).name == 'test-host'
