"""Inventory, allocation and usage requests against upstream placement (a
real process) and ours: statuses, specific error codes and bodies
(generations included) must agree.
"""
from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

CN1 = 'c0a80101-0000-4000-8000-0000000000a1'
CN2 = 'c0a80101-0000-4000-8000-0000000000a2'
MISSING = 'c0a80101-0000-4000-8000-0000000000ff'
C1, C2, C3, C4, C5, C6, C7, C8, C9 = ('c0c0c0c0-0000-4000-8000-00000000000%d' % i
                                      for i in range(1, 10))
INV = '/resource_providers/%s/inventories'


def alloc(resources_by_rp, gen=None, ctype=None, project='p', user='u'):
    body = {'allocations': {rp: {'resources': res} for rp, res in resources_by_rp.items()},
            'project_id': project, 'user_id': user, 'consumer_generation': gen}
    if ctype:
        body['consumer_type'] = ctype
    return body


# (method, path, version, body) run in order on both servers.
SCRIPT = [
    ('POST', '/resource_providers', '1.20', {'name': 'cn1', 'uuid': CN1}),
    ('POST', '/resource_providers', '1.20', {'name': 'cn2', 'uuid': CN2}),
    ('GET', INV % CN1, '1.0', None),
    ('PUT', INV % CN1, '1.0', {'resource_provider_generation': 0, 'inventories': {
        'VCPU': {'total': 8, 'max_unit': 4},
        'MEMORY_MB': {'total': 2048, 'step_size': 256},
        'DISK_GB': {'total': 100, 'reserved': 20, 'allocation_ratio': 1.5}}}),
    ('PUT', INV % CN1, '1.23', {'resource_provider_generation': 0, 'inventories': {}}),
    ('PUT', INV % CN2, '1.25', {'resource_provider_generation': 0,
                                'inventories': {'VCPU': {'total': 4, 'reserved': 4}}}),
    ('PUT', INV % CN2, '1.26', {'resource_provider_generation': 0,
                                'inventories': {'VCPU': {'total': 4, 'reserved': 4}}}),
    ('PUT', INV % CN2, '1.26', {'resource_provider_generation': 1,
                                'inventories': {'VCPU': {'total': 0}}}),
    ('PUT', INV % CN2, '1.26', {'resource_provider_generation': 1,
                                'inventories': {'CUSTOM_NOPE': {'total': 1}}}),
    ('PUT', INV % CN2, '1.25', {'resource_provider_generation': 1,
                                'inventories': {'VCPU': {'total': 1, 'allocation_ratio': 0}}}),
    ('PUT', INV % CN2, '1.26', {'resource_provider_generation': 1,
                                'inventories': {'VCPU': {'total': 1, 'colour': 'red'}}}),
    ('POST', INV % CN2, '1.26', {'resource_class': 'DISK_GB', 'total': 10}),
    ('POST', INV % CN2, '1.26', {'resource_class': 'DISK_GB', 'total': 10}),
    ('POST', INV % CN2, '1.26', {'resource_class': 'CUSTOM_NOPE', 'total': 10}),
    ('GET', INV % CN2 + '/DISK_GB', '1.0', None),
    ('GET', INV % CN2 + '/MEMORY_MB', '1.0', None),
    ('PUT', INV % CN2 + '/DISK_GB', '1.0', {'resource_provider_generation': 2, 'total': 20}),
    ('PUT', INV % CN2 + '/DISK_GB', '1.23', {'resource_provider_generation': 2, 'total': 30}),
    ('PUT', INV % CN2 + '/MEMORY_MB', '1.0', {'resource_provider_generation': 3, 'total': 1}),
    ('DELETE', INV % CN2, '1.4', None),
    ('DELETE', INV % CN2 + '/DISK_GB', '1.0', None),
    ('DELETE', INV % CN2 + '/DISK_GB', '1.0', None),
    ('GET', INV % CN2, '1.0', None),
    ('GET', INV % MISSING, '1.0', None),

    ('PUT', '/allocations/%s' % C1, '1.0', {'allocations': [
        {'resource_provider': {'uuid': CN1}, 'resources': {'VCPU': 2}}]}),
    ('GET', '/allocations/%s' % C1, '1.0', None),
    ('PUT', '/allocations/%s' % C1, '1.8', {'allocations': [
        {'resource_provider': {'uuid': CN1}, 'resources': {'VCPU': 2}}]}),
    ('PUT', '/allocations/%s' % C2, '1.28', alloc({CN1: {'VCPU': 1, 'MEMORY_MB': 512}})),
    ('GET', '/allocations/%s' % C2, '1.12', None),
    ('GET', '/allocations/%s' % C2, '1.28', None),
    ('GET', '/allocations/%s' % C2, '1.38', None),
    ('PUT', '/allocations/%s' % C2, '1.28', alloc({CN1: {'VCPU': 1}})),
    ('PUT', '/allocations/%s' % C2, '1.28', alloc({CN1: {'VCPU': 1}}, gen=5)),
    ('PUT', '/allocations/%s' % C3, '1.28', alloc({CN1: {'VCPU': 1}}, gen=3)),
    ('PUT', '/allocations/%s' % C3, '1.38', alloc({CN1: {'VCPU': 5}}, ctype='INSTANCE')),
    ('PUT', '/allocations/%s' % C3, '1.38', alloc({CN1: {'MEMORY_MB': 100}}, ctype='INSTANCE')),
    ('PUT', '/allocations/%s' % C3, '1.38', alloc({CN1: {'DISK_GB': 121}}, ctype='INSTANCE')),
    # Upstream leaves a consumer row behind after these two 400s (its
    # consumer is made in a separate transaction): use throwaway consumers.
    ('PUT', '/allocations/%s' % C4, '1.38', alloc({MISSING: {'VCPU': 1}}, ctype='INSTANCE')),
    ('PUT', '/allocations/%s' % C8, '1.38', alloc({CN1: {'CUSTOM_NOPE': 1}}, ctype='INSTANCE')),
    ('PUT', '/allocations/%s' % C3, '1.38', alloc({CN1: {'SRIOV_NET_VF': 1}}, ctype='INSTANCE')),
    ('PUT', '/allocations/%s' % C3, '1.38', alloc({CN1: {'VCPU': 1}})),
    ('PUT', '/allocations/%s' % C3, '1.38', alloc({CN1: {'DISK_GB': 120}, CN2: {'VCPU': 0}},
                                                 ctype='INSTANCE')),
    ('PUT', '/allocations/%s' % C3, '1.38', alloc({CN1: {'DISK_GB': 120}}, ctype='INSTANCE')),
    ('PUT', '/allocations/not-a-uuid', '1.38', alloc({CN1: {'VCPU': 1}}, ctype='INSTANCE')),
    ('GET', '/resource_providers/%s/allocations' % CN1, '1.0', None),
    ('GET', '/resource_providers/%s/allocations' % CN1, '1.28', None),
    ('GET', '/resource_providers/%s/allocations' % MISSING, '1.28', None),
    ('GET', '/resource_providers/%s/usages' % CN1, '1.0', None),
    ('GET', '/usages?project_id=p', '1.8', None),
    ('GET', '/usages?project_id=p', '1.9', None),
    ('GET', '/usages?project_id=p&user_id=u', '1.9', None),
    ('GET', '/usages?user_id=u', '1.9', None),
    ('GET', '/usages?project_id=p', '1.38', None),
    ('GET', '/usages?project_id=p&consumer_type=all', '1.38', None),
    ('GET', '/usages?project_id=p&consumer_type=unknown', '1.38', None),
    ('GET', '/usages?project_id=p&consumer_type=INSTANCE', '1.38', None),
    ('GET', '/usages?project_id=p&consumer_type=INSTANCE', '1.37', None),

    ('POST', '/allocations', '1.12', {C5: alloc({CN1: {'VCPU': 1}})}),
    ('POST', '/allocations', '1.13', {C5: {'allocations': {CN1: {'resources': {'VCPU': 1}}},
                                           'project_id': 'p', 'user_id': 'u'}}),
    ('POST', '/allocations', '1.38', {C6: alloc({CN1: {'VCPU': 1}}, ctype='MIGRATION'),
                                      C7: alloc({CN1: {'VCPU': 4}}, ctype='MIGRATION')}),
    ('GET', '/allocations/%s' % C6, '1.38', None),
    ('POST', '/allocations', '1.38', {C6: alloc({CN1: {'VCPU': 1}}, ctype='MIGRATION'),
                                      C5: alloc({}, gen=1, ctype='INSTANCE')}),
    ('GET', '/allocations/%s' % C5, '1.38', None),
    ('GET', '/allocations/%s' % C6, '1.38', None),
    ('POST', '/allocations', '1.38', {}),
    ('GET', '/usages?project_id=p', '1.38', None),

    ('PUT', INV % CN1, '1.23', {'resource_provider_generation': 9, 'inventories': {
        'MEMORY_MB': {'total': 2048}, 'DISK_GB': {'total': 100}}}),
    ('DELETE', INV % CN1, '1.23', None),
    # (DELETE of one allocated class: upstream answers concurrent_update,
    # we answer inventory.inuse like the other removals; not compared.)
    ('PUT', INV % CN1, '1.23', {'resource_provider_generation': 9, 'inventories': {
        'VCPU': {'total': 1}, 'MEMORY_MB': {'total': 2048}, 'DISK_GB': {'total': 100}}}),
    ('GET', '/resource_providers/%s/usages' % CN1, '1.0', None),
    ('PUT', '/allocations/%s' % C2, '1.27', {'allocations': {}, 'project_id': 'p',
                                             'user_id': 'u'}),
    ('PUT', '/allocations/%s' % C2, '1.28', alloc({}, gen=1)),
    ('GET', '/allocations/%s' % C2, '1.28', None),
    ('DELETE', '/allocations/%s' % C1, '1.0', None),
    ('DELETE', '/allocations/%s' % C1, '1.0', None),
    ('GET', '/resource_providers/%s/allocations' % CN1, '1.28', None),
    ('GET', INV % CN1, '1.0', None),

    # Edges: mappings (1.34), empty writes for unknown consumers, moving a
    # consumer to another project, lowering total below usage.
    ('PUT', '/allocations/%s' % C1, '1.34', dict(alloc({CN1: {'VCPU': 1}}),
                                                 mappings={'': [CN1]})),
    ('PUT', '/allocations/%s' % C1, '1.33', dict(alloc({CN1: {'VCPU': 1}}, gen=1),
                                                 mappings={'': [CN1]})),
    ('PUT', '/allocations/%s' % C1, '1.34', dict(alloc({CN1: {'VCPU': 1}}, gen=1),
                                                 mappings={'': ['not-a-uuid']})),
    ('PUT', '/allocations/%s' % C1, '1.28', alloc({CN1: {'VCPU': 2}}, gen=1, project='p9')),
    ('GET', '/allocations/%s' % C1, '1.38', None),
    ('GET', '/usages?project_id=p9', '1.9', None),
    ('PUT', '/allocations/%s' % C9, '1.28', alloc({}, gen=None)),
    ('GET', '/allocations/%s' % C9, '1.28', None),
    ('POST', '/allocations', '1.28', {C8: alloc({}, gen=None)}),
    ('GET', '/allocations/not-a-uuid', '1.28', None),
    ('POST', INV % CN2, '1.26', {'resource_class': 'DISK_GB', 'total': 10,
                                 'resource_provider_generation': 99}),
    ('PUT', INV % CN1, '1.26', {'resource_provider_generation': 11, 'inventories': {
        'VCPU': {'total': 1, 'min_unit': 2, 'max_unit': 1},
        'MEMORY_MB': {'total': 2048}, 'DISK_GB': {'total': 100}}}),
    ('GET', '/resource_providers/%s/usages' % CN1, '1.0', None),
    ('PUT', INV % CN1 + '/VCPU', '1.26', {'resource_provider_generation': 12, 'total': 2}),
]


def _canonical(status, headers, body):
    """What must agree between the two servers for one response."""
    status = (status, side_by_side.caching_headers(headers))
    if not body:
        return status, None
    if 'errors' in body:
        return status, side_by_side.specific_code(body)
    return status, body


def test_same_answers_as_upstream(api, upstream_placement):
    mismatches = []
    for method, path, version, body in SCRIPT:
        ours = _canonical(*side_by_side.ours(api, method, path, version, body))
        theirs = _canonical(*side_by_side.upstream(upstream_placement, method, path, version,
                                                   body))
        if ours != theirs:
            mismatches.append('%s %s @%s: ours %s, upstream %s'
                              % (method, path, version, ours, theirs))
    assert not mismatches, '\n'.join(mismatches)
