"""GET /allocation_candidates, as the API reference describes it.

Trees are written with tests/property/world.py (rows straight into the
tables) so each test shows the whole situation it asks about.
"""
import json

import pytest

from tests.functional import client as client_mod
from tests.functional.client import error
from tests.property.world import World

AGG = '14a5c8a3-5a99-4e8f-88be-00d85fcb1c17'
OTHER_AGG = '2f6a1c1e-0000-4000-8000-000000000002'
GATE = 'resources=VCPU:1,DISK_GB:10,MEMORY_MB:256'


@pytest.fixture
def world(database):
    return World(database)


def compute(world, name, vcpu=8, memory=2048, disk=None, parent=None):
    cn = world.provider(name, parent=parent)
    if vcpu:
        world.inventory(cn, 'VCPU', vcpu)
    if memory:
        world.inventory(cn, 'MEMORY_MB', memory, step_size=256, max_unit=memory)
    if disk:
        world.inventory(cn, 'DISK_GB', disk)
    return cn


def shared_storage(world, name, disk=1000, agg=AGG):
    ss = world.provider(name)
    world.inventory(ss, 'DISK_GB', disk)
    world.traits(ss, 'MISC_SHARES_VIA_AGGREGATE')
    world.aggregate(ss, agg)
    return ss


def get(api, query, version):
    return api.get('/allocation_candidates?' + query, version=version)


def allocations(resp):
    """Each candidate as {provider uuid: resources} (1.12+ format)."""
    return [{u: a['resources'] for u, a in c['allocations'].items()}
            for c in resp.json['allocation_requests']]


def canon(cands):
    """Candidates compared regardless of order."""
    return sorted(json.dumps(c, sort_keys=True) for c in cands)


def test_route_appears_at_1_10(api):
    assert get(api, 'resources=VCPU:1', '1.9').status_int == 404
    resp = get(api, 'resources=VCPU:1', '1.10')
    assert resp.status_int == 200
    assert resp.json == {'allocation_requests': [], 'provider_summaries': {}}


def test_single_provider_list_format_before_1_12(api, world):
    cn = compute(world, 'cn1', disk=100)
    resp = get(api, GATE, '1.10')
    assert resp.json['allocation_requests'] == [{'allocations': [
        {'resource_provider': {'uuid': cn.uuid},
         'resources': {'VCPU': 1, 'DISK_GB': 10, 'MEMORY_MB': 256}}]}]
    assert resp.json['provider_summaries'] == {cn.uuid: {'resources': {
        'VCPU': {'capacity': 8, 'used': 0}, 'MEMORY_MB': {'capacity': 2048, 'used': 0},
        'DISK_GB': {'capacity': 100, 'used': 0}}}}


def test_disk_from_shared_storage_dict_format_from_1_12(api, world):
    cn = compute(world, 'cn1')
    world.aggregate(cn, AGG)
    ss = shared_storage(world, 'nfs')
    lonely = compute(world, 'cn2')     # no disk, not in the aggregate
    resp = get(api, GATE, '1.12')
    assert resp.status_int == 200
    assert allocations(resp) == [{cn.uuid: {'VCPU': 1, 'MEMORY_MB': 256},
                                  ss.uuid: {'DISK_GB': 10}}]
    assert set(resp.json['provider_summaries']) == {cn.uuid, ss.uuid}
    assert lonely.uuid not in resp.json['provider_summaries']


def test_capacity_reserved_ratio_and_usage(api, world):
    cn = world.provider('cn1')
    world.inventory(cn, 'VCPU', 4, reserved=1, allocation_ratio=2.0)   # capacity 6
    world.allocate(cn, 'VCPU', 4)
    assert len(allocations(get(api, 'resources=VCPU:2', '1.12'))) == 1
    assert allocations(get(api, 'resources=VCPU:3', '1.12')) == []
    summary = get(api, 'resources=VCPU:2', '1.12').json['provider_summaries'][cn.uuid]
    assert summary == {'resources': {'VCPU': {'capacity': 6, 'used': 4}}}


def test_min_unit_max_unit_step_size(api, world):
    cn = world.provider('cn1')
    world.inventory(cn, 'MEMORY_MB', 4096, min_unit=512, max_unit=2048, step_size=512)
    assert allocations(get(api, 'resources=MEMORY_MB:256', '1.12')) == []      # < min_unit
    assert allocations(get(api, 'resources=MEMORY_MB:4096', '1.12')) == []     # > max_unit
    assert allocations(get(api, 'resources=MEMORY_MB:768', '1.12')) == []      # not a step
    assert allocations(get(api, 'resources=MEMORY_MB:1024', '1.12')) == [
        {cn.uuid: {'MEMORY_MB': 1024}}]


def test_required_traits_and_summary_traits_from_1_17(api, world):
    avx = compute(world, 'avx', disk=100)
    world.traits(avx, 'HW_CPU_X86_AVX2')
    compute(world, 'plain', disk=100)
    resp = get(api, GATE + '&required=HW_CPU_X86_AVX2', '1.17')
    assert list(resp.json['provider_summaries']) == [avx.uuid]
    assert resp.json['provider_summaries'][avx.uuid]['traits'] == ['HW_CPU_X86_AVX2']
    assert 'traits' not in get(api, GATE, '1.16').json['provider_summaries'][avx.uuid]
    assert '\n\n Invalid query string parameters' in error(
        get(api, GATE + '&required=HW_CPU_X86_AVX2', '1.16'))['detail']


def test_forbidden_traits_from_1_22(api, world):
    avx = compute(world, 'avx')
    world.traits(avx, 'HW_CPU_X86_AVX2')
    plain = compute(world, 'plain')
    resp = get(api, 'resources=VCPU:1&required=!HW_CPU_X86_AVX2', '1.22')
    assert list(resp.json['provider_summaries']) == [plain.uuid]
    assert error(get(api, 'resources=VCPU:1&required=!HW_CPU_X86_AVX2', '1.21'))
    detail = error(get(api, 'resources=VCPU:1&required=HW_CPU_X86_AVX2,!HW_CPU_X86_AVX2',
                       '1.22'))['detail']
    assert 'Conflicting required and forbidden traits' in detail


def test_any_of_traits_from_1_39(api, world):
    sse = compute(world, 'sse')
    world.traits(sse, 'HW_CPU_X86_SSE')
    avx = compute(world, 'avx')
    world.traits(avx, 'HW_CPU_X86_AVX2')
    compute(world, 'plain')
    query = 'resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE'
    resp = get(api, query, '1.39')
    assert set(resp.json['provider_summaries']) == {sse.uuid, avx.uuid}
    assert '1.39' in error(get(api, query, '1.38'))['detail']
    # 1.39: repeated required params are ANDed
    resp = get(api, query + '&required=HW_CPU_X86_SSE', '1.39')
    assert set(resp.json['provider_summaries']) == {sse.uuid}


def test_member_of_in_and_forbidden(api, world):
    cn1 = compute(world, 'cn1')
    world.aggregate(cn1, AGG)
    cn2 = compute(world, 'cn2')
    world.aggregate(cn2, OTHER_AGG)
    cn3 = compute(world, 'cn3')
    assert set(get(api, 'resources=VCPU:1&member_of=' + AGG, '1.21')
               .json['provider_summaries']) == {cn1.uuid}
    resp = get(api, 'resources=VCPU:1&member_of=in:%s,%s' % (AGG, OTHER_AGG), '1.21')
    assert set(resp.json['provider_summaries']) == {cn1.uuid, cn2.uuid}
    resp = get(api, 'resources=VCPU:1&member_of=!in:%s,%s' % (AGG, OTHER_AGG), '1.32')
    assert set(resp.json['provider_summaries']) == {cn3.uuid}
    assert error(get(api, 'resources=VCPU:1&member_of=!' + AGG, '1.31'))
    # repeated member_of are ANDed from 1.24, an error before
    both = 'resources=VCPU:1&member_of=%s&member_of=%s' % (AGG, OTHER_AGG)
    assert get(api, both, '1.24').json['allocation_requests'] == []
    assert 'Multiple member_of' in error(get(api, both, '1.23'))['detail']
    assert 'valid UUID' in error(get(api, 'resources=VCPU:1&member_of=nope', '1.21'))['detail']
    # an unknown aggregate matches nothing
    assert get(api, 'resources=VCPU:1&member_of=' + OTHER_AGG.replace('2f', '3f'),
               '1.21').json['allocation_requests'] == []


def numa_host(world, name='cn1'):
    """A compute node with two NUMA children holding VCPU and MEMORY_MB, disk on the root."""
    cn = world.provider(name)
    world.inventory(cn, 'DISK_GB', 100)
    numa = [compute(world, '%s-numa%d' % (name, i), vcpu=4, memory=1024, parent=cn)
            for i in (0, 1)]
    return cn, numa


def test_nested_candidates_from_1_29(api, world):
    cn, (n0, n1) = numa_host(world)
    resp = get(api, GATE, '1.29')
    assert canon(allocations(resp)) == canon([
        {cn.uuid: {'DISK_GB': 10}, n0.uuid: {'VCPU': 1, 'MEMORY_MB': 256}},
        {cn.uuid: {'DISK_GB': 10}, n1.uuid: {'VCPU': 1, 'MEMORY_MB': 256}},
        {cn.uuid: {'DISK_GB': 10}, n0.uuid: {'VCPU': 1}, n1.uuid: {'MEMORY_MB': 256}},
        {cn.uuid: {'DISK_GB': 10}, n1.uuid: {'VCPU': 1}, n0.uuid: {'MEMORY_MB': 256}},
    ])
    summaries = resp.json['provider_summaries']
    assert summaries[n0.uuid]['parent_provider_uuid'] == cn.uuid
    assert summaries[n0.uuid]['root_provider_uuid'] == cn.uuid
    assert summaries[cn.uuid]['parent_provider_uuid'] is None
    # before 1.29 a candidate never uses two providers of one tree
    assert get(api, GATE, '1.28').json['allocation_requests'] == []


def test_summaries_list_every_class_from_1_27(api, world):
    cn = compute(world, 'cn1', disk=100)
    assert set(get(api, 'resources=VCPU:1', '1.26').json['provider_summaries'][cn.uuid]
               ['resources']) == {'VCPU'}
    assert set(get(api, 'resources=VCPU:1', '1.27').json['provider_summaries'][cn.uuid]
               ['resources']) == {'VCPU', 'MEMORY_MB', 'DISK_GB'}


def sriov_host(world):
    cn = compute(world, 'cn1')
    pfs = []
    for i, net in enumerate(('CUSTOM_PHYSNET_A', 'CUSTOM_PHYSNET_B')):
        pf = world.provider('pf%d' % i, parent=cn)
        world.inventory(pf, 'SRIOV_NET_VF', 4)
        world.traits(pf, net)
        pfs.append(pf)
    return cn, pfs


def test_granular_groups_and_group_policy(api, world):
    cn, (pf0, pf1) = sriov_host(world)
    query = 'resources=VCPU:1&resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1'
    detail = error(get(api, query, '1.25'))['detail']
    assert 'group_policy' in detail
    isolated = allocations(get(api, query + '&group_policy=isolate', '1.29'))
    assert canon(isolated) == canon([
        {cn.uuid: {'VCPU': 1}, pf0.uuid: {'SRIOV_NET_VF': 1}, pf1.uuid: {'SRIOV_NET_VF': 1}},
    ] * 2)
    together = allocations(get(api, query + '&group_policy=none', '1.29'))
    assert {cn.uuid: {'VCPU': 1}, pf0.uuid: {'SRIOV_NET_VF': 2}} in together
    assert len(together) == 4
    # each group keeps its own traits
    resp = get(api, 'resources=VCPU:1&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_B',
               '1.29')
    assert allocations(resp) == [{cn.uuid: {'VCPU': 1}, pf1.uuid: {'SRIOV_NET_VF': 1}}]


def test_groups_on_one_provider_add_up(api, world):
    cn = world.provider('cn1')
    world.inventory(cn, 'VCPU', 4, max_unit=3)
    world.allocate(cn, 'VCPU', 1)
    # each group fits alone; together they take 2 + 1 = 3 of the 3 left
    assert allocations(get(api, 'resources=VCPU:2&resources1=VCPU:1&group_policy=none',
                           '1.25')) == [{cn.uuid: {'VCPU': 3}}]
    # 2 + 2 > 3 left
    assert allocations(get(api, 'resources=VCPU:2&resources1=VCPU:2&group_policy=none',
                           '1.25')) == []
    world.inventory(world.provider('cn2'), 'VCPU', 8, max_unit=3)
    # on cn2, 2 + 2 fits the capacity but not max_unit 3
    assert allocations(get(api, 'resources=VCPU:2&resources1=VCPU:2&group_policy=none',
                           '1.25')) == []


def test_string_suffixes_from_1_33_and_mappings_from_1_34(api, world):
    cn, (pf0, pf1) = sriov_host(world)
    query = ('resources_COMPUTE=VCPU:1&resources_NET=SRIOV_NET_VF:1'
             '&required_NET=CUSTOM_PHYSNET_A&group_policy=none')
    assert error(get(api, query, '1.32'))
    resp = get(api, query, '1.34')
    assert resp.json['allocation_requests'] == [{
        'allocations': {cn.uuid: {'resources': {'VCPU': 1}},
                        pf0.uuid: {'resources': {'SRIOV_NET_VF': 1}}},
        'mappings': {'_COMPUTE': [cn.uuid], '_NET': [pf0.uuid]}}]
    assert 'mappings' not in get(api, query, '1.33').json['allocation_requests'][0]


def test_in_tree_from_1_31(api, world):
    cn1 = compute(world, 'cn1')
    compute(world, 'cn2')
    resp = get(api, 'resources=VCPU:1&in_tree=' + cn1.uuid, '1.31')
    assert list(resp.json['provider_summaries']) == [cn1.uuid]
    assert error(get(api, 'resources=VCPU:1&in_tree=' + cn1.uuid, '1.30'))
    assert 'in_tree' in error(get(api, 'resources=VCPU:1&in_tree=x', '1.31'))['detail']
    assert get(api, 'resources=VCPU:1&in_tree=' + AGG, '1.31').json['allocation_requests'] == []


def test_root_required_from_1_35(api, world):
    cn, (pf0, _) = sriov_host(world)
    world.traits(cn, 'COMPUTE_STATUS_DISABLED')
    query = 'resources=VCPU:1&root_required=!COMPUTE_STATUS_DISABLED'
    assert get(api, query, '1.35').json['allocation_requests'] == []
    # traits of a child do not count for the root
    assert get(api, 'resources=VCPU:1&root_required=CUSTOM_PHYSNET_A',
               '1.35').json['allocation_requests'] == []
    assert len(get(api, 'resources=VCPU:1&root_required=COMPUTE_STATUS_DISABLED',
                   '1.35').json['allocation_requests']) == 1
    err = error(get(api, query + '&root_required=CUSTOM_X', '1.35'))
    assert err['code'] == 'placement.query.duplicate_key'
    err = error(get(api, 'resources=VCPU:1&root_required=CUSTOM_X,!CUSTOM_X', '1.35'))
    assert err['code'] == 'placement.query.bad_value'
    assert error(get(api, query, '1.34'))


def test_same_subtree_and_resourceless_groups_from_1_36(api, world):
    cn = world.provider('cn1')
    numa = []
    for i in (0, 1):
        node = compute(world, 'numa%d' % i, vcpu=4, memory=None, parent=cn)
        world.traits(node, 'HW_NUMA_ROOT')
        pf = world.provider('pf%d' % i, parent=node)
        world.inventory(pf, 'SRIOV_NET_VF', 2)
        numa.append((node, pf))
    query = ('resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1'
             '&required_NUMA=HW_NUMA_ROOT&same_subtree=_CPU,_NET,_NUMA&group_policy=none')
    resp = get(api, query, '1.36')
    got = [(c['mappings']['_CPU'], c['mappings']['_NET'], c['mappings']['_NUMA'])
           for c in resp.json['allocation_requests']]
    assert sorted(got) == sorted([([n.uuid], [p.uuid], [n.uuid]) for n, p in numa])
    err = error(get(api, 'resources=VCPU:1&required_NUMA=HW_NUMA_ROOT', '1.36'))
    assert err['code'] == 'placement.query.bad_value'
    err = error(get(api, 'resources=VCPU:1&same_subtree=_X', '1.36'))
    assert err['code'] == 'placement.query.bad_value'
    err = error(get(api, 'required_NUMA=HW_NUMA_ROOT&same_subtree=_NUMA', '1.36'))
    assert err['code'] == 'placement.query.missing_value'
    assert 'orphaned traits' in error(get(api, 'resources=VCPU:1&required1=HW_NUMA_ROOT',
                                          '1.35'))['detail']


def test_limit_from_1_16(api, world):
    uuids = {compute(world, 'cn%d' % i).uuid for i in range(5)}
    resp = get(api, 'resources=VCPU:1&limit=2', '1.16')
    assert len(resp.json['allocation_requests']) == 2
    # summaries only for providers of the returned candidates
    assert set(resp.json['provider_summaries']) == {
        list(c['allocations'])[0] for c in resp.json['allocation_requests']}
    assert set(resp.json['provider_summaries']) <= uuids
    assert error(get(api, 'resources=VCPU:1&limit=0', '1.16'))
    assert error(get(api, 'resources=VCPU:1&limit=2', '1.15'))


def test_limit_with_randomize_returns_a_sample(database, world):
    for i in range(6):
        compute(world, 'cn%d' % i)
    conf = client_mod.make_conf()
    conf.set_override('randomize_allocation_candidates', True, group='placement')
    api = client_mod.Client(client_mod.make_app(database, conf))
    seen = set()
    for _ in range(20):
        resp = get(api, 'resources=VCPU:1&limit=1', '1.16')
        assert len(resp.json['allocation_requests']) == 1
        seen |= set(resp.json['provider_summaries'])
    assert len(seen) > 1


@pytest.mark.parametrize('query, words', [
    ('resources=VCPU', 'Badly formed resources'),
    ('resources=VCPU:0', 'amount >= 1'),
    ('resources=VCPU:x', 'expected positive integer'),
    ('resources=', 'Badly formed resources'),
    ('resources=CUSTOM_NOPE:1', 'No such resource class CUSTOM_NOPE'),
    ('resources=VCPU:1&required=CUSTOM_NOPE', 'No such trait(s): CUSTOM_NOPE'),
    ('resources=VCPU:1&required=A,,B', 'empty trait'),
    ('resources=VCPU:1&bogus=1', 'Invalid query string parameters'),
    ('resources1=VCPU:1&resources2=VCPU:1', 'group_policy'),
    ('resources=VCPU:1&group_policy=sometimes', 'Invalid query string parameters'),
    ('in_tree1=%s' % AGG, 'must specify resources'),
])
def test_bad_queries_are_400(api, query, words):
    resp = get(api, query, '1.35')
    err = error(resp)
    assert words in err['detail']
    assert err['code'].startswith('placement.')


def test_amounts_beyond_any_inventory(api, world):
    compute(world, 'cn1')
    resp = get(api, 'resources=VCPU:99999999999999999999', '1.10')
    assert resp.status_int == 200
    assert resp.json['allocation_requests'] == []


def test_resources_required_before_1_25(api):
    assert error(get(api, 'resources1=VCPU:1', '1.24'))
    assert error(get(api, 'limit=1', '1.24'))


def test_last_modified_from_1_15(api, world):
    compute(world, 'cn1')
    assert 'Last-Modified' not in get(api, 'resources=VCPU:1', '1.14').headers
    resp = get(api, 'resources=VCPU:1', '1.15')
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in resp.headers


def test_needs_admin(api, world):
    resp = api.get('/allocation_candidates?resources=VCPU:1', version='1.10', token='alice')
    assert error(resp, 403)
