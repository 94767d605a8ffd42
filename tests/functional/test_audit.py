"""CADF audit notifications ([audit]): off by default; when on, a request
and a response event per request, naming the caller and the target
through etc/placement/api_audit_map.conf; ignore_req_list honoured; a
missing map file refused when the app is built."""
import json
import logging
import os

from keystonemiddleware import audit as ks_audit
import pytest

from tests.functional import client as client_mod

MAP = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, 'etc', 'placement',
                   'api_audit_map.conf')


# What auth_token would pass on from the token: the catalog, with placement.
CATALOG = {'X-Service-Catalog': json.dumps([{
    'type': 'placement', 'name': 'placement',
    'endpoints': [{'publicURL': 'http://cloud.example/placement', 'id': 'ep1'}]}])}


def audited_api(database, **audit):
    conf = client_mod.make_conf({('audit', k): v for k, v in audit.items()})
    for group, opts in ks_audit.list_opts():
        conf.register_opts(opts, group=group)
    # keystonemiddleware's log notifier, read back from the log
    conf.set_override('use_oslo_messaging', False, group='audit_middleware_notifications')
    return client_mod.Client(client_mod.make_app(database, conf), version='1.39')


def notified(caplog):
    """The (event type, payload) of each notification logged."""
    return [(r.args['event_type'], r.args['payload']) for r in caplog.records
            if r.name == 'keystonemiddleware.audit' and isinstance(r.args, dict)]


def events(caplog):
    return [event for event, _ in notified(caplog)]


def test_off_by_default(database, caplog):
    caplog.set_level(logging.INFO)
    api = client_mod.Client(client_mod.make_app(database), version='1.39')
    assert api.get('/resource_providers').status_int == 200
    assert events(caplog) == []


def test_each_request_is_audited(database, caplog):
    caplog.set_level(logging.INFO)
    api = audited_api(database, enabled=True, audit_map_file=MAP)
    resp = api.post('/resource_providers', {'name': 'cn1'}, headers=CATALOG)
    assert resp.status_int == 200, resp.body
    assert api.get('/resource_providers/%s' % resp.json['uuid'],
                   headers=CATALOG).status_int == 200
    assert events(caplog) == ['audit.http.request', 'audit.http.response'] * 2
    response = notified(caplog)[1][1]
    assert response['outcome'] == 'success'
    assert response['initiator']['project_id'] == 'admin'
    assert response['target']['typeURI'] == 'service/placement/resource_providers'
    assert response['action'] == 'create'


def test_ignored_methods_and_a_missing_map(database, caplog):
    caplog.set_level(logging.INFO)
    api = audited_api(database, enabled=True, audit_map_file=MAP, ignore_req_list='GET')
    assert api.get('/resource_providers').status_int == 200
    assert events(caplog) == []
    with pytest.raises(RuntimeError, match='no such file'):
        audited_api(database, enabled=True, audit_map_file=MAP + '.missing')
