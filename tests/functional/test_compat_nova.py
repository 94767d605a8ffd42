"""A compute host's life as nova's scheduler report client drives it, in
the order and at the microversions nova uses, with the facts it relies on
asserted (API reference + docs/compat.md). The same walk runs on upstream
placement 16.0.0, so every asserted fact is upstream's too.
"""
from placement_server import errors
from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

CN = 'c1ad0000-0000-4000-8000-000000000001'
GPU = 'c1ad0000-0000-4000-8000-000000000002'
AGG = 'c1ad0000-0000-4000-8000-0000000000a1'
VM = 'c1ad0000-0000-4000-8000-0000000000c1'
MIGRATION = 'c1ad0000-0000-4000-8000-0000000000c2'
PROJECT, USER = 'c1ad-project', 'c1ad-user'
# nova's service user: the reshaper needs the service role by default.
NOVA_ROLES = {'X-Roles': 'admin,service'}


def code(resp):
    return resp[1]['errors'][0].get('code')


def consumer(allocs, gen, ctype=None):
    body = {'allocations': allocs, 'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': gen}
    if ctype:
        body['consumer_type'] = ctype
    return body


def nova_lifecycle(call):
    """``call(method, path, version, body) -> (status, json or None)``."""
    # Startup: is my tree there? (1.14 in_tree), then create the root.
    assert call('GET', '/resource_providers?in_tree=%s' % CN, '1.14', None) == (
        200, {'resource_providers': []})
    status, root = call('POST', '/resource_providers', '1.20', {'name': 'c1ad-cn', 'uuid': CN})
    assert (status, root['generation']) == (200, 0)
    status, body = call('PUT', '/resource_providers/%s/inventories' % CN, '1.26', {
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096},
                        'VGPU': {'total': 2}}})
    assert (status, body['resource_provider_generation']) == (200, 1)

    # Traits and aggregates carry the provider generation; a stale one is a
    # 409 concurrent_update the client answers by refreshing.
    traits = {'traits': ['COMPUTE_NODE'], 'resource_provider_generation': 0}
    stale = call('PUT', '/resource_providers/%s/traits' % CN, '1.23', traits)
    assert (stale[0], code(stale)) == (409, errors.CONCURRENT_UPDATE)
    status, body = call('PUT', '/resource_providers/%s/traits' % CN, '1.23',
                        dict(traits, resource_provider_generation=1))
    assert (status, body['resource_provider_generation']) == (200, 2)
    aggs = {'aggregates': [AGG], 'resource_provider_generation': 1}
    stale = call('PUT', '/resource_providers/%s/aggregates' % CN, '1.23', aggs)
    assert (stale[0], code(stale)) == (409, errors.CONCURRENT_UPDATE)
    status, body = call('PUT', '/resource_providers/%s/aggregates' % CN, '1.19',
                        dict(aggs, resource_provider_generation=2))
    assert (status, body) == (200, {'aggregates': [AGG], 'resource_provider_generation': 3})

    # Boot: a claim for a consumer that must be new (generation null).
    claim = consumer({CN: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024}}}, None)
    assert call('PUT', '/allocations/%s' % VM, '1.28', claim) == (204, None)
    again = call('PUT', '/allocations/%s' % VM, '1.28', claim)
    assert (again[0], code(again)) == (409, errors.CONCURRENT_UPDATE)
    status, body = call('GET', '/allocations/%s' % VM, '1.28', None)
    assert (status, body['consumer_generation']) == (200, 1)
    assert body['allocations'][CN] == {'resources': {'VCPU': 2, 'MEMORY_MB': 1024},
                                       'generation': 4}

    # Migration: move the claim to the migration record in one POST (1.28).
    move = {VM: consumer({}, 1), MIGRATION: consumer(
        {CN: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024}}}, None)}
    assert call('POST', '/allocations', '1.28', move) == (204, None)
    stale = call('POST', '/allocations', '1.28', move)
    assert (stale[0], code(stale)) == (409, errors.CONCURRENT_UPDATE)
    assert call('GET', '/allocations/%s' % VM, '1.28', None) == (200, {'allocations': {}})
    status, body = call('GET', '/resource_providers/%s/allocations' % CN, '1.0', None)
    assert list(body['allocations']) == [MIGRATION]
    # Revert: back to the instance, which is a new consumer again.
    back = {MIGRATION: consumer({}, 1, 'MIGRATION'), VM: consumer(
        {CN: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024}}}, None, 'INSTANCE')}
    assert call('POST', '/allocations', '1.38', back) == (204, None)

    # Reshape (1.30): VGPU inventory and its allocation move to a child.
    assert call('POST', '/resource_providers', '1.20', {
        'name': 'c1ad-gpu', 'uuid': GPU, 'parent_provider_uuid': CN})[0] == 200
    status, cn = call('GET', '/resource_providers/%s' % CN, '1.30', None)
    claim = consumer({CN: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024, 'VGPU': 1}}}, 1,
                     'INSTANCE')
    assert call('PUT', '/allocations/%s' % VM, '1.38', claim) == (204, None)
    reshape = {
        'inventories': {
            CN: {'resource_provider_generation': cn['generation'] + 1,
                 'inventories': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}},
            GPU: {'resource_provider_generation': 0,
                  'inventories': {'VGPU': {'total': 2}}}},
        'allocations': {VM: consumer(
            {CN: {'resources': {'VCPU': 2, 'MEMORY_MB': 1024}},
             GPU: {'resources': {'VGPU': 1}}}, 2, 'INSTANCE')}}
    assert call('POST', '/reshaper', '1.29', reshape)[0] == 404
    assert call('POST', '/reshaper', '1.38', reshape) == (204, None)
    stale = call('POST', '/reshaper', '1.38', reshape)
    assert (stale[0], code(stale)) == (409, errors.CONCURRENT_UPDATE)
    status, body = call('GET', '/resource_providers/%s/usages' % GPU, '1.0', None)
    assert body['usages'] == {'VGPU': 1}
    status, body = call('GET', '/resource_providers?in_tree=%s' % GPU, '1.14', None)
    assert sorted(p['uuid'] for p in body['resource_providers']) == [CN, GPU]

    # Host removal: refused while allocations exist, then allowed.
    inuse = call('DELETE', '/resource_providers/%s' % GPU, '1.23', None)
    assert (inuse[0], code(inuse)) == (409, errors.PROVIDER_IN_USE)
    assert call('DELETE', '/allocations/%s' % VM, '1.28', None) == (204, None)
    assert call('DELETE', '/allocations/%s' % VM, '1.28', None)[0] == 404
    parent = call('DELETE', '/resource_providers/%s' % CN, '1.23', None)
    assert (parent[0], code(parent)) == (409, errors.PROVIDER_CANNOT_DELETE_PARENT)
    assert call('DELETE', '/resource_providers/%s' % GPU, '1.23', None) == (204, None)
    assert call('DELETE', '/resource_providers/%s' % CN, '1.23', None) == (204, None)


def test_nova_lifecycle_on_ours(api):
    def call(method, path, version, body):
        status, _, body = side_by_side.ours(api, method, path, version, body, NOVA_ROLES)
        return status, body
    nova_lifecycle(call)


def test_nova_lifecycle_on_upstream(upstream_placement):
    def call(method, path, version, body):
        status, _, body = side_by_side.upstream(upstream_placement, method, path, version, body,
                                                NOVA_ROLES)
        return status, body
    nova_lifecycle(call)
