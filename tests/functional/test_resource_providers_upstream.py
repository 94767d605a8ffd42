"""The same provider, trait and aggregate requests against upstream
placement (a real process) and ours: statuses and bodies must agree.

Bodies are compared after removing what legitimately differs (request ids,
error wording, timestamps, generated uuids, list order).
"""
import json

from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

CN1 = 'c0a80101-0000-4000-8000-000000000001'
CN2 = 'c0a80101-0000-4000-8000-000000000002'
NUMA = 'c0a80101-0000-4000-8000-000000000003'
AGG1 = 'a99a0000-0000-4000-8000-000000000001'
AGG2 = 'a99a0000-0000-4000-8000-000000000002'
MISSING = 'c0a80101-0000-4000-8000-0000000000ff'
CONSUMER = 'cccccccc-0000-4000-8000-000000000001'

# (method, path, version, body[, expected status]) run in order on both
# servers; the expected status, where given, makes sure a step that later
# ones build on did what it should (and not fail the same way on both).
SCRIPT = [
    ('POST', '/resource_providers', '1.0', {'name': 'cn1', 'uuid': CN1}),
    ('POST', '/resource_providers', '1.20', {'name': 'cn2', 'uuid': CN2}),
    ('POST', '/resource_providers', '1.20', {'name': 'cn1', 'uuid': NUMA}),
    ('POST', '/resource_providers', '1.20', {'name': 'numa', 'uuid': CN1}),
    ('POST', '/resource_providers', '1.14', {'name': 'x', 'parent_provider_uuid': MISSING}),
    ('POST', '/resource_providers', '1.13', {'name': 'x', 'parent_provider_uuid': CN1}),
    ('POST', '/resource_providers', '1.20', {'name': 'numa', 'uuid': NUMA,
                                             'parent_provider_uuid': CN1}),
    ('POST', '/resource_providers', '1.20', {'uuid': MISSING}),
    ('POST', '/resource_providers', '1.20', {'name': 'y', 'uuid': 'nope'}),
    ('GET', '/resource_providers/%s' % NUMA, '1.0', None),
    ('GET', '/resource_providers/%s' % NUMA, '1.14', None),
    ('GET', '/resource_providers/%s' % MISSING, '1.14', None),
    ('PUT', '/resource_providers/%s' % CN2, '1.14', {'name': 'cn2b'}),
    ('PUT', '/resource_providers/%s' % CN2, '1.14', {'name': 'cn1'}),
    ('PUT', '/resource_providers/%s' % NUMA, '1.14', {'name': 'numa',
                                                      'parent_provider_uuid': CN2}),
    ('PUT', '/resource_providers/%s' % NUMA, '1.14', {'name': 'numa',
                                                      'parent_provider_uuid': None}),
    ('PUT', '/resource_providers/%s' % NUMA, '1.37', {'name': 'numa',
                                                      'parent_provider_uuid': CN2}),
    ('PUT', '/resource_providers/%s' % CN2, '1.37', {'name': 'cn2b',
                                                     'parent_provider_uuid': NUMA}),
    ('PUT', '/resource_providers/%s' % NUMA, '1.37', {'name': 'numa',
                                                      'parent_provider_uuid': CN1}),
    ('PUT', '/resource_providers/%s/traits' % CN1, '1.6',
     {'traits': ['HW_CPU_X86_AVX'], 'resource_provider_generation': 0}),
    ('PUT', '/resource_providers/%s/traits' % CN1, '1.6',
     {'traits': ['HW_CPU_X86_AVX'], 'resource_provider_generation': 0}),
    ('PUT', '/resource_providers/%s/traits' % CN1, '1.6',
     {'traits': ['HW_CPU_X86_AVX'], 'resource_provider_generation': 1}),
    ('PUT', '/resource_providers/%s/traits' % CN2, '1.6',
     {'traits': ['HW_CPU_X86_AVX', 'HW_CPU_X86_SSE'], 'resource_provider_generation': 0}),
    ('PUT', '/resource_providers/%s/traits' % CN2, '1.6',
     {'traits': ['CUSTOM_NOPE'], 'resource_provider_generation': 1}),
    ('PUT', '/resource_providers/%s/traits' % CN2, '1.6', {'traits': []}),
    ('GET', '/resource_providers/%s/traits' % CN2, '1.6', None),
    ('PUT', '/traits/CUSTOM_GOLD', '1.6', None),
    ('PUT', '/traits/CUSTOM_GOLD', '1.6', None),
    ('PUT', '/traits/GOLD', '1.6', None),
    ('GET', '/traits/CUSTOM_GOLD', '1.6', None),
    ('GET', '/traits/CUSTOM_SILVER', '1.6', None),
    ('GET', '/traits?name=in:CUSTOM_GOLD,HW_CPU_X86_AVX,CUSTOM_X', '1.6', None),
    ('GET', '/traits?associated=true', '1.6', None),
    ('GET', '/traits?name=bad', '1.6', None),
    ('GET', '/traits?associated=maybe', '1.6', None),
    ('PUT', '/resource_providers/%s/traits' % NUMA, '1.6',
     {'traits': ['CUSTOM_GOLD'], 'resource_provider_generation': 0}),
    ('DELETE', '/traits/CUSTOM_GOLD', '1.6', None),
    ('DELETE', '/traits/HW_CPU_X86_AVX', '1.6', None),
    ('PUT', '/resource_providers/%s/aggregates' % CN1, '1.1', [AGG1]),
    ('PUT', '/resource_providers/%s/aggregates' % CN2, '1.19',
     {'aggregates': [AGG1, AGG2], 'resource_provider_generation': 1}),
    ('PUT', '/resource_providers/%s/aggregates' % CN2, '1.19',
     {'aggregates': [AGG1, AGG2], 'resource_provider_generation': 1}),
    ('PUT', '/resource_providers/%s/aggregates' % CN2, '1.19', [AGG1]),
    ('PUT', '/resource_providers/%s/aggregates' % CN2, '1.1', [AGG1, AGG1]),
    ('GET', '/resource_providers/%s/aggregates' % CN2, '1.19', None),
    ('GET', '/resource_providers/%s/aggregates' % CN1, '1.1', None),
    ('PUT', '/resource_providers/%s/inventories' % CN1, '1.20',
     {'inventories': {'VCPU': {'total': 8}}, 'resource_provider_generation': 1}, 200),
    ('PUT', '/resource_providers/%s/inventories' % CN2, '1.20',
     {'inventories': {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024, 'max_unit': 512}},
      'resource_provider_generation': 2}, 200),
    ('PUT', '/allocations/%s' % CONSUMER, '1.8',
     {'allocations': [{'resource_provider': {'uuid': CN1}, 'resources': {'VCPU': 2}}],
      'project_id': 'p', 'user_id': 'u'}, 204),
    ('GET', '/resource_providers?resources=VCPU:7', '1.4', None, 200),
    ('GET', '/resource_providers?resources=VCPU:6', '1.4', None, 200),
    ('GET', '/resource_providers?resources=VCPU:1,MEMORY_MB:512', '1.4', None, 200),
    ('GET', '/resource_providers?resources=MEMORY_MB:513', '1.4', None, 200),
    ('GET', '/resource_providers', '1.14', None),
    ('GET', '/resource_providers?name=cn1', '1.0', None),
    ('GET', '/resource_providers?uuid=nope', '1.0', None),
    ('GET', '/resource_providers?member_of=%s' % AGG2, '1.3', None),
    ('GET', '/resource_providers?member_of=in:%s,%s' % (AGG1, AGG2), '1.3', None),
    ('GET', '/resource_providers?member_of=%s&member_of=%s' % (AGG1, AGG2), '1.24', None),
    ('GET', '/resource_providers?member_of=%s&member_of=%s' % (AGG1, AGG2), '1.23', None),
    ('GET', '/resource_providers?member_of=!%s' % AGG2, '1.32', None),
    ('GET', '/resource_providers?member_of=!%s' % AGG2, '1.31', None),
    ('GET', '/resource_providers?required=HW_CPU_X86_AVX', '1.18', None),
    ('GET', '/resource_providers?required=!HW_CPU_X86_SSE', '1.22', None),
    ('GET', '/resource_providers?required=!HW_CPU_X86_SSE', '1.21', None),
    ('GET', '/resource_providers?required=in:HW_CPU_X86_SSE,CUSTOM_GOLD', '1.39', None),
    ('GET', '/resource_providers?required=in:HW_CPU_X86_SSE,CUSTOM_GOLD', '1.38', None),
    ('GET', '/resource_providers?required=HW_CPU_X86_AVX&required=HW_CPU_X86_SSE',
     '1.38', None),
    ('GET', '/resource_providers?required=CUSTOM_NOPE', '1.18', None),
    ('GET', '/resource_providers?in_tree=%s' % NUMA, '1.14', None),
    ('GET', '/resource_providers?in_tree=%s' % MISSING, '1.14', None),
    ('GET', '/resource_providers?resources=VCPU:1', '1.4', None),
    ('GET', '/resource_providers?resources=VCPU', '1.4', None),
    ('GET', '/resource_providers?resources=CUSTOM_NOPE:1', '1.4', None),
    ('GET', '/resource_providers?colour=blue', '1.39', None),
    ('GET', '/resource_providers?member_of=%s&resources=VCPU:1&required=HW_CPU_X86_AVX'
     % AGG1, '1.18', None, 200),
    ('GET', '/resource_providers?in_tree=%s&required=!HW_CPU_X86_AVX' % CN1, '1.22',
     None, 200),
    ('GET', '/resource_providers?member_of=!in:%s,%s' % (AGG1, AGG2), '1.32', None, 200),
    ('GET', '/resource_providers?name=', '1.39', None, 200),
    ('GET', '/resource_providers?resources=VCPU:0', '1.39', None),
    ('GET', '/resource_providers?required=', '1.39', None),
    ('GET', '/resource_providers?required=in:HW_CPU_X86_AVX,!HW_CPU_X86_SSE', '1.39', None),
    ('GET', '/resource_providers/%s/aggregates' % CN1, '1.0', None),
    ('GET', '/resource_providers/%s/traits' % CN1, '1.5', None),
    ('GET', '/traits', '1.5', None),
    ('GET', '/traits?name=startswith:HW_CPU_X86_SSE', '1.15', None, 200),
    ('GET', '/resource_providers/%s/traits' % CN2, '1.15', None, 200),
    ('GET', '/resource_providers/%s/aggregates' % CN2, '1.15', None, 200),
    ('PUT', '/resource_providers/%s/aggregates' % CN2, '1.15', [AGG2], 200),
    ('GET', '/resource_providers/%s' % CN2, '1.15', None, 200),
    ('DELETE', '/resource_providers/%s' % CN1, '1.23', None, 409),
    ('DELETE', '/resource_providers/%s' % NUMA, '1.23', None, 204),
    ('DELETE', '/resource_providers/%s/traits' % CN1, '1.6', None, 204),
    ('GET', '/resource_providers/%s/traits' % CN1, '1.6', None),
    ('DELETE', '/resource_providers/%s' % CN1, '1.23', None, 409),
    ('DELETE', '/allocations/%s' % CONSUMER, '1.0', None, 204),
    ('DELETE', '/resource_providers/%s' % CN1, '1.23', None, 204),
    ('DELETE', '/traits/CUSTOM_GOLD', '1.6', None),
    ('GET', '/resource_providers', '1.39', None),
]


def _canonical(status, headers, body):
    """What must agree between the two servers for one response."""
    return (side_by_side.caching_headers(headers),) + _canonical_body(status, body)


def _canonical_body(status, body):
    if not body:
        return status, None
    if 'errors' in body:
        return status, side_by_side.specific_code(body)
    if 'resource_providers' in body:
        return status, sorted(json.dumps(rp, sort_keys=True)
                              for rp in body['resource_providers'])
    if 'uuid' in body:
        return status, body
    for key in ('traits', 'aggregates'):
        if key in body:
            body = dict(body, **{key: sorted(body[key])})
    return status, body


def test_same_answers_as_upstream(api, upstream_placement):
    # The upstream fixture keeps custom traits between tests: start clean.
    side_by_side.upstream(upstream_placement, 'DELETE', '/traits/CUSTOM_GOLD', '1.6')
    for method, path, version, body, *expected in SCRIPT:
        ours = _canonical(*side_by_side.ours(api, method, path, version, body))
        if expected:
            assert ours[1] == expected[0], '%s %s @%s: %s' % (method, path, version, ours)
        theirs = _canonical(*side_by_side.upstream(upstream_placement, method, path, version,
                                                   body))
        if method == 'PUT' and path.count('/') == 2:
            # Upstream omits Last-Modified on a provider update that follows
            # a failed one (a stale object); we always send it.
            ours, theirs = ours[1:], theirs[1:]
        assert ours == theirs, '%s %s @%s' % (method, path, version)
