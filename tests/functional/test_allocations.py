"""/allocations and /resource_providers/{uuid}/allocations, per the API reference."""
import uuid

import pytest

from placement_server import errors
from placement_server.db import allocations as allocations_db
from placement_server.db import inventories as inventories_db
from placement_server.db import providers
from placement_server.schemas import inventory as inventory_schema
from tests.functional import client as client_mod
from tests.functional.client import make_provider

V = '1.39'


def generation(api, rp):
    return api.get('/resource_providers/%s/inventories' % rp,
                   version=V).json['resource_provider_generation']


def usages(api, rp):
    return api.get('/resource_providers/%s/usages' % rp, version=V).json['usages']


def body(allocations, generation=None, project='proj', user='user', ctype='INSTANCE'):
    return {'allocations': allocations, 'project_id': project, 'user_id': user,
            'consumer_generation': generation, 'consumer_type': ctype}


def code(resp):
    return resp.json['errors'][0]['code']


@pytest.fixture
def cn(api):
    return make_provider(api, 'cn1', {'VCPU': {'total': 8, 'max_unit': 4},
                                      'MEMORY_MB': {'total': 2048, 'step_size': 256},
                                      'DISK_GB': {'total': 100, 'reserved': 20,
                                                  'allocation_ratio': 1.5}})


def test_claim_show_and_delete(api, cn):
    consumer = str(uuid.uuid4())
    resp = api.put('/allocations/%s' % consumer,
                   body({cn: {'resources': {'VCPU': 2, 'MEMORY_MB': 512}}}), version=V)
    assert resp.status_int == 204, resp.body
    resp = api.get('/allocations/%s' % consumer, version=V)
    assert resp.status_int == 200
    assert resp.json == {
        'allocations': {cn: {'generation': 2, 'resources': {'VCPU': 2, 'MEMORY_MB': 512}}},
        'project_id': 'proj', 'user_id': 'user', 'consumer_generation': 1,
        'consumer_type': 'INSTANCE'}
    assert resp.headers['Cache-Control'] == 'no-cache'
    resp = api.get('/resource_providers/%s/allocations' % cn, version=V)
    assert resp.json == {'resource_provider_generation': 2, 'allocations': {
        consumer: {'resources': {'VCPU': 2, 'MEMORY_MB': 512}, 'consumer_generation': 1}}}
    assert api.delete('/allocations/%s' % consumer, version=V).status_int == 204
    assert api.get('/allocations/%s' % consumer, version=V).json == {'allocations': {}}
    assert api.delete('/allocations/%s' % consumer, version=V).status_int == 404
    assert usages(api, cn) == {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}


def test_representation_by_version(api, cn):
    consumer = str(uuid.uuid4())
    assert api.put('/allocations/%s' % consumer,
                   body({cn: {'resources': {'VCPU': 1}}}), version=V).status_int == 204
    allocs = {cn: {'generation': 2, 'resources': {'VCPU': 1}}}
    assert api.get('/allocations/%s' % consumer, version='1.11').json == {'allocations': allocs}
    assert api.get('/allocations/%s' % consumer, version='1.12').json == {
        'allocations': allocs, 'project_id': 'proj', 'user_id': 'user'}
    assert api.get('/allocations/%s' % consumer, version='1.28').json == {
        'allocations': allocs, 'project_id': 'proj', 'user_id': 'user',
        'consumer_generation': 1}
    resp = api.get('/resource_providers/%s/allocations' % cn, version='1.27')
    assert resp.json['allocations'] == {consumer: {'resources': {'VCPU': 1}}}
    assert api.get('/resource_providers/%s/allocations' % uuid.uuid4(),
                   version=V).status_int == 404


def test_list_format_before_1_12_and_incomplete_consumer(api, cn):
    consumer = str(uuid.uuid4())
    resp = api.put('/allocations/%s' % consumer, {'allocations': [
        {'resource_provider': {'uuid': cn}, 'resources': {'VCPU': 1}}]}, version='1.0')
    assert resp.status_int == 204, resp.body
    resp = api.get('/allocations/%s' % consumer, version='1.12')
    assert resp.json['project_id'] == '00000000-0000-0000-0000-000000000000'
    # From 1.8 project_id and user_id are required.
    resp = api.put('/allocations/%s' % consumer, {'allocations': [
        {'resource_provider': {'uuid': cn}, 'resources': {'VCPU': 1}}]}, version='1.8')
    assert resp.status_int == 400
    resp = api.put('/allocations/%s' % consumer, {'allocations': [
        {'resource_provider': {'uuid': cn}, 'resources': {'VCPU': 2}}],
        'project_id': 'p2', 'user_id': 'u2'}, version='1.8')
    assert resp.status_int == 204
    resp = api.get('/allocations/%s' % consumer, version='1.28')
    assert resp.json['project_id'] == 'p2'
    assert resp.json['consumer_generation'] == 2
    # The dict format is refused before 1.12, the list format after.
    resp = api.put('/allocations/%s' % consumer, body({cn: {'resources': {'VCPU': 1}}}),
                   version='1.11')
    assert resp.status_int == 400
    resp = api.put('/allocations/%s' % consumer, {'allocations': [
        {'resource_provider': {'uuid': cn}, 'resources': {'VCPU': 1}}],
        'project_id': 'p', 'user_id': 'u'}, version='1.12')
    assert resp.status_int == 400


def test_consumer_generations(api, cn):
    consumer = str(uuid.uuid4())
    url = '/allocations/%s' % consumer
    claim = {cn: {'resources': {'VCPU': 1}}}
    # consumer_generation is required from 1.28; null means "new consumer".
    resp = api.put(url, {'allocations': claim, 'project_id': 'p', 'user_id': 'u'},
                   version='1.28')
    assert resp.status_int == 400
    resp = api.put(url, body(claim, generation=3), version=V)
    assert resp.status_int == 409
    assert code(resp) == 'placement.concurrent_update'
    assert api.put(url, body(claim), version=V).status_int == 204
    resp = api.put(url, body(claim), version=V)
    assert resp.status_int == 409
    assert code(resp) == 'placement.concurrent_update'
    resp = api.put(url, body(claim, generation=2), version=V)
    assert resp.status_int == 409
    assert api.put(url, body({cn: {'resources': {'VCPU': 3}}}, generation=1),
                   version=V).status_int == 204
    assert api.get(url, version=V).json['consumer_generation'] == 2
    assert usages(api, cn)['VCPU'] == 3
    # Before 1.28 the consumer generation is not checked (but still moves).
    assert api.put(url, {'allocations': claim, 'project_id': 'p', 'user_id': 'u'},
                   version='1.27').status_int == 204
    assert api.get(url, version=V).json['consumer_generation'] == 3


def test_empty_allocations_remove_the_consumer_from_1_28(api, cn):
    consumer = str(uuid.uuid4())
    url = '/allocations/%s' % consumer
    assert api.put(url, body({cn: {'resources': {'VCPU': 1}}}), version=V).status_int == 204
    gen = generation(api, cn)
    resp = api.put(url, {'allocations': {}, 'project_id': 'p', 'user_id': 'u'},
                   version='1.27')
    assert resp.status_int == 400
    assert api.put(url, body({}, generation=1), version=V).status_int == 204
    assert api.get(url, version=V).json == {'allocations': {}}
    assert generation(api, cn) == gen + 1
    # The consumer is gone: its next write is for a new consumer again.
    assert api.put(url, body({cn: {'resources': {'VCPU': 1}}}), version=V).status_int == 204
    assert api.get(url, version=V).json['consumer_generation'] == 1


def test_each_write_bumps_each_provider_once(api, cn):
    other = make_provider(api, 'cn2', {'VCPU': {'total': 4}})
    before = generation(api, cn), generation(api, other)
    consumer = str(uuid.uuid4())
    resp = api.put('/allocations/%s' % consumer, body({
        cn: {'resources': {'VCPU': 1, 'MEMORY_MB': 256, 'DISK_GB': 10}},
        other: {'resources': {'VCPU': 1}}}), version=V)
    assert resp.status_int == 204
    assert (generation(api, cn), generation(api, other)) == (before[0] + 1, before[1] + 1)


@pytest.mark.parametrize('resources, why', [
    ({'VCPU': 5}, 'over max_unit'),
    ({'MEMORY_MB': 100}, 'not a multiple of step_size'),
    ({'DISK_GB': 121}, 'over (100 - 20) * 1.5'),
    ({'CUSTOM_MAGIC': 1}, 'no inventory of an existing class'),
])
def test_claims_outside_inventory_are_409(api, cn, resources, why):
    api.put('/resource_classes/CUSTOM_MAGIC', version='1.7')
    resp = api.put('/allocations/%s' % uuid.uuid4(), body({cn: {'resources': resources}}),
                   version=V)
    assert resp.status_int == 409, why
    assert code(resp) == errors.UNDEFINED
    assert usages(api, cn) == {'VCPU': 0, 'MEMORY_MB': 0, 'DISK_GB': 0}
    assert generation(api, cn) == 1


def test_capacity_counts_other_consumers_and_ratio(api, cn):
    assert api.put('/allocations/%s' % uuid.uuid4(), body({cn: {'resources': {'DISK_GB': 100}}}),
                   version=V).status_int == 204
    assert api.put('/allocations/%s' % uuid.uuid4(), body({cn: {'resources': {'DISK_GB': 20}}}),
                   version=V).status_int == 204
    resp = api.put('/allocations/%s' % uuid.uuid4(), body({cn: {'resources': {'DISK_GB': 1}}}),
                   version=V)
    assert resp.status_int == 409
    assert usages(api, cn)['DISK_GB'] == 120


def with_provider(value, rp):
    """``value`` with the placeholder key 'RP' replaced by provider ``rp``."""
    if isinstance(value, dict):
        return {(rp if k == 'RP' else k): with_provider(v, rp) for k, v in value.items()}
    return value


@pytest.mark.parametrize('payload', [
    {'allocations': {}},
    {'allocations': 'x', 'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
     'consumer_type': 'INSTANCE'},
    body({'not-a-uuid': {'resources': {'VCPU': 1}}}),
    body({'RP': {'resources': {'VCPU': 0}}}),
    body({'RP': {'resources': {}}}),
    body({'RP': {'resources': {'vcpu': 1}}}),
    body({'RP': {'resources': {'VCPU': 1}, 'extra': 1}}),
    body({'RP': {'resources': {'VCPU': 1}}}, ctype='instance'),
    body({'RP': {'resources': {'VCPU': 1}}}, project=''),
    body({'RP': {'resources': {'VCPU': 1}}}, generation='1'),
    body({'RP': {'resources': {'CUSTOM_UNKNOWN': 1}}}),
    body({str(uuid.uuid4()): {'resources': {'VCPU': 1}}}),
    body({'------------------------------------': {'resources': {'VCPU': 1}}}),
])
def test_bad_claims_are_400(api, cn, payload):
    resp = api.put('/allocations/%s' % uuid.uuid4(), with_provider(payload, cn), version=V)
    assert resp.status_int == 400, resp.body
    assert resp.json['errors'][0]['detail']
    assert usages(api, cn)['VCPU'] == 0


def test_bad_consumer_uuid_and_media_type(api, cn):
    resp = api.put('/allocations/not-a-uuid', body({cn: {'resources': {'VCPU': 1}}}), version=V)
    assert resp.status_int == 400
    resp = api.request('PUT', '/allocations/%s' % uuid.uuid4(), version=V,
                       headers={'Content-Type': 'text/plain'})
    assert resp.status_int == 415
    resp = api.put('/allocations/%s' % uuid.uuid4(), raw='{"allocations":', version=V)
    assert resp.status_int == 400


def test_post_many_consumers_at_once(api, cn):
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    resp = api.post('/allocations', {
        a: body({cn: {'resources': {'VCPU': 2}}}),
        b: body({cn: {'resources': {'VCPU': 3}}}, ctype='MIGRATION')}, version=V)
    assert resp.status_int == 204, resp.body
    assert usages(api, cn)['VCPU'] == 5
    assert generation(api, cn) == 2  # once for the request, not per consumer
    assert api.get('/allocations/%s' % b, version=V).json['consumer_type'] == 'MIGRATION'
    # Move a's claim to b in one request: b takes all, a's allocations are emptied.
    resp = api.post('/allocations', {
        a: body({}, generation=1),
        b: body({cn: {'resources': {'VCPU': 4}}}, generation=1, ctype='MIGRATION')},
        version=V)
    assert resp.status_int == 204, resp.body
    assert api.get('/allocations/%s' % a, version=V).json == {'allocations': {}}
    assert usages(api, cn)['VCPU'] == 4


def test_post_is_all_or_nothing(api, cn):
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    resp = api.post('/allocations', {
        first: body({cn: {'resources': {'VCPU': 4}}}),
        second: body({cn: {'resources': {'VCPU': 4}, }}, ctype='X'),
        str(uuid.uuid4()): body({cn: {'resources': {'VCPU': 1}}})}, version=V)
    assert resp.status_int == 409
    assert api.get('/allocations/%s' % first, version=V).json == {'allocations': {}}
    assert usages(api, cn)['VCPU'] == 0
    assert generation(api, cn) == 1
    # A failing consumer generation also rolls back the others.
    assert api.put('/allocations/%s' % second, body({cn: {'resources': {'VCPU': 1}}}),
                   version=V).status_int == 204
    resp = api.post('/allocations', {
        first: body({cn: {'resources': {'VCPU': 1}}}),
        second: body({cn: {'resources': {'VCPU': 2}}}, generation=7)}, version=V)
    assert resp.status_int == 409
    assert code(resp) == 'placement.concurrent_update'
    assert api.get('/allocations/%s' % first, version=V).json == {'allocations': {}}
    assert usages(api, cn)['VCPU'] == 1


def test_post_exists_from_1_13(api, cn):
    payload = {str(uuid.uuid4()): {'allocations': {cn: {'resources': {'VCPU': 1}}},
                                   'project_id': 'p', 'user_id': 'u'}}
    assert api.post('/allocations', payload, version='1.12').status_int == 404
    assert api.post('/allocations', payload, version='1.13').status_int == 204
    assert api.post('/allocations', {}, version='1.13').status_int == 400


def test_consumer_type_changes_and_is_kept_before_1_38(api, cn):
    consumer = str(uuid.uuid4())
    url = '/allocations/%s' % consumer
    assert api.put(url, body({cn: {'resources': {'VCPU': 1}}}), version=V).status_int == 204
    assert api.put(url, body({cn: {'resources': {'VCPU': 1}}}, generation=1, ctype='MIGRATION'),
                   version=V).status_int == 204
    assert api.get(url, version=V).json['consumer_type'] == 'MIGRATION'
    resp = api.put(url, {'allocations': {cn: {'resources': {'VCPU': 2}}}, 'project_id': 'p',
                         'user_id': 'u', 'consumer_generation': 2}, version='1.37')
    assert resp.status_int == 204
    assert api.get(url, version=V).json['consumer_type'] == 'MIGRATION'
    resp = api.put(url, {'allocations': {cn: {'resources': {'VCPU': 2}}}, 'project_id': 'p',
                         'user_id': 'u', 'consumer_generation': 3}, version=V)
    assert resp.status_int == 400  # consumer_type required from 1.38


def test_non_admin_is_forbidden(api, cn):
    resp = api.get('/allocations/%s' % uuid.uuid4(), version=V, token='alice:proj')
    assert resp.status_int == 403
    resp = api.put('/allocations/%s' % uuid.uuid4(), body({cn: {'resources': {'VCPU': 1}}}),
                   version=V, token='alice:proj')
    assert resp.status_int == 403
    assert usages(api, cn)['VCPU'] == 0


def test_untyped_consumer_shows_unknown_type(api, cn):
    consumer = str(uuid.uuid4())
    resp = api.put('/allocations/%s' % consumer, {
        'allocations': {cn: {'resources': {'VCPU': 1}}}, 'project_id': 'p', 'user_id': 'u',
        'consumer_generation': None}, version='1.28')
    assert resp.status_int == 204
    assert api.get('/allocations/%s' % consumer, version='1.38').json['consumer_type'] == 'unknown'


def test_incomplete_consumer_project_and_user_are_configurable(database):
    conf = client_mod.make_conf()
    conf.set_override('incomplete_consumer_project_id', 'legacy-p', group='placement')
    conf.set_override('incomplete_consumer_user_id', 'legacy-u', group='placement')
    api = client_mod.Client(client_mod.make_app(database, conf))
    rp = make_provider(api, 'cn1', {'VCPU': {'total': 4}})
    consumer = str(uuid.uuid4())
    resp = api.put('/allocations/%s' % consumer, {'allocations': [
        {'resource_provider': {'uuid': rp}, 'resources': {'VCPU': 1}}]}, version='1.7')
    assert resp.status_int == 204
    resp = api.get('/allocations/%s' % consumer, version='1.12')
    assert (resp.json['project_id'], resp.json['user_id']) == ('legacy-p', 'legacy-u')


def _full(total):
    return dict(inventory_schema.DEFAULTS, total=total)


def test_db_functions_compose_into_one_reshape_transaction(api, database):
    # The reshaper's pattern: interim inventory (old + new classes), move
    # the consumer's allocations, final inventory; all in one transaction.
    rp = make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    consumer = str(uuid.uuid4())
    assert api.put('/allocations/%s' % consumer, body({rp: {'resources': {'VCPU': 2}}}),
                   version=V).status_int == 204
    with database.writer() as conn:
        provider = providers.get(conn, rp)
        inventories_db.replace_inventories(conn, provider, {'VCPU': _full(8), 'DISK_GB': _full(50)})
        allocations_db.replace_allocations(conn, consumer, {rp: {'DISK_GB': 5}}, 'proj', 'user',
                                        consumer_generation=1, consumer_type='INSTANCE')
        inventories_db.replace_inventories(conn, providers.get(conn, rp), {'DISK_GB': _full(50)})
    assert usages(api, rp) == {'DISK_GB': 5}
    assert generation(api, rp) == 5   # 1 + interim + allocations + final
    assert api.get('/allocations/%s' % consumer, version=V).json['consumer_generation'] == 2

    # A failure at any step (here: a claim over capacity) leaves nothing.
    with pytest.raises(errors.Conflict, match='exceed the capacity'):
        with database.writer() as conn:
            inventories_db.replace_inventories(conn, providers.get(conn, rp),
                                            {'DISK_GB': _full(50), 'VCPU': _full(4)})
            allocations_db.replace_allocations(conn, consumer, {rp: {'VCPU': 5}}, 'proj', 'user',
                                            consumer_generation=2)
    resp = api.get('/resource_providers/%s/inventories' % rp, version=V)
    assert sorted(resp.json['inventories']) == ['DISK_GB']
    assert resp.json['resource_provider_generation'] == 5
    assert usages(api, rp) == {'DISK_GB': 5}
