"""POST /reshaper, as the API reference describes it: a vGPU inventory
moves from the compute node to a child provider while an instance holds
one, in one request, or nothing changes at all."""
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement_server.db import tables
from tests.functional.client import make_provider

V = '1.30'
PROJECT = 'p-1'
USER = 'u-1'


def reshape(api, body, version=V, **kw):
    """Only the service role (nova, the tracker) may reshape."""
    kw.setdefault('token', 'nova')
    kw.setdefault('headers', {'X-Roles': 'service'})
    return api.post('/reshaper', body, version=version, **kw)


def generation(api, rp):
    return api.get('/resource_providers/%s' % rp, version=V).json['generation']


def inventory(total, **kw):
    return dict({'total': total}, **kw)


@pytest.fixture
def host(api):
    """cn holds VCPU, MEMORY_MB and VGPU; an instance uses some of each;
    gpu0 is a new, empty child."""
    cn = make_provider(api, 'cn1')
    resp = api.put('/resource_providers/%s/inventories' % cn, {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': inventory(8), 'MEMORY_MB': inventory(2048),
                        'VGPU': inventory(4)}}, version=V)
    assert resp.status_int == 200, resp.body
    instance = str(uuidlib.uuid4())
    resp = api.put('/allocations/%s' % instance, {
        'allocations': {cn: {'resources': {'VCPU': 2, 'MEMORY_MB': 512, 'VGPU': 1}}},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': None}, version=V)
    assert resp.status_int == 204, resp.body
    gpu = make_provider(api, 'cn1-gpu0', parent=cn)
    return {'cn': cn, 'gpu': gpu, 'instance': instance}


def moved(api, host, **overrides):
    """The reshape that moves VGPU to the child and the instance's vGPU with it."""
    cn, gpu = host['cn'], host['gpu']
    body = {
        'inventories': {
            cn: {'resource_provider_generation': generation(api, cn),
                 'inventories': {'VCPU': inventory(8), 'MEMORY_MB': inventory(2048)}},
            gpu: {'resource_provider_generation': generation(api, gpu),
                  'inventories': {'VGPU': inventory(4)}},
        },
        'allocations': {
            host['instance']: {
                'allocations': {cn: {'resources': {'VCPU': 2, 'MEMORY_MB': 512}},
                                gpu: {'resources': {'VGPU': 1}}},
                'project_id': PROJECT, 'user_id': USER, 'consumer_generation': 1},
        },
    }
    body.update(overrides)
    return body


def snapshot(database):
    """Every row a reshape may touch, to prove a failed one changed nothing."""
    with database.reader() as conn:
        return {name: sorted(map(tuple, conn.execute(
                    sa.select(*[c for c in tables.metadata.tables[name].c
                                if c.name not in ('created_at', 'updated_at')]))))
                for name in ('resource_providers', 'inventories', 'allocations', 'consumers')}


def test_reshape_moves_inventory_and_allocations(api, host):
    cn, gpu = host['cn'], host['gpu']
    cn_gen = generation(api, cn)
    resp = reshape(api, moved(api, host))
    assert resp.status_int == 204, resp.body
    assert set(api.get('/resource_providers/%s/inventories' % cn, version=V)
               .json['inventories']) == {'VCPU', 'MEMORY_MB'}
    assert set(api.get('/resource_providers/%s/inventories' % gpu, version=V)
               .json['inventories']) == {'VGPU'}
    allocs = api.get('/allocations/%s' % host['instance'], version='1.28').json
    assert {u: a['resources'] for u, a in allocs['allocations'].items()} == {
        cn: {'VCPU': 2, 'MEMORY_MB': 512}, gpu: {'VGPU': 1}}
    assert allocs['consumer_generation'] == 2
    assert generation(api, cn) > cn_gen
    # the new shape is what candidates see
    resp = api.get('/allocation_candidates?resources=VCPU:1,VGPU:1', version='1.29')
    assert resp.json['allocation_requests'] == [{'allocations': {
        cn: {'resources': {'VCPU': 1}}, gpu: {'resources': {'VGPU': 1}}}}]


def test_inventories_alone(api, host):
    """No allocation needs to move: allocations may be empty."""
    cn, gpu = host['cn'], host['gpu']
    body = moved(api, host, allocations={})
    # VGPU cannot leave the compute node while the instance holds one there
    resp = reshape(api, body)
    assert resp.status_int == 409
    assert resp.json['errors'][0]['code'] == 'placement.inventory.inuse'
    body['inventories'][cn]['inventories']['VGPU'] = inventory(4)
    assert reshape(api, body).status_int == 204
    assert set(api.get('/resource_providers/%s/inventories' % gpu, version=V)
               .json['inventories']) == {'VGPU'}


def test_reshaper_appears_at_1_30(api, host):
    assert reshape(api, moved(api, host), '1.29').status_int == 404


@pytest.mark.parametrize('spoil, status, code', [
    # the child's generation is stale
    (lambda b, h: b['inventories'][h['gpu']].update(resource_provider_generation=7),
     409, 'placement.concurrent_update'),
    # the instance's consumer generation is stale
    (lambda b, h: b['allocations'][h['instance']].update(consumer_generation=5),
     409, 'placement.concurrent_update'),
    # the vGPU allocation is left on the compute node, whose VGPU goes away
    (lambda b, h: b['allocations'][h['instance']]['allocations'].update(
        {h['cn']: {'resources': {'VCPU': 2, 'MEMORY_MB': 512, 'VGPU': 1}}}),
     409, 'placement.inventory.inuse'),
    # more vGPUs than the child has
    (lambda b, h: b['allocations'][h['instance']]['allocations'][h['gpu']].update(
        resources={'VGPU': 5}), 409, 'placement.undefined_code'),
    # a provider that does not exist
    (lambda b, h: b['inventories'].update({str(uuidlib.uuid4()): {
        'resource_provider_generation': 0, 'inventories': {}}}),
     400, 'placement.resource_provider.not_found'),
    # an unknown resource class
    (lambda b, h: b['inventories'][h['gpu']]['inventories'].update(
        {'CUSTOM_NOPE': inventory(1)}), 400, 'placement.undefined_code'),
])
def test_any_error_changes_nothing(api, database, host, spoil, status, code):
    body = moved(api, host)
    spoil(body, host)
    before = snapshot(database)
    resp = reshape(api, body)
    assert resp.status_int == status, resp.body
    assert resp.json['errors'][0]['code'] == code
    assert snapshot(database) == before


@pytest.mark.parametrize('body', [
    {},
    {'inventories': {}, 'allocations': {}},
    {'inventories': {'not-a-uuid': {}}, 'allocations': {}},
])
def test_malformed_bodies_are_400(api, body):
    resp = reshape(api, body)
    assert resp.status_int == 400
    assert resp.json['errors'][0]['detail']


def test_consumer_type_required_from_1_38(api, host):
    body = moved(api, host)
    assert reshape(api, body, '1.38').status_int == 400
    body['allocations'][host['instance']]['consumer_type'] = 'INSTANCE'
    resp = reshape(api, body, '1.38')
    assert resp.status_int == 204, resp.body
    assert api.get('/allocations/%s' % host['instance'],
                   version='1.38').json['consumer_type'] == 'INSTANCE'


def test_needs_the_service_role(api, host):
    assert reshape(api, moved(api, host), token='admin', headers={}).status_int == 403
    assert reshape(api, moved(api, host), token='alice', headers={}).status_int == 403
