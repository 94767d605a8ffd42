"""Policy through the API: who may call what, and what a refusal looks like."""
from tests.functional import client as client_mod


def test_a_caller_without_the_role_gets_403_json(api):
    member = client_mod.Client(api.app, token='alice:proj1')
    resp = member.get('/resource_classes', version='1.23',
                      headers={'X-Roles': 'member,reader'})
    assert resp.status_int == 403
    assert resp.content_type == 'application/json'
    error, = resp.json['errors']
    assert error['status'] == 403
    assert error['code'] == 'placement.undefined_code'
    assert 'placement:resource_classes:list' in error['detail']
    assert resp.headers['OpenStack-API-Version'] == 'placement 1.23'


def test_the_service_role_is_enough(api):
    service = client_mod.Client(api.app, token='nova:services')
    resp = service.get('/resource_classes', version='1.23', headers={'X-Roles': 'service'})
    assert resp.status_int == 200
    assert 'VCPU' in [rc['name'] for rc in resp.json['resource_classes']]


def test_a_system_scoped_admin_is_refused(api):
    resp = api.get('/resource_classes', version='1.23',
                   headers={'OpenStack-System-Scope': 'all'})
    assert resp.status_int == 403
    assert resp.json['errors'][0]['code'] == 'placement.undefined_code'


def test_a_project_reader_reads_its_own_usages_only(api):
    reader = client_mod.Client(api.app, token='bob:proj1')
    own = reader.get('/usages?project_id=proj1', version='1.9', headers={'X-Roles': 'reader'})
    assert own.status_int == 200
    assert own.json['usages'] == {}
    other = reader.get('/usages?project_id=proj2', version='1.9', headers={'X-Roles': 'reader'})
    assert other.status_int == 403
