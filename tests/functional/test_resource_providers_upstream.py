"""The same provider, trait and aggregate requests against upstream
placement (a real process) and ours: statuses and bodies must agree.

Bodies are compared after removing what legitimately differs (request ids,
error wording, timestamps, generated uuids, list order).
"""
import json

import pytest
import requests

from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

CN1 = 'c0a80101-0000-4000-8000-000000000001'
CN2 = 'c0a80101-0000-4000-8000-000000000002'
NUMA = 'c0a80101-0000-4000-8000-000000000003'
AGG1 = 'a99a0000-0000-4000-8000-000000000001'
AGG2 = 'a99a0000-0000-4000-8000-000000000002'
MISSING = 'c0a80101-0000-4000-8000-0000000000ff'

# (method, path, version, body) run in order on both servers.
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
    ('DELETE', '/resource_providers/%s' % CN1, '1.23', None),
    ('DELETE', '/resource_providers/%s' % NUMA, '1.23', None),
    ('DELETE', '/resource_providers/%s/traits' % CN1, '1.6', None),
    ('GET', '/resource_providers/%s/traits' % CN1, '1.6', None),
    ('DELETE', '/resource_providers/%s' % CN1, '1.23', None),
    ('DELETE', '/traits/CUSTOM_GOLD', '1.6', None),
    ('GET', '/resource_providers', '1.39', None),
]


def _canonical(status, body):
    """What must agree between the two servers for one response."""
    if not body:
        return status, None
    if 'errors' in body:
        code = body['errors'][0].get('code')
        # Both sides give the un-coded errors a default code; compare only
        # the specific ones.
        if code and not code.startswith('placement.undefined'):
            return status, code
        return status, None
    if 'resource_providers' in body:
        return status, sorted(json.dumps(rp, sort_keys=True)
                              for rp in body['resource_providers'])
    if 'uuid' in body:
        return status, body
    for key in ('traits', 'aggregates'):
        if key in body:
            body = dict(body, **{key: sorted(body[key])})
    return status, body


def _ours(api, method, path, version, body):
    resp = api.request(method, path, body, version=version)
    return resp.status_int, (resp.json if resp.body else None)


def _upstream(base, method, path, version, body):
    headers = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement %s' % version}
    data = None
    if body is not None:
        headers['Content-Type'] = 'application/json'
        data = json.dumps(body)
    resp = requests.request(method, base + path, headers=headers, data=data, timeout=30)
    return resp.status_code, (resp.json() if resp.content else None)


def test_same_answers_as_upstream(api, upstream_placement):
    # The upstream fixture keeps custom traits between tests: start clean.
    _upstream(upstream_placement, 'DELETE', '/traits/CUSTOM_GOLD', '1.6', None)
    for method, path, version, body in SCRIPT:
        ours = _canonical(*_ours(api, method, path, version, body))
        theirs = _canonical(*_upstream(upstream_placement, method, path, version, body))
        assert ours == theirs, '%s %s @%s' % (method, path, version)
