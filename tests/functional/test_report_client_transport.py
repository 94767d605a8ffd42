"""The report client's wire behaviour: retries, request ids, microversions.

A sick or old placement is played by a small WSGI app in front of the real
one (or instead of it), reached through PlacementDirect's transport; an
unreachable one is a closed port.
"""
import json
import logging
import socket

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import cfg
import pytest

from placement_server import direct
from placement_server.direct import PlacementDirect
from tests.functional.report_client_fixtures import ROOT
from tests.functional.report_client_fixtures import host
from tests.functional.report_client_fixtures import http_adapter
from tracker import conf as tracker_conf
from tracker.placement import errors
from tracker.placement.client import ReportClient
from tracker.placement.options import list_opts


def adapter_onto(app):
    session = ks_session.Session(auth=token_endpoint.Token(direct.ENDPOINT, 'admin'))
    session.session.mount(direct.ENDPOINT, direct.WSGITransport(app))
    return ks_adapter.Adapter(session, service_type='placement', raise_exc=False)


def fast_retry_conf(retries=2):
    conf = cfg.ConfigOpts()
    tracker_conf.register_opts(conf)
    conf([], project='tracker', default_config_files=[])
    conf.set_override('connect_retries', retries, group='placement')
    conf.set_override('connect_retry_delay', 0.01, group='placement')
    return conf


class Sick:
    """Answers 503 to the first ``failures`` requests, then passes them on."""

    def __init__(self, app, failures):
        self.app = app
        self.failures = failures
        self.seen = []

    def __call__(self, environ, start_response):
        self.seen.append((environ['REQUEST_METHOD'], environ['PATH_INFO'],
                          environ.get('HTTP_X_OPENSTACK_REQUEST_ID'),
                          environ.get('HTTP_OPENSTACK_API_VERSION')))
        if self.failures > 0:
            self.failures -= 1
            start_response('503 Service Unavailable', [('Content-Type', 'text/plain')])
            return [b'busy']
        return self.app(environ, start_response)


def old_placement(max_version):
    def app(environ, start_response):
        body = {'versions': [{'id': 'v1.0', 'min_version': '1.0', 'status': 'CURRENT',
                              'max_version': max_version, 'links': []}]}
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [json.dumps(body).encode()]
    return app


@pytest.fixture
def app(database):
    placement = PlacementDirect(database)
    with placement:
        yield placement.app


def closed_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_503s_are_retried_with_backoff_then_the_sync_succeeds(app):
    sick = Sick(app, failures=2)
    client = ReportClient(fast_retry_conf(), adapter=adapter_onto(sick))
    result = client.sync(host())
    assert result.errors == [] and len(result.created) == 5
    assert client.counters.retries == 2
    assert sick.seen[0][:2] == sick.seen[1][:2] == sick.seen[2][:2] == ('GET', '/')


def test_a_server_that_stays_sick_is_unreachable_after_bounded_retries(app):
    sick = Sick(app, failures=1000)
    client = ReportClient(fast_retry_conf(retries=3), adapter=adapter_onto(sick))
    with pytest.raises(errors.PlacementUnreachable, match='after 4 attempts'):
        client.sync(host())
    assert len(sick.seen) == 4


def test_unreachable_placement(caplog):
    client = ReportClient(fast_retry_conf(retries=1),
                          adapter=http_adapter('http://127.0.0.1:%d' % closed_port()))
    with pytest.raises(errors.PlacementUnreachable):
        client.sync(host())
    assert client.counters.requests == 2
    with caplog.at_level(logging.WARNING):
        assert client.aggregate_add_host(ROOT, 'test-host') is False
    assert 'not written (a later sync reconciles)' in caplog.text


def test_every_request_carries_the_global_request_id_and_microversion(app):
    seen = Sick(app, failures=0)
    client = ReportClient(adapter=adapter_onto(seen))
    client.sync(host())
    first = client.http.global_request_id
    second = client.new_request_id()
    assert first != second and second.startswith('req-')
    client.sync_allocations(ROOT, [])
    ids = [s[2] for s in seen.seen]
    assert set(ids) == {first, second}
    assert seen.seen[0][3] is None                      # GET / learns the range
    assert {s[3] for s in seen.seen[1:]} == {'placement 1.39'}


def test_a_placement_older_than_nested_providers_is_refused():
    client = ReportClient(adapter=adapter_onto(old_placement('1.10')))
    with pytest.raises(errors.PlacementTooOld, match='up to microversion 1.10'):
        client.sync(host())


def test_the_client_settles_on_the_servers_newest_version(app):
    client = ReportClient(adapter=adapter_onto(old_placement('1.29')))
    assert client.microversion == '1.29'
    assert not client.http.supports('reshaper')
    assert client.http.supports('consumer_generation')


def test_placement_options_are_keystoneauth_ones_plus_ours():
    [(group, opts)] = list_opts()
    names = {o.name for o in opts}
    assert group == 'placement'
    assert {'auth_type', 'auth-url', 'password', 'username', 'region-name',
            'valid-interfaces', 'endpoint-override', 'service-type',
            'association_refresh_interval',
            'generation_conflict_retries'} <= names
    assert len(names) == len(opts)


def test_a_client_needs_conf_or_adapter():
    with pytest.raises(ValueError):
        ReportClient()


def test_after_an_outage_the_client_rereads_placement_and_converges(app):
    sick = Sick(app, failures=0)
    client = ReportClient(fast_retry_conf(retries=1), adapter=adapter_onto(sick))
    client.sync(host())
    desired = host()
    desired[0].inventories.pop('MEMORY_MB')
    sick.failures = 1000
    with pytest.raises(errors.PlacementUnreachable):
        client.sync(desired)
    sick.failures = 0
    sick.seen.clear()
    result = client.sync(desired)
    assert result.errors == [] and result.updated == {ROOT: ['inventories']}
    assert sick.seen[0][:2] == ('GET', '/resource_providers')   # placement's word first
    assert 'MEMORY_MB' not in client.fetch_tree(ROOT).get(ROOT).inventories


def test_placement_direct_from_a_placement_conf(tmp_path):
    from placement_server import conf as server_conf
    conf = cfg.ConfigOpts()
    server_conf.register_opts(conf)
    conf([], project='placement', default_config_files=[])
    conf.set_override('connection', 'sqlite:///%s/p.sqlite' % tmp_path,
                      group='placement_database')
    with PlacementDirect(conf, sync=True) as adapter:
        assert conf.api.auth_strategy == 'noauth2'
        resp = adapter.get('/resource_providers?name=x', microversion='1.39')
        assert resp.status_code == 200 and resp.json() == {'resource_providers': []}
        assert resp.headers['OpenStack-API-Version'] == 'placement 1.39'
        resp = adapter.post('/resource_providers', json={'name': 'bad' * 100},
                            microversion='1.39')
        assert resp.status_code == 400
        assert resp.json()['errors'][0]['code'] == 'placement.undefined_code'
    assert conf.api.auth_strategy == 'keystone'      # the caller's conf is as it was


def test_a_catalog_without_placement_is_unreachable_at_once():
    from keystoneauth1 import access
    from keystoneauth1 import fixture as ks_fixture
    from keystoneauth1.identity import access as access_plugin
    token = ks_fixture.V3Token()
    token.add_service('compute').add_standard_endpoints(public='http://nova.example')
    auth = access_plugin.AccessInfoPlugin(access.create(body=token, auth_token='tok'))
    adapter = ks_adapter.Adapter(ks_session.Session(auth=auth), service_type='placement')
    client = ReportClient(fast_retry_conf(retries=3), adapter=adapter)
    with pytest.raises(errors.PlacementUnreachable, match='EndpointNotFound'):
        client.sync(host())
    assert client.counters.requests == 1 and client.counters.retries == 0
