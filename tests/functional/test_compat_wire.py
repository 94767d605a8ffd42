"""Wire details clients parse, ours against upstream placement 16.0.0 (a
real process): status, Content-Type, OpenStack-API-Version, Vary, whether
there is a body, and the key sets of bodies and error objects, for the
same requests in the same order. The bodies' values are compared by the
*_upstream.py tests; this file is about the envelope.
"""
from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

RP = 'c1c1c1c1-0000-4000-8000-000000000001'
CHILD = 'c1c1c1c1-0000-4000-8000-000000000002'
AGG = 'c1c1c1c1-0000-4000-8000-0000000000a1'
C1 = 'c1c1c1c1-0000-4000-8000-0000000000c1'
INV = '/resource_providers/%s/inventories' % RP


def allocation(gen, ctype=None):
    body = {'allocations': {RP: {'resources': {'VCPU': 1}}}, 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': gen}
    if ctype:
        body['consumer_type'] = ctype
    return body


# (method, path, version or None for no header, body)
SCRIPT = [
    ('GET', '/', None, None),
    ('GET', '/', '1.39', None),
    ('GET', '/resource_providers', '1.40', None),
    ('GET', '/resource_providers', '2.0', None),
    ('GET', '/resource_providers', 'x.y', None),
    ('GET', '/resource_providers', 'latest', None),
    ('GET', '/resource_providers', None, None),
    ('POST', '/resource_providers', '1.0', {'name': 'w1', 'uuid': RP}),
    ('POST', '/resource_providers', '1.20', {'name': 'w2', 'uuid': CHILD,
                                             'parent_provider_uuid': RP}),
    ('POST', '/resource_providers', '1.20', {'name': 'w2'}),
    ('POST', '/resource_providers', '1.20', 'not json'),
    ('PATCH', '/resource_providers', '1.20', None),
    ('GET', '/resource_providers/', '1.20', None),
    ('GET', '/nope', '1.20', None),
    ('GET', '/resource_providers/%s' % RP, '1.0', None),
    ('GET', '/resource_providers/%s' % RP, '1.14', None),
    ('GET', '/resource_providers?in_tree=%s' % CHILD, '1.14', None),
    ('PUT', '/resource_providers/%s' % CHILD, '1.14', {'name': 'w2b', 'parent_provider_uuid': RP}),
    ('PUT', INV, '1.20', {'resource_provider_generation': 0,
                          'inventories': {'VCPU': {'total': 4}}}),
    ('PUT', INV, '1.20', {'resource_provider_generation': 0,
                          'inventories': {'VCPU': {'total': 4}}}),
    ('GET', INV, '1.0', None),
    ('GET', INV + '/VCPU', '1.15', None),
    ('PUT', '/resource_providers/%s/traits' % RP, '1.6',
     {'resource_provider_generation': 1, 'traits': ['HW_CPU_X86_AVX']}),
    ('PUT', '/resource_providers/%s/traits' % RP, '1.23',
     {'resource_provider_generation': 1, 'traits': ['HW_CPU_X86_AVX']}),
    ('GET', '/resource_providers/%s/traits' % RP, '1.6', None),
    ('PUT', '/resource_providers/%s/aggregates' % RP, '1.1', [AGG]),
    ('PUT', '/resource_providers/%s/aggregates' % RP, '1.19',
     {'aggregates': [AGG], 'resource_provider_generation': 2}),
    ('GET', '/resource_providers/%s/aggregates' % RP, '1.19', None),
    ('PUT', '/allocations/%s' % C1, '1.28', allocation(None)),
    ('PUT', '/allocations/%s' % C1, '1.28', allocation(None)),
    ('GET', '/allocations/%s' % C1, '1.12', None),
    ('GET', '/allocations/%s' % C1, '1.28', None),
    ('GET', '/allocations/%s' % C1, '1.38', None),
    ('PUT', '/allocations/%s' % C1, '1.38', allocation(1, 'INSTANCE')),
    ('GET', '/resource_providers/%s/allocations' % RP, '1.0', None),
    ('GET', '/resource_providers/%s/usages' % RP, '1.0', None),
    ('GET', '/usages?project_id=p', '1.9', None),
    ('GET', '/usages?project_id=p', '1.38', None),
    ('GET', '/allocation_candidates?resources=VCPU:1', '1.10', None),
    ('GET', '/allocation_candidates?resources=VCPU:1', '1.39', None),
    ('GET', '/allocation_candidates?resources=VCPU:1', '1.9', None),
    ('DELETE', '/resource_providers/%s' % RP, '1.39', None),
    ('POST', '/reshaper', '1.29', {}),
    ('GET', '/resource_classes/VCPU', '1.2', None),
    ('PUT', '/resource_classes/CUSTOM_C1_WIRE', '1.7', None),
    ('PUT', '/resource_classes/CUSTOM_C1_WIRE', '1.7', None),
    ('DELETE', '/resource_classes/CUSTOM_C1_WIRE', '1.7', None),
    ('PUT', '/traits/CUSTOM_C1_WIRE', '1.6', None),
    ('PUT', '/traits/CUSTOM_C1_WIRE', '1.6', None),
    ('DELETE', '/traits/CUSTOM_C1_WIRE', '1.6', None),
    ('DELETE', '/allocations/%s' % C1, '1.0', None),
    ('DELETE', '/allocations/%s' % C1, '1.0', None),
    ('DELETE', '/resource_providers/%s' % CHILD, '1.0', None),
    ('DELETE', '/resource_providers/%s' % RP, '1.0', None),
]


def shape(value):
    """Key sets all the way down (a uuid- or class-keyed map counts as
    one key: its entries are data, not fields)."""
    if isinstance(value, dict):
        keys = sorted(value)
        if keys and all(len(k) == 36 or k.isupper() for k in keys):
            return {'*': shape(value[keys[0]])}
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


def envelope(status, headers, body):
    """What a client sees besides the values."""
    content_type = headers.get('Content-Type')
    error = body['errors'][0] if isinstance(body, dict) and 'errors' in body else None
    if error is not None:
        # Upstream leaves the code out of errors raised before a version
        # is known (bad or unknown version: no version header then); ours
        # sends its default code there.
        keys = sorted(k for k in error
                      if k != 'code' or 'OpenStack-API-Version' in headers)
        body_shape = {'error keys': keys}
    else:
        body_shape = shape(body)
    return {'status': status,
            'content type': content_type.split(';')[0] if content_type else None,
            'version header': headers.get('OpenStack-API-Version'),
            'body': body_shape}


def test_envelopes_as_upstream(api, upstream_placement):
    for request in SCRIPT:
        ours = side_by_side.ours(api, *request)
        theirs = side_by_side.upstream(upstream_placement, *request)
        assert envelope(*ours) == envelope(*theirs), request
        # Caches must key on the version: on every response of ours, and
        # on every one of upstream's that carries it.
        assert ours[1].get('Vary', '').lower() == 'openstack-api-version', request
        if 'Vary' in theirs[1]:
            assert theirs[1]['Vary'].lower() == 'openstack-api-version', request


def test_unacceptable_version_names_the_range(api, upstream_placement):
    """A client asking too new a version learns the range from the error."""
    for status, headers, body in (side_by_side.ours(api, 'GET', '/', '1.40'),
                                  side_by_side.upstream(upstream_placement, 'GET', '/', '1.40')):
        assert status == 406
        error = body['errors'][0]
        assert (error['min_version'], error['max_version']) == ('1.0', '1.39')
        assert 'OpenStack-API-Version' not in headers


def test_head_is_not_get(api, upstream_placement):
    """Upstream routes no HEAD: a 405 that lists the methods."""
    for path in ('/', '/resource_providers', '/resource_providers/%s' % RP):
        ours = side_by_side.ours(api, 'HEAD', path, '1.39', None)
        theirs = side_by_side.upstream(upstream_placement, 'HEAD', path, '1.39', None)
        assert ours[0] == theirs[0] == 405, path
        allowed = [sorted(r[1]['Allow'].split(', ')) for r in (ours, theirs)]
        assert allowed[0] == allowed[1], path
