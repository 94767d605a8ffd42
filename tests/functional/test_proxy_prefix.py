"""The application mounted under a prefix behind a proxy, in process.

A WSGI server mounting the app at /placement hands it SCRIPT_NAME
/placement; a proxy may instead say the prefix (X-Forwarded-Prefix) and
the scheme and host the client used, which the app believes only with
[oslo_middleware] enable_proxy_headers_parsing (tests/integration/
test_server_facing.py compares the same answers with upstream's).
"""
import pytest
import webob

from placement_server import deploy
from placement_server import policy

RP = '5c2c9a2e-8e0a-4a4e-9a51-6d7c0d3e1f10'
HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39',
           'Host': 'cloud.example', 'Content-Type': 'application/json'}


@pytest.fixture(autouse=True)
def default_policy_afterwards():
    yield
    policy._ENFORCER = None


def _app(database, tmp_path, parse_proxy_headers):
    path = tmp_path / 'placement.conf'
    path.write_text('[api]\nauth_strategy = noauth2\n[oslo_middleware]\n'
                    'enable_proxy_headers_parsing = %s\n' % parse_proxy_headers)
    return deploy.init_application(deploy.load_conf(config_files=[str(path)]), database)


def _create(app, script_name='', **headers):
    req = webob.Request.blank('/resource_providers', method='POST',
                              headers=dict(HEADERS, **headers),
                              environ={'SCRIPT_NAME': script_name})
    req.body = b'{"name": "cn1", "uuid": "%s"}' % RP.encode()
    resp = req.get_response(app)
    assert resp.status_int == 200, resp.text
    return resp


def test_a_mounted_app_links_under_its_mount(database, tmp_path):
    app = _app(database, tmp_path, 'false')
    resp = _create(app, '/placement')
    assert resp.headers['Location'] == 'http://cloud.example/placement/resource_providers/' + RP
    assert {link['href'] for link in resp.json['links']} >= {
        '/placement/resource_providers/' + RP,
        '/placement/resource_providers/%s/inventories' % RP}
    # the list, kept per worker, is not shared between mounts
    for mount in ('/placement', '', '/placement'):
        req = webob.Request.blank('/resource_providers', headers=HEADERS,
                                  environ={'SCRIPT_NAME': mount})
        listed = req.get_response(app).json['resource_providers']
        assert listed[0]['links'][0]['href'] == mount + '/resource_providers/' + RP


def test_proxy_headers_are_believed_only_when_enabled(database, tmp_path):
    proxied = {'X-Forwarded-Proto': 'https', 'X-Forwarded-Prefix': '/placement'}
    resp = _create(_app(database, tmp_path, 'true'), **proxied)
    assert resp.headers['Location'] == 'https://cloud.example/placement/resource_providers/' + RP
    assert resp.json['links'][0]['href'] == '/placement/resource_providers/' + RP


def test_proxy_headers_are_ignored_by_default(database, tmp_path):
    proxied = {'X-Forwarded-Proto': 'https', 'X-Forwarded-Prefix': '/placement'}
    resp = _create(_app(database, tmp_path, 'false'), **proxied)
    assert resp.headers['Location'] == 'http://cloud.example/resource_providers/' + RP
