"""The operator layers in process: health check, metrics, CORS, policy file."""
import prometheus_client
import pytest
import webob

from placement_server import deploy
from placement_server import metrics
from placement_server import policy
from placement_server.db import api as db_api
from tests.functional import client as client_mod


@pytest.fixture(autouse=True)
def default_policy_afterwards():
    # init_application binds the process's enforcer to its conf; give the
    # next test the defaults back.
    yield
    policy._ENFORCER = None


def make_conf(tmp_path, text=''):
    path = tmp_path / 'placement.conf'
    path.write_text('[api]\nauth_strategy = noauth2\n' + text)
    return deploy.load_conf(config_files=[str(path)])


def get(app, path, **headers):
    req = webob.Request.blank(path, headers=headers)
    return req.get_response(app)


def test_healthcheck_reports_the_database(database, tmp_path):
    app = deploy.init_application(make_conf(tmp_path), database)
    resp = get(app, '/healthcheck')
    assert resp.status_int == 200
    assert resp.text == 'OK'
    resp = get(app, '/healthcheck', Accept='application/json')
    assert resp.json['reasons'] == ['OK']


def test_healthcheck_is_503_when_the_database_is_unreachable(tmp_path):
    down = db_api.Database('postgresql+psycopg2://nobody@127.0.0.1:1/placement')
    app = deploy.init_application(make_conf(tmp_path), down)
    resp = get(app, '/healthcheck', Accept='application/json')
    assert resp.status_int == 503
    assert resp.json['reasons'] == ['database: unreachable']


def test_healthcheck_drains_by_file(database, tmp_path):
    flag = tmp_path / 'drain'
    conf = make_conf(tmp_path, '[healthcheck]\nbackends = database, disable_by_file\n'
                               'disable_by_file_path = %s\n' % flag)
    app = deploy.init_application(conf, database)
    assert get(app, '/healthcheck').status_int == 200
    flag.touch()
    resp = get(app, '/healthcheck')
    assert resp.status_int == 503 and 'DISABLED BY FILE' in resp.text
    # Draining only fails the check: the API still answers.
    assert get(app, '/resource_providers', **{'X-Auth-Token': 'admin'}).status_int == 200
    flag.unlink()
    assert get(app, '/healthcheck').status_int == 200


def _count(route, method, status):
    return prometheus_client.REGISTRY.get_sample_value(
        'placement_http_requests_total',
        {'route': route, 'method': method, 'status': status}) or 0


def test_metrics_count_by_route_template(database, tmp_path):
    app = deploy.init_application(make_conf(tmp_path), database)
    client = client_mod.Client(app)
    before = _count('/resource_providers/{uuid}', 'GET', '404')
    unmatched = _count('unmatched', 'GET', '404')
    for _ in range(3):
        assert client.get('/resource_providers/%s' % ('1' * 32)).status_int == 404
    client.get('/no/such/path')
    assert _count('/resource_providers/{uuid}', 'GET', '404') == before + 3
    assert _count('unmatched', 'GET', '404') == unmatched + 1
    scrape = metrics.scrape_app({'PATH_INFO': '/metrics', 'REQUEST_METHOD': 'GET'},
                                lambda status, headers: None)
    assert 'placement_http_request_duration_seconds_bucket' in scrape[0].decode()


def test_metrics_are_not_on_the_api_port(database, tmp_path):
    app = deploy.init_application(make_conf(tmp_path), database)
    assert get(app, '/metrics').status_int == 401
    assert get(app, '/metrics', **{'X-Auth-Token': 'admin'}).status_int == 404


def test_cors_is_off_by_default(database, tmp_path):
    app = deploy.init_application(make_conf(tmp_path), database)
    resp = get(app, '/', Origin='https://dashboard.example')
    assert 'Access-Control-Allow-Origin' not in resp.headers


def test_cors_when_an_origin_is_allowed(database, tmp_path):
    conf = make_conf(tmp_path, '[cors]\nallowed_origin = https://dashboard.example\n')
    app = deploy.init_application(conf, database)
    req = webob.Request.blank('/resource_providers', method='OPTIONS', headers={
        'Origin': 'https://dashboard.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'X-Auth-Token,OpenStack-API-Version'})
    resp = req.get_response(app)
    assert resp.status_int == 200
    assert resp.headers['Access-Control-Allow-Origin'] == 'https://dashboard.example'
    allowed = resp.headers['Access-Control-Allow-Headers'].lower()
    assert 'openstack-api-version' in allowed and 'x-auth-token' in allowed
    other = get(app, '/', Origin='https://evil.example')
    assert 'Access-Control-Allow-Origin' not in other.headers


def test_the_service_reads_its_policy_file(database, tmp_path):
    (tmp_path / 'policy.yaml').write_text('"placement:resource_classes:list": "role:reader"\n')
    conf = make_conf(tmp_path, '[oslo_policy]\npolicy_file = %s\n' % (tmp_path / 'policy.yaml'))
    app = deploy.init_application(conf, database)
    reader = client_mod.Client(app, token='carol:proj')
    assert reader.get('/resource_classes', version='1.2',
                      headers={'X-Roles': 'reader'}).status_int == 200
    assert reader.get('/traits', version='1.6',
                      headers={'X-Roles': 'reader'}).status_int == 403
