"""GET /resource_providers/{uuid}/usages and GET /usages, per the API reference."""
import uuid

import pytest

from placement_server import errors
from tests.functional.client import make_provider

V = '1.39'


def claim(api, rp, resources, project, user, ctype=None):
    consumer = str(uuid.uuid4())
    payload = {'allocations': {rp: {'resources': resources}}, 'project_id': project,
               'user_id': user, 'consumer_generation': None}
    version = '1.28'
    if ctype:
        payload['consumer_type'] = ctype
        version = '1.38'
    resp = api.put('/allocations/%s' % consumer, payload, version=version)
    assert resp.status_int == 204, resp.body
    return consumer


@pytest.fixture
def cn(api):
    return make_provider(api, 'cn1', {'VCPU': {'total': 32}, 'MEMORY_MB': {'total': 65536},
                                      'DISK_GB': {'total': 1000}})


def test_provider_usages_list_every_inventoried_class(api, cn):
    resp = api.get('/resource_providers/%s/usages' % cn, version='1.0')
    assert resp.status_int == 200
    assert resp.json == {'resource_provider_generation': 1,
                         'usages': {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}}
    claim(api, cn, {'VCPU': 2, 'MEMORY_MB': 1024}, 'p1', 'u1')
    claim(api, cn, {'VCPU': 1}, 'p2', 'u2')
    resp = api.get('/resource_providers/%s/usages' % cn, version=V)
    assert resp.json == {'resource_provider_generation': 3,
                         'usages': {'VCPU': 3, 'MEMORY_MB': 1024, 'DISK_GB': 0}}
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in resp.headers
    assert api.get('/resource_providers/%s/usages' % uuid.uuid4(),
                   version=V).status_int == 404


def test_usages_by_project_and_user_from_1_9(api, cn):
    claim(api, cn, {'VCPU': 2, 'MEMORY_MB': 1024}, 'p1', 'u1')
    claim(api, cn, {'VCPU': 4}, 'p1', 'u2')
    claim(api, cn, {'VCPU': 8}, 'p2', 'u1')
    assert api.get('/usages?project_id=p1', version='1.8').status_int == 404
    resp = api.get('/usages?project_id=p1', version='1.9')
    assert resp.status_int == 200
    assert resp.json == {'usages': {'VCPU': 6, 'MEMORY_MB': 1024}}
    resp = api.get('/usages?project_id=p1&user_id=u2', version='1.9')
    assert resp.json == {'usages': {'VCPU': 4}}
    assert api.get('/usages?project_id=nobody', version='1.9').json == {'usages': {}}


@pytest.mark.parametrize('query', ['', '?user_id=u1', '?project_id=', '?project_id=p&bogus=1',
                                   '?project_id=p&consumer_type=lower'])
def test_bad_usage_queries_are_400(api, query):
    resp = api.get('/usages' + query, version=V)
    assert resp.status_int == 400
    assert resp.json['errors'][0]['code'] == errors.UNDEFINED


def test_consumer_type_rejected_before_1_38(api):
    assert api.get('/usages?project_id=p&consumer_type=INSTANCE',
                   version='1.37').status_int == 400


def test_usages_by_consumer_type_from_1_38(api, cn):
    claim(api, cn, {'VCPU': 2, 'MEMORY_MB': 1024}, 'p1', 'u1', 'INSTANCE')
    claim(api, cn, {'VCPU': 2, 'MEMORY_MB': 1024}, 'p1', 'u1', 'INSTANCE')
    claim(api, cn, {'VCPU': 1}, 'p1', 'u2', 'MIGRATION')
    claim(api, cn, {'DISK_GB': 10}, 'p1', 'u1')           # untyped (1.28)
    claim(api, cn, {'VCPU': 16}, 'p2', 'u1', 'INSTANCE')  # another project

    def usages(query):
        resp = api.get('/usages?project_id=p1' + query, version='1.38')
        assert resp.status_int == 200, resp.body
        return resp.json['usages']

    assert usages('') == {
        'INSTANCE': {'VCPU': 4, 'MEMORY_MB': 2048, 'consumer_count': 2},
        'MIGRATION': {'VCPU': 1, 'consumer_count': 1},
        'unknown': {'DISK_GB': 10, 'consumer_count': 1}}
    assert usages('&consumer_type=all') == {
        'all': {'VCPU': 5, 'MEMORY_MB': 2048, 'DISK_GB': 10, 'consumer_count': 4}}
    assert usages('&consumer_type=unknown') == {
        'unknown': {'DISK_GB': 10, 'consumer_count': 1}}
    assert usages('&consumer_type=MIGRATION') == {
        'MIGRATION': {'VCPU': 1, 'consumer_count': 1}}
    assert usages('&consumer_type=INSTANCE&user_id=u2') == {}
    assert usages('&consumer_type=NOSUCH') == {}


def test_usages_need_admin_or_a_reader_of_the_project(api, cn):
    claim(api, cn, {'VCPU': 2}, 'p1', 'u1')
    assert api.get('/usages?project_id=p1', version=V, token='alice:p1').status_int == 403
    reader = {'X-Roles': 'reader'}
    resp = api.get('/usages?project_id=p1', version=V, token='alice:p1', headers=reader)
    assert resp.status_int == 200
    assert resp.json == {'usages': {'unknown': {'VCPU': 2, 'consumer_count': 1}}}
    assert api.get('/usages?project_id=p2', version=V, token='alice:p1',
                   headers=reader).status_int == 403
    assert api.get('/resource_providers/%s/usages' % cn, version=V,
                   token='alice:p1').status_int == 403
