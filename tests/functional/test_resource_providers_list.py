"""GET /resource_providers and its filters, per microversion."""
import datetime

import pytest
import sqlalchemy as sa

CN1 = 'c0a80101-0000-4000-8000-000000000001'
CN2 = 'c0a80101-0000-4000-8000-000000000002'
NUMA = 'c0a80101-0000-4000-8000-000000000003'
SHARE = 'c0a80101-0000-4000-8000-000000000004'
AGG1 = 'a99a0000-0000-4000-8000-000000000001'
AGG2 = 'a99a0000-0000-4000-8000-000000000002'
AGG3 = 'a99a0000-0000-4000-8000-000000000003'
CONSUMER = 'c0c0c0c0-0000-4000-8000-000000000001'


def _post(api, name, uuid, parent=None):
    body = {'name': name, 'uuid': uuid}
    if parent:
        body['parent_provider_uuid'] = parent
    assert api.post('/resource_providers', body, version='1.20').status_int == 200


def _inventory(api, uuid, **totals):
    gen = api.get('/resource_providers/%s' % uuid).json['generation']
    invs = {}
    for rc, spec in totals.items():
        invs[rc] = spec if isinstance(spec, dict) else {'total': spec}
    resp = api.put('/resource_providers/%s/inventories' % uuid,
                   {'inventories': invs, 'resource_provider_generation': gen},
                   version='1.20')
    assert resp.status_int == 200, resp.body


def _traits(api, uuid, *names):
    gen = api.get('/resource_providers/%s' % uuid).json['generation']
    resp = api.put('/resource_providers/%s/traits' % uuid,
                   {'traits': list(names), 'resource_provider_generation': gen},
                   version='1.20')
    assert resp.status_int == 200, resp.body


def _aggregates(api, uuid, *aggs):
    assert api.put('/resource_providers/%s/aggregates' % uuid, list(aggs),
                   version='1.1').status_int == 200


@pytest.fixture
def world(api):
    """cn1 (VCPU 8, 4 used; AVX; agg1) with child numa (VCPU 4; SSE);
    cn2 (VCPU 2, MEMORY 1024 max_unit 512; AVX+SSE; agg1, agg2);
    share (DISK 100 reserved 10 ratio 2; agg3)."""
    _post(api, 'cn1', CN1)
    _post(api, 'numa', NUMA, parent=CN1)
    _post(api, 'cn2', CN2)
    _post(api, 'share', SHARE)
    _inventory(api, CN1, VCPU=8)
    _inventory(api, NUMA, VCPU=4)
    _inventory(api, CN2, VCPU=2, MEMORY_MB={'total': 1024, 'max_unit': 512})
    _inventory(api, SHARE, DISK_GB={'total': 100, 'reserved': 10,
                                    'allocation_ratio': 2.0, 'step_size': 10})
    _traits(api, CN1, 'HW_CPU_X86_AVX')
    _traits(api, NUMA, 'HW_CPU_X86_SSE')
    _traits(api, CN2, 'HW_CPU_X86_AVX', 'HW_CPU_X86_SSE')
    _aggregates(api, CN1, AGG1)
    _aggregates(api, CN2, AGG1, AGG2)
    _aggregates(api, SHARE, AGG3)
    resp = api.put('/allocations/%s' % CONSUMER, {
        'allocations': [{'resource_provider': {'uuid': CN1}, 'resources': {'VCPU': 4}}],
        'project_id': 'p', 'user_id': 'u'}, version='1.8')
    assert resp.status_int == 204, resp.body
    return api


def _names(api, query, version='1.39'):
    resp = api.get('/resource_providers' + query, version=version)
    assert resp.status_int == 200, resp.body
    return sorted(rp['name'] for rp in resp.json['resource_providers'])


def _bad(api, query, version='1.39'):
    resp = api.get('/resource_providers' + query, version=version)
    assert resp.status_int == 400, resp.body
    return resp.json['errors'][0]['detail']


def test_list_all(world):
    resp = world.get('/resource_providers', version='1.14')
    assert resp.status_int == 200
    rps = {rp['name']: rp for rp in resp.json['resource_providers']}
    assert sorted(rps) == ['cn1', 'cn2', 'numa', 'share']
    assert rps['numa']['parent_provider_uuid'] == CN1
    assert rps['numa']['root_provider_uuid'] == CN1
    # inventory, traits and the allocation each bumped it; aggregates before 1.19 did not
    assert rps['cn1']['generation'] == 3
    assert 'Last-Modified' not in resp.headers


def test_list_empty_has_last_modified(api):
    resp = api.get('/resource_providers', version='1.15')
    assert resp.json == {'resource_providers': []}
    assert 'Last-Modified' in resp.headers
    assert resp.headers['Cache-Control'] == 'no-cache'


def test_list_last_modified_is_the_newest_change(api, database):
    _post(api, 'cn1', CN1)
    _post(api, 'cn2', CN2)
    rp = sa.table('resource_providers', sa.column('uuid'), sa.column('created_at'),
                  sa.column('updated_at'))
    with database.writer() as conn:
        conn.execute(rp.update().where(rp.c.uuid == CN1)
                     .values(updated_at=datetime.datetime(2031, 1, 2, 3, 4, 5)))
        conn.execute(rp.update().where(rp.c.uuid == CN2)
                     .values(created_at=datetime.datetime(2030, 6, 7, 8, 9, 10)))
    resp = api.get('/resource_providers', version='1.15')
    assert resp.headers['Last-Modified'] == 'Thu, 02 Jan 2031 03:04:05 GMT'
    resp = api.get('/resource_providers?name=cn2', version='1.15')
    assert resp.headers['Last-Modified'] == 'Fri, 07 Jun 2030 08:09:10 GMT'


def test_name_and_uuid(world, database):
    assert _names(world, '?name=cn2', '1.0') == ['cn2']
    assert _names(world, '?name=nope', '1.0') == []
    assert _names(world, '?name=', '1.0') == ['cn1', 'cn2', 'numa', 'share']
    assert _names(world, '?uuid=%s' % CN1, '1.0') == ['cn1']
    # (as upstream: found by the spelling stored, dashes needed)
    assert _names(world, '?uuid=%s' % CN1.upper(), '1.0') == (
        ['cn1'] if database.engine.dialect.name == 'mysql' else [])
    _bad(world, '?uuid=%s' % CN1.replace('-', ''), '1.0')
    _bad(world, '?uuid=nope', '1.0')
    _bad(world, '?colour=blue', '1.0')


def test_filters_before_their_version_are_400(world):
    _bad(world, '?member_of=%s' % AGG1, '1.2')
    _bad(world, '?resources=VCPU:1', '1.3')
    _bad(world, '?in_tree=%s' % CN1, '1.13')
    _bad(world, '?required=HW_CPU_X86_AVX', '1.17')


def test_member_of(world):
    assert _names(world, '?member_of=%s' % AGG1, '1.3') == ['cn1', 'cn2']
    assert _names(world, '?member_of=in:%s,%s' % (AGG2, AGG3), '1.3') == ['cn2', 'share']
    assert _names(world, '?member_of=%s' % 'a99a0000-0000-4000-8000-0000000000ff',
                  '1.3') == []
    _bad(world, '?member_of=nope', '1.3')
    _bad(world, '?member_of=%s,%s' % (AGG1, AGG2), '1.3')
    _bad(world, '?member_of=in:%s,nope' % AGG1, '1.3')


def test_member_of_repeated_is_and_from_1_24(world):
    query = '?member_of=%s&member_of=in:%s,%s' % (AGG1, AGG2, AGG3)
    _bad(world, query, '1.23')
    assert _names(world, query, '1.24') == ['cn2']


def test_forbidden_member_of_from_1_32(world):
    _bad(world, '?member_of=!%s' % AGG2, '1.31')
    assert _names(world, '?member_of=!%s' % AGG2, '1.32') == ['cn1', 'numa', 'share']
    assert _names(world, '?member_of=!in:%s,%s' % (AGG2, AGG3), '1.32') == ['cn1', 'numa']
    assert _names(world, '?member_of=%s&member_of=!%s' % (AGG1, AGG2), '1.32') == ['cn1']
    _bad(world, '?member_of=in:!%s' % AGG2, '1.32')


def test_resources(world):
    assert _names(world, '?resources=VCPU:4', '1.4') == ['cn1', 'numa']
    # cn1 has 8 with 4 used: 5 more do not fit.
    assert _names(world, '?resources=VCPU:5', '1.4') == []
    assert _names(world, '?resources=VCPU:1,MEMORY_MB:512', '1.4') == ['cn2']
    # Above max_unit.
    assert _names(world, '?resources=MEMORY_MB:513', '1.4') == []
    # (100 - 10) * 2 = 180, in steps of 10.
    assert _names(world, '?resources=DISK_GB:180', '1.4') == ['share']
    assert _names(world, '?resources=DISK_GB:190', '1.4') == []
    assert _names(world, '?resources=DISK_GB:15', '1.4') == []


def test_resources_bad_values(world):
    assert 'Badly formed' in _bad(world, '?resources=VCPU', '1.4')
    _bad(world, '?resources=VCPU:x', '1.4')
    _bad(world, '?resources=VCPU:0', '1.4')
    _bad(world, '?resources=', '1.4')
    assert 'CUSTOM_NOPE' in _bad(world, '?resources=CUSTOM_NOPE:1', '1.4')


def test_in_tree(world):
    assert _names(world, '?in_tree=%s' % NUMA, '1.14') == ['cn1', 'numa']
    assert _names(world, '?in_tree=%s' % CN2, '1.14') == ['cn2']
    assert _names(world, '?in_tree=%s' % CONSUMER, '1.14') == []
    _bad(world, '?in_tree=nope', '1.14')


def test_required(world):
    assert _names(world, '?required=HW_CPU_X86_AVX', '1.18') == ['cn1', 'cn2']
    assert _names(world, '?required=HW_CPU_X86_AVX,HW_CPU_X86_SSE', '1.18') == ['cn2']
    assert 'CUSTOM_NOPE' in _bad(world, '?required=CUSTOM_NOPE', '1.18')
    _bad(world, '?required=', '1.18')
    _bad(world, '?required=A,,B', '1.18')


def test_forbidden_traits_from_1_22(world):
    _bad(world, '?required=!HW_CPU_X86_SSE', '1.21')
    assert _names(world, '?required=!HW_CPU_X86_SSE', '1.22') == ['cn1', 'share']
    assert _names(world, '?required=HW_CPU_X86_AVX,!HW_CPU_X86_SSE', '1.22') == ['cn1']


def test_required_any_of_and_repeat_from_1_39(world):
    _bad(world, '?required=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE', '1.38')
    assert _names(world, '?required=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE',
                  '1.39') == ['cn1', 'cn2', 'numa']
    assert _names(world, '?required=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE'
                  '&required=!HW_CPU_X86_AVX', '1.39') == ['numa']
    assert _names(world, '?required=HW_CPU_X86_AVX&required=HW_CPU_X86_SSE',
                  '1.39') == ['cn2']
    # Before 1.39 only the last of repeated parameters counts (as upstream).
    assert _names(world, '?required=HW_CPU_X86_AVX&required=HW_CPU_X86_SSE',
                  '1.38') == ['cn2', 'numa']
    _bad(world, '?required=in:HW_CPU_X86_AVX,!HW_CPU_X86_SSE', '1.39')


def test_filters_combine(world):
    query = ('?member_of=%s&resources=VCPU:2&required=HW_CPU_X86_AVX&in_tree=%s'
             % (AGG1, CN2))
    assert _names(world, query, '1.18') == ['cn2']
    query = '?member_of=%s&resources=VCPU:3&required=HW_CPU_X86_AVX' % AGG1
    assert _names(world, query, '1.18') == ['cn1']


def test_deleted_provider_leaves_the_list(world):
    assert world.delete('/resource_providers/%s' % SHARE).status_int == 204
    assert _names(world, '', '1.0') == ['cn1', 'cn2', 'numa']


def test_provider_with_allocations_cannot_be_deleted(world):
    resp = world.delete('/resource_providers/%s' % NUMA, version='1.23')
    assert resp.status_int == 204
    resp = world.delete('/resource_providers/%s' % CN1, version='1.23')
    assert resp.status_int == 409
    assert resp.json['errors'][0]['code'] == 'placement.resource_provider.inuse'


def test_list_is_a_fixed_number_of_queries(world, database):
    """However many providers match, a list costs the same few statements
    (it is answered from the worker's resource view): the change sequence
    read, and one reload of the providers changed since the last request."""
    assert len(_names(world, '')) == 4     # the view is current
    for i in range(10):
        _post(world, 'extra%d' % i, 'c0a80101-0000-4000-8000-0000000001%02d' % i)
    statements = []

    def count(conn, cursor, statement, *args):
        if statement != 'BEGIN':   # SQLite's explicit BEGIN
            statements.append(statement)
    query = ('?member_of=in:%s,%s&resources=VCPU:1&required=HW_CPU_X86_AVX'
             '&required=!HW_CPU_X86_SSE2&in_tree=%s' % (AGG1, AGG2, CN1))
    for engine in database.engines:
        sa.event.listen(engine, 'before_cursor_execute', count)
    try:
        assert _names(world, query) == ['cn1']
        filtered = len(statements)
        statements.clear()
        assert len(_names(world, '')) == 14
        unfiltered = len(statements)
    finally:
        for engine in database.engines:
            sa.event.remove(engine, 'before_cursor_execute', count)
    assert filtered == 2, [s[:60] for s in statements]
    assert unfiltered == 1, [s[:60] for s in statements]


def test_an_unchanged_list_is_rendered_once_per_query_and_version(world, api, monkeypatch):
    from placement_server import lists
    rendered = []
    real = lists.body
    monkeypatch.setattr(lists, 'body', lambda version, base, providers: (
        rendered.append(len(providers)) or real(version, base, providers)))
    first = api.get('/resource_providers', version='1.14').body
    assert api.get('/resource_providers', version='1.14').body == first
    assert rendered == [4]
    api.get('/resource_providers', version='1.0')
    api.get('/resource_providers?member_of=%s' % AGG1, version='1.14')
    assert rendered == [4, 4, 2]
    _traits(api, CN2, 'HW_CPU_X86_AVX2')   # a new generation: rendered again
    assert api.get('/resource_providers', version='1.14').body != first
    assert rendered == [4, 4, 2, 4]


def test_a_kept_list_shows_every_change_after_it(world, api):
    def listed(query=''):
        resp = api.get('/resource_providers' + query, version='1.18')
        assert resp.status_int == 200, resp.body
        return {rp['uuid']: rp for rp in resp.json['resource_providers']}
    before = listed()
    assert api.put('/resource_providers/%s' % CN2, {'name': 'renamed'},
                   version='1.14').status_int == 200
    assert listed()[CN2]['name'] == 'renamed'
    _traits(api, SHARE, 'HW_CPU_X86_AVX2')
    assert listed()[SHARE]['generation'] == before[SHARE]['generation'] + 1
    assert api.put('/resource_providers/%s' % SHARE, {
        'name': 'share', 'parent_provider_uuid': CN2}, version='1.14').status_int == 200
    assert listed()[SHARE]['root_provider_uuid'] == CN2
    new = 'c0a80101-0000-4000-8000-000000000009'
    _post(api, 'cn9', new)
    assert new in listed()
    assert api.delete('/resource_providers/%s' % new).status_int == 204
    assert new not in listed()
    # a filter on a trait that does not exist yet, then does: names changed
    resp = api.get('/resource_providers?required=CUSTOM_GOLD', version='1.18')
    assert resp.status_int == 400 and 'No such trait(s): CUSTOM_GOLD' in resp.text
    assert api.put('/traits/CUSTOM_GOLD', version='1.14').status_int == 201
    assert listed('?required=CUSTOM_GOLD') == {}
    _traits(api, CN2, 'CUSTOM_GOLD')
    assert set(listed('?required=CUSTOM_GOLD')) == {CN2}
    # a kept answer naming a trait that is then deleted: names changed
    assert api.put('/traits/CUSTOM_SILVER', version='1.18').status_int == 201
    assert listed('?required=CUSTOM_SILVER') == {}
    assert api.delete('/traits/CUSTOM_SILVER', version='1.18').status_int == 204
    assert api.get('/resource_providers?required=CUSTOM_SILVER',
                   version='1.18').status_int == 400


def test_a_list_larger_than_what_is_kept_is_rendered_each_time(world, api, monkeypatch):
    from placement_server import lists
    from placement_server import view
    monkeypatch.setattr(view.ResourceView, 'KEPT_BYTES', 100)
    rendered = []
    real = lists.body
    monkeypatch.setattr(lists, 'body', lambda version, base, providers: (
        rendered.append(len(providers)) or real(version, base, providers)))
    for _ in range(2):
        assert api.get('/resource_providers', version='1.14').status_int == 200
    assert rendered == [4, 4]
