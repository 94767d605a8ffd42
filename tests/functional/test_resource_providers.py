"""/resource_providers: create, show, update, delete, as the API reference
describes them per microversion."""
import uuid as uuidlib

from tests.functional.client import error

RP1 = '7f6a3c2e-0c1d-4e8b-9a41-2f7d3b6c5a01'
RP2 = '7f6a3c2e-0c1d-4e8b-9a41-2f7d3b6c5a02'
RP3 = '7f6a3c2e-0c1d-4e8b-9a41-2f7d3b6c5a03'


def _at_least(version, wanted):
    return tuple(map(int, version.split('.'))) >= tuple(map(int, wanted.split('.')))


def _create(api, name, uuid=None, parent=None, version='1.20'):
    body = {'name': name}
    if uuid:
        body['uuid'] = uuid
    if parent:
        body['parent_provider_uuid'] = parent
    resp = api.post('/resource_providers', body, version=version)
    assert resp.status_int == (200 if _at_least(version, '1.20') else 201), resp.body
    return resp


def test_create_1_0_has_no_body(api):
    resp = api.post('/resource_providers', {'name': 'cn1', 'uuid': RP1}, version='1.0')
    assert resp.status_int == 201
    assert resp.location.endswith('/resource_providers/%s' % RP1)
    assert resp.body == b''


def test_create_1_20_returns_the_provider_with_200(api):
    resp = api.post('/resource_providers', {'name': 'cn1', 'uuid': RP1}, version='1.20')
    assert resp.status_int == 200
    assert resp.location.endswith('/resource_providers/%s' % RP1)
    base = '/resource_providers/%s' % RP1
    assert resp.json == {
        'uuid': RP1, 'name': 'cn1', 'generation': 0,
        'parent_provider_uuid': None, 'root_provider_uuid': RP1,
        'links': [{'rel': 'self', 'href': base},
                  {'rel': 'inventories', 'href': base + '/inventories'},
                  {'rel': 'usages', 'href': base + '/usages'},
                  {'rel': 'aggregates', 'href': base + '/aggregates'},
                  {'rel': 'traits', 'href': base + '/traits'},
                  {'rel': 'allocations', 'href': base + '/allocations'}]}
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in resp.headers


def test_create_without_uuid_generates_one(api):
    resp = api.post('/resource_providers', {'name': 'cn1'}, version='1.20')
    assert resp.status_int == 200
    assert str(uuidlib.UUID(resp.json['uuid'])) == resp.json['uuid']
    assert resp.location.endswith(resp.json['uuid'])


def test_create_accepts_uuid_without_dashes(api):
    resp = _create(api, 'cn1', uuid=RP1.replace('-', '').upper())
    assert resp.json['uuid'] == RP1


def test_duplicate_uuid_and_name_are_duplicate_name(api):
    _create(api, 'cn1', uuid=RP1)
    err = error(api.post('/resource_providers', {'name': 'other', 'uuid': RP1},
                          version='1.23'), 409, 'placement.duplicate_name')
    assert '\n\n Conflicting resource provider uuid:' in err['detail']
    err = error(api.post('/resource_providers', {'name': 'cn1', 'uuid': RP2},
                          version='1.23'), 409, 'placement.duplicate_name')
    assert '\n\n Conflicting resource provider name:' in err['detail']


def test_create_bad_bodies(api):
    error(api.post('/resource_providers', {'uuid': RP1}, version='1.20'), 400)
    error(api.post('/resource_providers', {'name': 'x', 'uuid': 'nope'},
                    version='1.20'), 400)
    error(api.post('/resource_providers', {'name': 'x', 'extra': 1},
                    version='1.20'), 400)
    error(api.post('/resource_providers', {'name': 'x' * 201}, version='1.20'), 400)
    error(api.post('/resource_providers', raw='{"name": ', version='1.20'), 400)
    resp = api.request('POST', '/resource_providers', version='1.20',
                       headers={'Content-Type': 'text/plain'})
    assert resp.status_int == 415


def test_parent_before_1_14_is_an_extra_field(api):
    _create(api, 'cn1', uuid=RP1)
    error(api.post('/resource_providers', {'name': 'c', 'parent_provider_uuid': RP1},
                    version='1.13'), 400)


def test_create_child(api):
    _create(api, 'cn1', uuid=RP1)
    child = _create(api, 'numa0', uuid=RP2, parent=RP1).json
    assert child['parent_provider_uuid'] == RP1
    assert child['root_provider_uuid'] == RP1
    grandchild = _create(api, 'pf0', uuid=RP3, parent=RP2).json
    assert grandchild['root_provider_uuid'] == RP1


def test_create_with_unknown_parent_is_400(api):
    error(api.post('/resource_providers', {'name': 'c', 'parent_provider_uuid': RP2},
                    version='1.14'), 400)


def test_show(api):
    _create(api, 'cn1', uuid=RP1)
    resp = api.get('/resource_providers/%s' % RP1, version='1.0')
    assert resp.status_int == 200
    assert resp.json['name'] == 'cn1'
    assert 'parent_provider_uuid' not in resp.json
    assert [link['rel'] for link in resp.json['links']] == ['self', 'inventories', 'usages']
    assert 'Last-Modified' not in resp.headers
    resp = api.get('/resource_providers/%s' % RP1, version='1.6')
    assert [link['rel'] for link in resp.json['links']] == [
        'self', 'inventories', 'usages', 'aggregates', 'traits']


def test_show_unknown_is_404(api):
    err = error(api.get('/resource_providers/%s' % RP1, version='1.23'), 404)
    assert err['detail'] == ('The resource could not be found.\n\n '
                             'No resource provider with uuid %s found  ' % RP1)
    error(api.get('/resource_providers/not-a-uuid', version='1.23'), 404)


def test_rename(api):
    _create(api, 'cn1', uuid=RP1)
    resp = api.put('/resource_providers/%s' % RP1, {'name': 'cn1-renamed'}, version='1.0')
    assert resp.status_int == 200
    assert resp.json['name'] == 'cn1-renamed'
    assert resp.json['generation'] == 0
    assert api.get('/resource_providers/%s' % RP1).json['name'] == 'cn1-renamed'


def test_rename_to_taken_name_is_409(api):
    _create(api, 'cn1', uuid=RP1)
    _create(api, 'cn2', uuid=RP2)
    err = error(api.put('/resource_providers/%s' % RP2, {'name': 'cn1'}, version='1.23'),
                 409, 'placement.duplicate_name')
    assert '\n\n Conflicting resource provider name:' in err['detail']


def test_update_bad_bodies_and_unknown(api):
    _create(api, 'cn1', uuid=RP1)
    error(api.put('/resource_providers/%s' % RP1, {}, version='1.14'), 400)
    error(api.put('/resource_providers/%s' % RP1, {'name': 'x', 'generation': 1},
                   version='1.14'), 400)
    error(api.put('/resource_providers/%s' % RP1, raw='nope', version='1.14'), 400)
    error(api.put('/resource_providers/%s' % RP2, {'name': 'x'}, version='1.14'), 404)


def test_set_parent_once_before_1_37(api):
    _create(api, 'cn1', uuid=RP1)
    _create(api, 'cn2', uuid=RP2)
    _create(api, 'numa', uuid=RP3)
    resp = api.put('/resource_providers/%s' % RP3,
                   {'name': 'numa', 'parent_provider_uuid': RP1}, version='1.14')
    assert resp.status_int == 200
    assert resp.json['parent_provider_uuid'] == RP1
    assert resp.json['root_provider_uuid'] == RP1
    # Changing or removing the parent is refused before 1.37.
    error(api.put('/resource_providers/%s' % RP3,
                   {'name': 'numa', 'parent_provider_uuid': RP2}, version='1.36'), 400)
    error(api.put('/resource_providers/%s' % RP3,
                   {'name': 'numa', 'parent_provider_uuid': None}, version='1.36'), 400)
    # Repeating the same parent is fine.
    resp = api.put('/resource_providers/%s' % RP3,
                   {'name': 'numa', 'parent_provider_uuid': RP1}, version='1.36')
    assert resp.status_int == 200


def test_reparent_from_1_37_moves_the_subtree(api):
    _create(api, 'cn1', uuid=RP1)
    _create(api, 'numa', uuid=RP2, parent=RP1)
    _create(api, 'pf', uuid=RP3, parent=RP2)
    other = _create(api, 'cn2').json['uuid']
    resp = api.put('/resource_providers/%s' % RP2,
                   {'name': 'numa', 'parent_provider_uuid': other}, version='1.37')
    assert resp.status_int == 200
    assert resp.json['root_provider_uuid'] == other
    pf = api.get('/resource_providers/%s' % RP3, version='1.37').json
    assert pf['parent_provider_uuid'] == RP2
    assert pf['root_provider_uuid'] == other
    # Unparenting makes the subtree its own tree.
    resp = api.put('/resource_providers/%s' % RP2,
                   {'name': 'numa', 'parent_provider_uuid': None}, version='1.37')
    assert resp.status_int == 200
    assert resp.json['parent_provider_uuid'] is None
    assert resp.json['root_provider_uuid'] == RP2
    pf = api.get('/resource_providers/%s' % RP3, version='1.37').json
    assert pf['root_provider_uuid'] == RP2


def test_reparent_loops_are_400(api):
    _create(api, 'cn1', uuid=RP1)
    _create(api, 'numa', uuid=RP2, parent=RP1)
    _create(api, 'pf', uuid=RP3, parent=RP2)
    error(api.put('/resource_providers/%s' % RP1,
                   {'name': 'cn1', 'parent_provider_uuid': RP3}, version='1.37'), 400)
    error(api.put('/resource_providers/%s' % RP1,
                   {'name': 'cn1', 'parent_provider_uuid': RP1}, version='1.37'), 400)
    error(api.put('/resource_providers/%s' % RP1,
                   {'name': 'cn1', 'parent_provider_uuid': RP3}, version='1.14'), 400)


def test_reparent_to_unknown_is_400(api):
    _create(api, 'cn1', uuid=RP1)
    error(api.put('/resource_providers/%s' % RP1,
                   {'name': 'cn1', 'parent_provider_uuid': RP2}, version='1.37'), 400)


def test_delete(api):
    _create(api, 'cn1', uuid=RP1)
    resp = api.delete('/resource_providers/%s' % RP1)
    assert resp.status_int == 204
    assert resp.body == b''
    error(api.get('/resource_providers/%s' % RP1), 404)
    error(api.delete('/resource_providers/%s' % RP1), 404)


def test_delete_parent_is_409(api):
    _create(api, 'cn1', uuid=RP1)
    _create(api, 'numa', uuid=RP2, parent=RP1)
    error(api.delete('/resource_providers/%s' % RP1, version='1.23'), 409,
           'placement.resource_provider.cannot_delete_parent')
    assert api.delete('/resource_providers/%s' % RP2).status_int == 204
    assert api.delete('/resource_providers/%s' % RP1).status_int == 204


def test_non_admin_is_403(api):
    resp = api.get('/resource_providers', token='alice', version='1.23')
    error(resp, 403)
    resp = api.post('/resource_providers', {'name': 'x'}, token='alice', version='1.23')
    error(resp, 403)


def test_delete_removes_what_the_provider_owned(api):
    agg = 'a0a0a0a0-0000-4000-8000-000000000001'
    _create(api, 'cn1', uuid=RP1)
    path = '/resource_providers/%s' % RP1
    assert api.put(path + '/inventories', {'inventories': {'VCPU': {'total': 4}},
                                           'resource_provider_generation': 0},
                   version='1.20').status_int == 200
    assert api.put(path + '/traits', {'traits': ['HW_CPU_X86_AVX'],
                                      'resource_provider_generation': 1},
                   version='1.20').status_int == 200
    assert api.put(path + '/aggregates', {'aggregates': [agg],
                                          'resource_provider_generation': 2},
                   version='1.20').status_int == 200
    assert api.delete(path).status_int == 204
    # The same uuid again starts with nothing.
    _create(api, 'cn1', uuid=RP1)
    assert api.get(path + '/inventories', version='1.20').json['inventories'] == {}
    assert api.get(path + '/traits', version='1.20').json['traits'] == []
    assert api.get(path + '/aggregates', version='1.20').json['aggregates'] == []
    resp = api.get('/resource_providers?member_of=%s' % agg, version='1.20')
    assert resp.json == {'resource_providers': []}


def test_lone_surrogate_in_name_is_400(api):
    # "\ud800" is valid JSON text but no database can store the string.
    resp = api.post('/resource_providers', raw='{"name": "cn\\ud800"}', version='1.20')
    error(resp, 400)
    _create(api, 'cn1', uuid=RP1)
    error(api.put('/resource_providers/%s' % RP1, raw='{"name": "\\udfff"}',
                   version='1.20'), 400)
