"""Provider summaries stay exact while workers keep them in their resource
view between requests (placement_server/view.py, candidates/summaries.py):
every write through the API shows in the next answer, on every backend."""
import uuid

from tests.functional.client import make_provider

QUERY = '/allocation_candidates?resources=VCPU:1'


def summary(api, rp):
    resp = api.get(QUERY, version='1.39')
    assert resp.status_int == 200, resp.body
    return resp.json['provider_summaries'].get(rp)


def put(api, path, body, version='1.39'):
    resp = api.put(path, body, version=version)
    assert resp.status_int in (200, 204), resp.body
    return resp


def test_inventory_trait_and_allocation_writes_show_at_once(api):
    rp = make_provider(api, inventories={'VCPU': {'total': 8}})
    assert summary(api, rp)['resources'] == {'VCPU': {'capacity': 8, 'used': 0}}

    put(api, '/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 1,
        'inventories': {'VCPU': {'total': 16, 'allocation_ratio': 2.0, 'reserved': 2},
                        'MEMORY_MB': {'total': 1024}}})
    assert summary(api, rp)['resources'] == {'VCPU': {'capacity': 28, 'used': 0},
                                             'MEMORY_MB': {'capacity': 1024, 'used': 0}}

    put(api, '/resource_providers/%s/traits' % rp, {
        'resource_provider_generation': 2, 'traits': ['HW_CPU_X86_AVX2']})
    assert summary(api, rp)['traits'] == ['HW_CPU_X86_AVX2']

    consumer = str(uuid.uuid4())
    put(api, '/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': {'VCPU': 3}}}, 'project_id': str(uuid.uuid4()),
        'user_id': str(uuid.uuid4()), 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    assert summary(api, rp)['resources']['VCPU'] == {'capacity': 28, 'used': 3}

    assert api.delete('/allocations/%s' % consumer).status_int == 204
    assert api.delete('/resource_providers/%s/traits' % rp, version='1.39').status_int == 204
    shown = summary(api, rp)
    assert shown['traits'] == []
    assert shown['resources']['VCPU'] == {'capacity': 28, 'used': 0}


def test_provider_recreated_with_the_same_uuid_and_generation(api):
    """The new provider reaches the generation the old one had, with other
    inventories; on SQLite it may even get the old one's id."""
    rp = make_provider(api, 'node', inventories={'VCPU': {'total': 8}})
    assert summary(api, rp)['resources']['VCPU']['capacity'] == 8
    assert api.delete('/resource_providers/%s' % rp, version='1.39').status_int == 204
    make_provider(api, 'node', uuid=rp, inventories={'VCPU': {'total': 4}})
    assert summary(api, rp)['resources']['VCPU']['capacity'] == 4
