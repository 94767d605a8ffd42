"""End to end with a real keystone: catalog, tokens, roles, policy.

Keystone (from PyPI, its own virtualenv) is bootstrapped on SQLite with
fernet tokens; placement is registered in its catalog and served by
``placement-server --auth-strategy keystone``. Clients authenticate with a
username and password through keystoneauth1 and find placement by
service type, as nova and the tracker agent do.
"""
import os

from keystoneauth1 import adapter
import pytest
import requests

from tests import upstream
from tests.integration import keystone as keystone_mod
from tests.integration import servers

pytestmark = pytest.mark.integration

VERSION = '1.39'


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('keystone-e2e'))
    keystone = keystone_mod.Keystone(os.path.join(workdir, 'keystone')).start()
    placement = None
    try:
        port = upstream.free_port()
        placement_url = 'http://127.0.0.1:%d' % port
        keystone.user('placement', 'placement-secret', 'service', ['service', 'admin'])
        keystone.register_service('placement', 'placement', placement_url)
        keystone.user('nova', 'nova-secret', 'service', ['service'])
        keystone.user('demo', 'demo-secret', 'demo', ['member'])
        conf_path = os.path.join(workdir, 'placement.conf')
        with open(conf_path, 'w') as f:
            f.write('[keystone_authtoken]\n'
                    'www_authenticate_uri = %(auth)s\n'
                    'auth_url = %(auth)s\n'
                    'auth_type = password\n'
                    'username = placement\n'
                    'password = placement-secret\n'
                    'project_name = service\n'
                    'user_domain_name = Default\n'
                    'project_domain_name = Default\n' % {'auth': keystone.auth_url})
        placement = servers.Server(
            'sqlite:///%s' % os.path.join(workdir, 'placement.sqlite'), workdir,
            workers=2, auth_strategy='keystone', port=port, config_file=conf_path,
            sync_db=True).start()
        yield keystone, placement
    finally:
        if placement:
            placement.stop()
        keystone.stop()


def _placement(keystone, user, password, project):
    """A client that knows only keystone, and finds placement in the catalog."""
    return adapter.Adapter(keystone.session(user, password, project),
                           service_type='placement', interface='public',
                           region_name=keystone_mod.REGION,
                           default_microversion=VERSION, raise_exc=False)


def test_a_service_user_finds_placement_in_the_catalog_and_works(deployment):
    keystone, placement = deployment
    nova = _placement(keystone, 'nova', 'nova-secret', 'service')
    assert nova.get_endpoint().rstrip('/') == placement.url
    resp = nova.post('/resource_providers', json={'name': 'compute-e2e'})
    assert resp.status_code == 200, resp.text
    uuid = resp.json()['uuid']
    assert resp.headers['OpenStack-API-Version'] == 'placement %s' % VERSION
    listed = nova.get('/resource_providers?name=compute-e2e')
    assert listed.status_code == 200
    assert [rp['uuid'] for rp in listed.json()['resource_providers']] == [uuid]


def test_the_cloud_admin_works_too(deployment):
    keystone, _ = deployment
    admin = _placement(keystone, 'admin', keystone_mod.ADMIN_PASSWORD, 'admin')
    resp = admin.get('/resource_classes')
    assert resp.status_code == 200
    assert 'VCPU' in [rc['name'] for rc in resp.json()['resource_classes']]


def test_a_token_without_the_role_is_refused(deployment):
    keystone, _ = deployment
    demo = _placement(keystone, 'demo', 'demo-secret', 'demo')
    resp = demo.get('/resource_providers')
    assert resp.status_code == 403
    error, = resp.json()['errors']
    assert error['code'] == 'placement.undefined_code'
    assert 'placement:resource_providers:list' in error['detail']
    # but a member may read its own project's usages, as upstream allows
    project_id = demo.session.get_project_id()
    own = demo.get('/usages?project_id=%s' % project_id)
    assert own.status_code == 200, own.text


def test_no_token_is_401_pointing_at_keystone(deployment):
    keystone, placement = deployment
    resp = requests.get(placement.url + '/resource_providers', timeout=30,
                        headers={'OpenStack-API-Version': 'placement %s' % VERSION})
    assert resp.status_code == 401
    assert keystone.auth_url in resp.headers.get('WWW-Authenticate', '')


def test_a_forged_token_is_401(deployment):
    _, placement = deployment
    resp = requests.get(placement.url + '/resource_providers', timeout=30,
                        headers={'X-Auth-Token': 'gAAAAAforged'})
    assert resp.status_code == 401


def test_the_version_document_needs_no_token(deployment):
    _, placement = deployment
    resp = requests.get(placement.url + '/', timeout=30)
    assert resp.status_code == 200
    assert resp.json()['versions'][0]['max_version'] == VERSION
