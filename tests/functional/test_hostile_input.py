"""Hostile input: whatever a client sends, the answer is never a 500.

Property: for every route of ``placement_server.handlers.ROUTES`` (so an
endpoint added later is covered without touching this file), with
malformed or hostile path segments, query strings, headers and bodies,
the server answers below 500, and every error is a JSON ``errors`` body
whose first entry has status, title and detail, plus ``code`` when the
answer's microversion is 1.23 or later (or none was negotiated).

Bodies are either raw bytes that are not JSON, arbitrary JSON, or a valid
looking body for the endpoint with one part made hostile, so that the
examples reach past schema validation into the handlers and queries.
Most examples run on SQLite; fewer on PostgreSQL and MySQL.
"""
import json
import re
import urllib.parse

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from placement_server import handlers

EXAMPLES = {'sqlite': 250, 'postgresql': 40, 'mysql': 40}

RP = '6f1d4c1e-2b7a-4c5e-9a43-1d7d2a0c0b11'       # exists, with inventory
CHILD = '0b9f2d1c-8a34-4e8e-9b6f-3c2e1d0a9f22'    # its child
CONSUMER = '9d3a6c44-5e71-4f0a-8c2b-7e6d5c4b3a21'  # has an allocation
AGG = '14a5c8a3-5a99-4e8f-88be-00d85fcb1c17'

# -- hostile atoms ---------------------------------------------------------

ascii_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40)
any_text = st.text(max_size=40)
big_ints = st.sampled_from([-1, 0, 1, 2**31 - 1, 2**31, 2**63 - 1, 2**63, 2**64, -2**63 - 1,
                            10**30])
nasty_strings = st.sampled_from([
    '', ' ', 'null', 'None', '\x00', '%00', '../..', "' OR 1=1 --", 'DROP TABLE traits',
    'in:', 'in:,', '!', '!!VCPU', 'in:!x', ',', ',,,', ':', 'VCPU', 'VCPU:', 'VCPU:-1',
    'VCPU:0', 'VCPU:1.5', 'VCPU:99999999999999999999', 'VCPU:1,VCPU:2', 'DISK_GB:1,,',
    'CUSTOM_', 'CUSTOM_FOO', 'custom_foo', 'CUSTOM_' + 'X' * 300, 'HW_CPU_X86_AVX2',
    'MISC_SHARES_VIA_AGGREGATE', RP, CHILD, RP.upper(), RP.replace('-', ''), RP + 'x',
    AGG, 'in:' + AGG, '!' + AGG, 'in:%s,%s' % (AGG, RP), '1.5', '-1', 'true', 'é' * 10,
    '\u202e', '\ud7ff', 'x' * 5000, 'none', 'isolate', '_COMPUTE', '_', '_1,_2', 'INSTANCE',
])
leaf = st.one_of(st.none(), st.booleans(), big_ints, st.integers(),
                 st.floats(allow_nan=False, allow_infinity=False), nasty_strings, any_text)
json_value = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(nasty_strings, any_text), inner, max_size=4)), max_leaves=12)

# -- valid looking bodies per route, to be made hostile one part at a time --

INVENTORY = {'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8, 'step_size': 1,
             'allocation_ratio': 1.0}
ALLOCATION = {'allocations': {RP: {'resources': {'VCPU': 1}}}, 'consumer_generation': None,
              'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'}
BODIES = {
    ('POST', '/resource_providers'): {'name': 'cn', 'uuid': CHILD,
                                      'parent_provider_uuid': RP},
    ('PUT', '/resource_providers/{uuid}'): {'name': 'cn', 'parent_provider_uuid': RP},
    ('PUT', '/resource_providers/{uuid}/inventories'): {
        'resource_provider_generation': 1, 'inventories': {'VCPU': INVENTORY}},
    ('POST', '/resource_providers/{uuid}/inventories'): dict(INVENTORY, resource_class='VCPU'),
    ('PUT', '/resource_providers/{uuid}/inventories/{resource_class}'): dict(
        INVENTORY, resource_provider_generation=1),
    ('PUT', '/resource_providers/{uuid}/aggregates'): {
        'resource_provider_generation': 1, 'aggregates': [AGG]},
    ('PUT', '/resource_providers/{uuid}/traits'): {
        'resource_provider_generation': 1, 'traits': ['HW_CPU_X86_AVX2']},
    ('POST', '/resource_classes'): {'name': 'CUSTOM_FOO'},
    ('PUT', '/allocations/{consumer_uuid}'): ALLOCATION,
    ('POST', '/allocations'): {CONSUMER: ALLOCATION},
    ('POST', '/reshaper'): {'inventories': {RP: {'resource_provider_generation': 1,
                                                 'inventories': {'VCPU': INVENTORY}}},
                            'allocations': {CONSUMER: ALLOCATION}},
}

QUERY_KEYS = ['name', 'uuid', 'member_of', 'in_tree', 'resources', 'required', 'limit',
              'group_policy', 'root_required', 'same_subtree', 'project_id', 'user_id',
              'consumer_type', 'associated', 'only', 'resources1', 'required1',
              'member_of1', 'resources_COMPUTE', 'required_X', 'in_tree2', 'x']

GOOD_VERSIONS = [None, '1.0', '1.14', '1.20', '1.23', '1.28', '1.29', '1.36', '1.38', '1.39',
                 'latest']
VERSIONS = ['1.0', '1.14', '1.17', '1.20', '1.23', '1.28', '1.29', '1.36', '1.38', '1.39',
            'latest', '1.40', '1.01', '2.0', '1', '1.', 'x.y', '1.99999999999999999999',
            '-1.5', '']


def _rarely(draw):
    return draw(st.integers(0, 9)) == 0


def _mutate(data, draw):
    """``data`` with one part replaced, removed, or an unknown key added."""
    if isinstance(data, dict) and data:
        key = draw(st.sampled_from(sorted(data)))
        action = draw(st.sampled_from(['replace', 'recurse', 'drop', 'extra']))
        out = dict(data)
        if action == 'drop':
            del out[key]
        elif action == 'extra':
            out[draw(st.one_of(nasty_strings, any_text))] = draw(json_value)
        elif action == 'recurse':
            out[key] = _mutate(out[key], draw)
        else:
            out[key] = draw(json_value)
        return out
    if isinstance(data, list) and data:
        return [draw(json_value)] + data[1:]
    return draw(json_value)


@st.composite
def requests_(draw):
    template, methods = draw(st.sampled_from(handlers.ROUTES))
    # Mostly a method the route has, sometimes one it does not.
    method = draw(st.sampled_from(sorted(methods)))
    if _rarely(draw):
        method = draw(st.sampled_from(['PATCH', 'OPTIONS', 'TRACE', 'PUT', 'POST']))
    path = re.sub(r'\{(\w+)\}', lambda m: urllib.parse.quote(draw(st.one_of(
        st.sampled_from([RP, CHILD, CONSUMER, 'VCPU', 'CUSTOM_FOO', 'HW_CPU_X86_AVX2']),
        nasty_strings, ascii_text.filter(bool))), safe=''), template)
    pairs = draw(st.lists(st.tuples(st.sampled_from(QUERY_KEYS),
                                    st.one_of(nasty_strings, any_text)), max_size=4))
    query = urllib.parse.urlencode(pairs)
    if _rarely(draw):
        query = draw(st.sampled_from(['%zz', '&&==', 'resources', 'resources=VCPU:%ff',
                                      'limit=%00', '=']))
    body = None
    if method in ('POST', 'PUT', 'PATCH'):
        valid = BODIES.get((method, template))
        kind = draw(st.sampled_from(['mutated', 'mutated', 'json', 'raw']))
        if kind == 'mutated' and valid is not None:
            body = json.dumps(_mutate(valid, draw)).encode()
        elif kind == 'raw':
            body = draw(st.one_of(st.binary(max_size=60), st.sampled_from([
                b'', b'{', b'{"a":', b'nul', b'[' * 5000 + b']' * 5000,
                b'{"a": 1e999}', b'\xff\xfe{}', b'{"name": "\xff"}', b'NaN',
                json.dumps(valid or {}).encode()[:-1]])))
        else:
            body = json.dumps(draw(json_value)).encode()
    # The envelope (version, media types) is valid most of the time, so
    # that most examples reach the handlers; hostile in one in ten.
    headers = {}
    hostile_envelope = _rarely(draw)
    version = draw(st.sampled_from(VERSIONS if hostile_envelope else GOOD_VERSIONS))
    if version is not None:
        headers['OpenStack-API-Version'] = 'placement %s' % version
        if hostile_envelope:
            headers['OpenStack-API-Version'] = draw(st.sampled_from(
                ['placement %s', 'compute %s', 'placement  %s', '%s'])) % version
    content_type = 'application/json'
    if hostile_envelope:
        content_type = draw(st.sampled_from([
            'text/plain', 'application/json; charset=latin-1',
            'multipart/form-data; boundary=x', '', None]))
    if content_type is not None and body is not None:
        headers['Content-Type'] = content_type
    if hostile_envelope:
        headers['Accept'] = draw(st.sampled_from(['text/html', '*/*', 'x/y;q=z', '']))
    if _rarely(draw):
        headers[draw(st.sampled_from(['X-Openstack-Request-Id', 'X-Roles', 'X-Project-Id',
                                      'X-User-Id']))] = draw(ascii_text)
    return method, path + ('?' + query if query else ''), body, headers


def _seed(api):
    """A provider with a child, inventory, a trait, an aggregate, a consumer."""
    assert api.post('/resource_providers', {'name': 'rp', 'uuid': RP},
                    version='1.20').status_int == 200
    assert api.post('/resource_providers', {'name': 'child', 'uuid': CHILD,
                                            'parent_provider_uuid': RP},
                    version='1.20').status_int == 200
    resp = api.put('/resource_providers/%s/inventories' % RP,
                   {'resource_provider_generation': 0,
                    'inventories': {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}}})
    assert resp.status_int == 200, resp.text
    resp = api.put('/allocations/%s' % CONSUMER, dict(ALLOCATION, consumer_type='INSTANCE'),
                   version='1.38')
    assert resp.status_int == 204, resp.text


def _check(method, path, resp, accept=None):
    where = '%s %s -> %s %s' % (method, path[:200], resp.status, resp.text[:500])
    assert resp.status_int < 500, where
    if resp.status_int < 400:
        return
    if accept == 'text/html':
        # As upstream: a client asking for HTML (only) gets an HTML page.
        assert resp.content_type == 'text/html', where
        assert '<h1>%s</h1>' % resp.status in resp.text, where
        return
    assert resp.content_type == 'application/json', where
    error = json.loads(resp.text)['errors'][0]
    for key in ('status', 'title', 'detail'):
        assert key in error, where
    assert error['status'] == resp.status_int, where
    answered = resp.headers.get('OpenStack-API-Version', '').split()
    version = tuple(int(x) for x in answered[-1].split('.')) if answered else None
    # A refused version header has no version to answer with: like
    # upstream, such an error carries no code.
    if version is not None and version >= (1, 23):
        assert error.get('code'), where


def test_hostile_requests_never_500(api, request):
    _seed(api)
    backend = request.node.callspec.params['database']

    @settings(max_examples=EXAMPLES[backend], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(requests_())
    def hostile(req):
        method, path, body, headers = req
        resp = api.request(method, path, raw=body, headers=headers)
        _check(method, path, resp, headers.get('Accept'))

    hostile()


# The same property, for a fixed list of known-nasty inputs on every route:
# these run every time, whatever the random examples happen to draw.
NASTY_BODIES = [b'', b'{', b'nul', b'[' * 5000 + b']' * 5000, b'[' * 900 + b']' * 900,
                b'{"a": 1e999}', b'{"name": "\\u0000"}', b'{"\\u0000": 1}',
                b'\xff\xfe{}', b'{"name": "\xff"}', b'[]', b'null', b'"x"', b'{}',
                b'{"name": "%s"}' % (b'x' * 100000)]
NASTY_QUERIES = ['%zz', 'resources=VCPU:%ff', 'limit=-1', 'limit=99999999999999999999',
                 'resources=VCPU:99999999999999999999', 'member_of=in:', 'required=!',
                 'in_tree=x', 'name=%00', 'uuid=x&uuid=y', 'resources=,,,', '=&=']
NASTY_SEGMENTS = ['%00', '%ff', 'x' * 1000, '..', 'CUSTOM_%00', ' ']


def test_nasty_bodies_and_queries_on_every_route(api):
    _seed(api)
    for template, methods in handlers.ROUTES:
        path = template.format(uuid=RP, resource_class='VCPU', name='CUSTOM_FOO',
                               consumer_uuid=CONSUMER)
        for method in methods:
            for version in ('1.0', '1.39'):
                if method in ('POST', 'PUT'):
                    for body in NASTY_BODIES:
                        _check(method, path, api.request(method, path, raw=body,
                                                         version=version))
                elif method == 'GET':
                    for query in NASTY_QUERIES:
                        url = path + '?' + query
                        _check(method, url, api.request(method, url, version=version))
                for segment in NASTY_SEGMENTS if '{' in template else []:
                    url = re.sub(r'\{\w+\}', segment, template)
                    _check(method, url, api.request(method, url, raw=b'{}',
                                                    version=version))
