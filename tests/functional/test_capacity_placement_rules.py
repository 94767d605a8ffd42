"""Flavor counts and explanations by placement's own rules, on the trees
the agent builds: each case is one that counted or explained otherwise
than GET /allocation_candidates answers (issue 36), on every engine."""
from placement_server.capacity import flavors
from placement_server.capacity import metrics
from tests.functional import client as client_mod
from tests.functional import placing
from tests.functional.client import make_provider

V = '1.39'
EXPLAIN = '/extensions/candidates/explain'
AGG = '11111111-2222-3333-4444-555555555555'
OTHER = '11111111-2222-3333-4444-666666666666'


def _explain(api, query, version=V):
    resp = api.get(EXPLAIN + '?' + query, version=version)
    assert resp.status_int == 200, resp.body
    return resp.json


def _stages(body):
    return {r['name']: r['stage'] for r in body['roots']}


def _host_and_pool(api, host_aggs=(AGG,), pool_aggs=(AGG,)):
    host = make_provider(api, 'A', {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192}})
    pool = make_provider(api, 'P', {'DISK_GB': {'total': 1000}})
    placing.set_traits(api, pool, placing.SHARES)
    placing.set_aggregates(api, host, *host_aggs)
    placing.set_aggregates(api, pool, *pool_aggs)
    return host, pool


def test_1_a_sharing_pool_is_counted(api, database):
    _host_and_pool(api)
    exporter = metrics.Exporter(database, flavors.parse_all(
        ['f: VCPU=2, MEMORY_MB=2048, DISK_GB=10']))
    assert placing.fits(exporter, 'f') == (4, {'A': 4, 'P': 0})
    placed = placing.place(api, {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 10})
    assert sum(placed.values()) == 4
    assert placing.fits(exporter, 'f') == (0, {'A': 0, 'P': 0})


def test_1_a_pool_is_shared_among_its_hosts_as_placing_shares_it(api, database):
    hosts = [make_provider(api, 'H%d' % i, {'VCPU': {'total': 8}}) for i in range(3)]
    pool = make_provider(api, 'P', {'DISK_GB': {'total': 50}})
    placing.set_traits(api, pool, placing.SHARES)
    for rp in hosts + [pool]:
        placing.set_aggregates(api, rp, AGG)
    exporter = metrics.Exporter(database, flavors.parse_all(['f: VCPU=1, DISK_GB=20']))
    # 2 instances' disk in the pool: the first host takes both
    assert placing.fits(exporter, 'f') == (2, {'H0': 2, 'H1': 0, 'H2': 0, 'P': 0})
    placed = placing.place(api, {'VCPU': 1, 'DISK_GB': 20})
    assert placed == {hosts[0]: 2}


def test_2_a_required_trait_on_a_root_that_supplies_nothing(api, database):
    root = make_provider(api, 'B')
    make_provider(api, 'B_NUMA0', {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 8192}},
                  parent=root)
    placing.set_traits(api, root, 'HW_CPU_X86_AVX2')
    exporter = metrics.Exporter(database, flavors.parse_all(
        ['f: VCPU=2, MEMORY_MB=2048, trait:HW_CPU_X86_AVX2=required']))
    assert placing.place(api, {'VCPU': 2, 'MEMORY_MB': 2048}, ['HW_CPU_X86_AVX2']) == {}
    assert placing.fits(exporter, 'f') == (0, {'B': 0})
    body = _explain(api, 'resources=VCPU:2,MEMORY_MB:2048&required=HW_CPU_X86_AVX2')
    assert _stages(body) == {'B': 'required_trait'}
    assert body['summary'] == 'no root provider fits: 1 of 1 ruled out at required_trait'


def test_3_explain_names_the_unit_limit_in_its_first_line(api):
    make_provider(api, 'cn1', {'VCPU': {'total': 8, 'min_unit': 2, 'step_size': 2}})
    body = _explain(api, 'resources=VCPU:3')
    assert body['summary'] == ('no root provider fits: VCPU:3 is outside the unit limits '
                               'of every provider with VCPU (step_size 2)')
    assert body['roots'][0]['stage'] == 'unit_limits'
    assert body['roots'][0]['limits'] == ['step_size 2']
    body = _explain(api, 'resources=VCPU:1')
    assert body['summary'] == ('no root provider fits: VCPU:1 is outside the unit limits '
                               'of every provider with VCPU (min_unit 2)')
    cn1 = api.get('/resource_providers?name=cn1', version=V).json['resource_providers']
    assert placing.claim(api, {cn1[0]['uuid']: {'VCPU': 4}}).status_int == 204
    make_provider(api, 'cn2', {'VCPU': {'total': 16, 'max_unit': 4}})
    body = _explain(api, 'resources=VCPU:6')
    assert _stages(body) == {'cn1': 'capacity', 'cn2': 'unit_limits'}
    assert body['roots'][1]['limits'] == ['max_unit 4']


def test_4_combined_is_said_only_of_several_groups(api):
    # a disk-only request met by a pool: the host anchors only the pool's
    host, pool = _host_and_pool(api)
    body = _explain(api, 'resources=DISK_GB:10')
    assert _stages(body) == {'A': 'shared_only', 'P': 'fits'}
    # member_of: the pool judged by its own aggregates, not the host's
    placing.set_aggregates(api, host, AGG, OTHER)
    body = _explain(api, 'resources=VCPU:1,DISK_GB:10&member_of=%s' % OTHER)
    assert _stages(body) == {'A': 'aggregate', 'P': 'class'}
    # below 1.29 no group is split across one tree's providers
    root = make_provider(api, 'N', {'MEMORY_MB': {'total': 1024}})
    make_provider(api, 'N_NUMA0', {'VCPU': {'total': 4}}, parent=root)
    body = _explain(api, 'resources=VCPU:1,MEMORY_MB:512', version='1.28')
    assert _stages(body)['N'] == 'group'
    assert 'below microversion 1.29' in body['roots'][2]['detail']
    assert _stages(_explain(api, 'resources=VCPU:1,MEMORY_MB:512'))['N'] == 'fits'
    # several groups: what is left is the rules between them
    body = _explain(api, 'resources1=VCPU:3&resources2=VCPU:3&group_policy=none')
    assert _stages(body)['N'] == 'combined'
    assert 'combined' not in set(_stages(_explain(api, 'resources=VCPU:5')).values())


def test_5_the_short_class_is_named_when_some_roots_lack_it(api):
    make_provider(api, 'cn1', {'VCPU': {'total': 4}})
    assert api.put('/resource_classes/CUSTOM_BAREMETAL_GOLD', version=V).status_int == 201
    make_provider(api, 'ironic1', {'CUSTOM_BAREMETAL_GOLD': {'total': 1}})
    body = _explain(api, 'resources=VCPU:8')
    assert body['summary'] == ('no root provider fits: all 1 that have it are short of '
                               'VCPU (asked 8, the largest free on one provider is 4); '
                               'the other 1 have no VCPU')


def test_6_an_exact_edge_of_a_ratio_is_one_answer_on_every_engine(api, database):
    """DISK_GB 2000 at ratio 0.9 (capacity 1800 as the operator wrote it,
    a double on every engine), 40 used: 11 instances of 160 GB, by
    candidates, claims and capacity alike (upstream on MySQL, whose column
    is single precision, takes 10: docs/compat.md)."""
    rp = make_provider(api, 'cn1', {'DISK_GB': {'total': 2000, 'allocation_ratio': 0.9}})
    assert placing.claim(api, {rp: {'DISK_GB': 40}}).status_int == 204
    exporter = metrics.Exporter(database, flavors.parse_all(['f: DISK_GB=160']))
    assert placing.fits(exporter, 'f') == (11, {'cn1': 11})
    assert placing.place(api, {'DISK_GB': 160}) == {rp: 11}
    assert placing.fits(exporter, 'f') == (0, {'cn1': 0})
    client_mod.error(placing.claim(api, {rp: {'DISK_GB': 160}}), 409)


def test_explain_is_bounded_as_candidates_are(database):
    """6 groups over 6 sibling providers (group_policy=none): 46656
    candidates. The explanation's searches stop at [placement]
    allocation_candidates_time_limit and say they were cut."""
    conf = client_mod.make_conf({('placement', 'allocation_candidates_time_limit'): 0.001})
    api = client_mod.Client(client_mod.make_app(database, conf))
    root = make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    for i in range(6):
        make_provider(api, 'pf%d' % i, {'SRIOV_NET_VF': {'total': 8}}, parent=root)
    query = '&'.join('resources%d=SRIOV_NET_VF:1' % g for g in range(6)) + '&group_policy=none'
    assert api.get('/allocation_candidates?' + query, version=V).status_int == 200
    body = _explain(api, query)
    assert body['cut'] is True
    assert 'allocation_candidates_time_limit' in body['summary']
