"""The report client configured as on a real compute host: keystone in front.

Only a tracker config file: [placement] with password credentials,
auth_url, region and interface. The client authenticates with keystone,
finds placement in the catalog by service type and syncs a host against
our server running with ``auth_strategy = keystone``.
"""
import pytest

from tests.functional.report_client_fixtures import ROOT
from tests.functional.report_client_fixtures import VM1
from tests.functional.report_client_fixtures import host
from tests.integration import keystone as keystone_mod
from tests.integration.test_keystone import deployment  # noqa: F401 (fixture)
from tracker import conf as tracker_conf
from tracker.drivers.base import Instance
from tracker.placement import errors
from tracker.report_client import ReportClient

pytestmark = pytest.mark.integration


def tracker_conf_file(tmp_path, keystone, password):
    path = tmp_path / 'tracker.conf'
    path.write_text(
        '[placement]\n'
        'auth_type = password\n'
        'auth_url = %s\n'
        'username = nova\n'
        'password = %s\n'
        'project_name = service\n'
        'user_domain_name = Default\n'
        'project_domain_name = Default\n'
        'region_name = %s\n'
        'valid_interfaces = public\n'
        'connect_retries = 0\n' % (keystone.auth_url, password, keystone_mod.REGION))
    return str(path)


def test_the_client_finds_placement_through_keystone_and_syncs(deployment, tmp_path):
    keystone, placement = deployment
    conf = tracker_conf.load(config_files=[tracker_conf_file(tmp_path, keystone,
                                                             'nova-secret')])
    client = ReportClient(conf)
    assert client.http.adapter.get_endpoint().rstrip('/') == placement.url
    result = client.sync(host())
    assert result.errors == [] and len(result.created) == 5
    vm = Instance(VM1, project_id='p', user_id='u', allocations={ROOT: {'VCPU': 1}})
    assert client.sync_allocations(ROOT, [vm]).created == [VM1]
    assert client.sync(host()).requests == 0
    client.delete_allocations(VM1)
    assert client.sync([p for p in host() if p.parent_uuid is None]).errors == []


def test_wrong_credentials_are_a_clear_unreachable(deployment, tmp_path):
    keystone, _ = deployment
    conf = tracker_conf.load(config_files=[tracker_conf_file(tmp_path, keystone, 'wrong')])
    client = ReportClient(conf)
    with pytest.raises(errors.PlacementUnreachable, match='Unauthorized'):
        client.sync(host())
