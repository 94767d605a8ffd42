"""Allocation candidates on wide trees: many identical children under one
root (nova's PCI devices in placement, one provider per physical GPU) and a
flavor asking for several of them in separate request groups.

The cases are upstream placement's own (its functional tests of the wide
tree explosion and of the almost fitting root): N computes, each with P
children holding V units of CUSTOM_VF; the unsuffixed group asks VCPU,
MEMORY_MB and DISK_GB of the root, G granular groups one CUSTOM_VF each,
group_policy=none. Each case states upstream's settings and the count and
spread of candidates upstream's tests expect; every candidate returned is
also checked to be valid. On every engine.
"""
import collections
import logging

import pytest

from placement_server.candidates import assign
from tests.functional import client as client_mod
from tests.functional.client import make_provider

VERSION = '1.38'
ROOT = {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}, 'DISK_GB': {'total': 500}}
ROOT_ASK = {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}


def _build(api, computes, children, units):
    """The computes' trees; returns {root uuid: [child uuids]}."""
    assert api.put('/resource_classes/CUSTOM_VF', version='1.7').status_int in (201, 204)
    trees = {}
    for i in range(computes):
        root = make_provider(api, 'compute%d' % i, ROOT)
        trees[root] = [make_provider(api, 'compute%d:PF%d' % (i, j),
                                     {'CUSTOM_VF': {'total': units}}, parent=root)
                       for j in range(children)]
    return trees


def _query(groups, limit):
    query = 'resources=DISK_GB:20,MEMORY_MB:2048,VCPU:2'
    query += ''.join('&resources%d=CUSTOM_VF:1' % g for g in range(groups))
    query += '&group_policy=none'
    if limit is not None:
        query += '&limit=%d' % limit
    return '/allocation_candidates?' + query


def _ask(database, query, **placement):
    """The answer of an app with these [placement] options."""
    conf = client_mod.make_conf({('placement', k): v for k, v in placement.items()})
    api = client_mod.Client(client_mod.make_app(database, conf))
    resp = api.get(query, version=VERSION)
    assert resp.status_int == 200, resp.body
    return resp.json


def _check(answer, trees, units, groups):
    """Every candidate is valid: the root's share from the root, one
    CUSTOM_VF per group from a child of the same root, no child given more
    than it holds. Returns {root: candidates}."""
    per_root = collections.Counter()
    seen = set()
    for candidate in answer['allocation_requests']:
        allocations, mappings = candidate['allocations'], candidate['mappings']
        roots = [rp for rp in allocations if rp in trees]
        assert len(roots) == 1, candidate
        root = roots[0]
        assert allocations[root]['resources'] == ROOT_ASK
        assert set(mappings) == {''} | {str(g) for g in range(groups)}
        assert mappings[''] == [root]
        taken = collections.Counter()
        for g in range(groups):
            (child,) = mappings[str(g)]
            assert child in trees[root]
            taken[child] += 1
        for child, count in taken.items():
            assert count <= units
            assert allocations[child]['resources'] == {'CUSTOM_VF': count}
        assert set(allocations) == {root} | set(taken)
        key = tuple(sorted((s, tuple(rps)) for s, rps in mappings.items()))
        assert key not in seen, 'the same candidate twice'
        seen.add(key)
        per_root[root] += 1
    return per_root


# (groups, limit, [placement] options, candidates expected, computes with candidates)
CASES_2_8_8 = [
    # every candidate: 8 x 8 per compute
    (2, 1000, {'max_allocation_candidates': 100000}, 128, 2),
    # 8192 valid, the limit cuts: both computes still answer
    (4, 1000, {'max_allocation_candidates': 100000}, 1000, 2),
    # 524288 valid: depth-first fills the answer from the first compute ...
    (6, 1000, {'max_allocation_candidates': 100000,
               'allocation_candidates_generation_strategy': 'depth-first'}, 1000, 1),
    # ... breadth-first from both
    (6, 1000, {'max_allocation_candidates': 100000,
               'allocation_candidates_generation_strategy': 'breadth-first'}, 1000, 2),
    # the global limit below the request's
    (4, 9000, {'max_allocation_candidates': 8000}, 8000, 2),
    # no global limit: all of them
    (4, 9000, {'max_allocation_candidates': -1}, 8192, 2),
]


def test_two_computes_of_eight_children_of_eight(api, database):
    trees = _build(api, 2, 8, 8)
    for groups, limit, options, expected, computes in CASES_2_8_8:
        answer = _ask(database, _query(groups, limit), **options)
        per_root = _check(answer, trees, 8, groups)
        assert (sum(per_root.values()), len(per_root)) == (expected, computes), (
            groups, limit, options)
        if computes == 2:
            # balanced: neither compute gives more than its share plus one
            assert max(per_root.values()) - min(per_root.values()) <= 1, per_root


def test_breadth_first_answers_the_same_twice(api, database):
    _build(api, 2, 8, 8)
    query = _query(2, 1000)
    first = _ask(database, query, allocation_candidates_generation_strategy='breadth-first')
    assert first == _ask(database, query,
                         allocation_candidates_generation_strategy='breadth-first')


# (computes, children, groups, limit, max_allocation_candidates, expected)
# Every child holds one unit: only P!/(P-G)! of the P**G choices are valid.
SINGLE_UNIT_CASES = [
    (1, 8, 8, 10000, 1000, 1000),
    (1, 21, 8, 1000, 1000, 1000),
    (1, 21, 16, 1000, 1000, 1000),
    (1, 21, 21, 1000, 1000, 1000),
    (2, 21, 8, 1000, 1000, 1000),
    (2, 21, 21, 1000, 1000, 1000),
    (2, 32, 32, 1000, 1000, 1000),
    (2, 48, 48, 100, 100, 100),
    (2, 64, 64, 10, 10, 10),
]


@pytest.mark.parametrize('computes,children', sorted({c[:2] for c in SINGLE_UNIT_CASES}))
def test_single_unit_children(api, database, computes, children):
    trees = _build(api, computes, children, 1)
    for c, p, groups, limit, most, expected in SINGLE_UNIT_CASES:
        if (c, p) != (computes, children):
            continue
        for optimize in (True, False):   # accepted, and changes nothing
            conf_answer = _ask(database, _query(groups, limit), max_allocation_candidates=most)
            answer = _ask_with_workaround(database, _query(groups, limit), optimize,
                                          max_allocation_candidates=most)
            assert answer == conf_answer
        per_root = _check(answer, trees, 1, groups)
        assert sum(per_root.values()) == expected, (computes, children, groups)
        assert len(per_root) == computes
        assert max(per_root.values()) - min(per_root.values()) <= 1, per_root


def _ask_with_workaround(database, query, optimize, **placement):
    overrides = {('placement', k): v for k, v in placement.items()}
    overrides['workarounds', 'optimize_for_wide_provider_trees'] = optimize
    api = client_mod.Client(client_mod.make_app(database, client_mod.make_conf(overrides)))
    resp = api.get(query, version=VERSION)
    assert resp.status_int == 200, resp.body
    return resp.json


@pytest.mark.parametrize('strategy', ['depth-first', 'breadth-first'])
def test_almost_fitting_root_has_no_candidates(api, database, strategy, caplog, monkeypatch):
    """63 single-unit children, 64 groups: nothing fits, and the search
    says so before trying a single piece (upstream's bug 2160721: 63**64
    partial choices otherwise)."""
    _build(api, 1, 63, 1)
    tried = []
    admits = assign.AnchorSearch._admits
    monkeypatch.setattr(assign.AnchorSearch, '_admits',
                        lambda self, *args: tried.append(args) or admits(self, *args))
    with caplog.at_level(logging.WARNING):
        answer = _ask(database, _query(64, 10000), max_allocation_candidates=1000,
                      allocation_candidates_generation_strategy=strategy)
    assert answer['allocation_requests'] == []
    assert answer['provider_summaries'] == {}
    assert tried == []
    assert not [r for r in caplog.records if 'time_limit' in r.getMessage()]


def test_many_computes_of_two_children(api, database):
    """Each compute's two children serve two groups two ways; the
    capacity check before the search keeps every compute."""
    trees = _build(api, 60, 2, 1)
    answer = _ask(database, _query(2, 10000), max_allocation_candidates=10000)
    per_root = _check(answer, trees, 1, 2)
    assert sum(per_root.values()) == 120
    assert set(per_root.values()) == {2}
    assert len(per_root) == 60


def test_time_limit_cuts_a_huge_answer(api, database, caplog):
    """No limit at all on a factorial answer: the time limit ends the
    search with valid candidates spread over the computes, and says so."""
    trees = _build(api, 3, 24, 1)
    query = _query(24, None)
    with caplog.at_level(logging.WARNING):
        answer = _ask(database, query, max_allocation_candidates=-1,
                      allocation_candidates_time_limit=0.3)
    per_root = _check(answer, trees, 1, 24)
    assert len(per_root) == 3
    assert max(per_root.values()) - min(per_root.values()) <= 1, per_root
    cut = [r for r in caplog.records if 'allocation_candidates_time_limit' in r.getMessage()]
    assert len(cut) == 1
    assert 'resources23=CUSTOM_VF' in cut[0].getMessage()


def test_isolate_on_wide_trees(api, database):
    """isolate: each group on its own child; 8 groups over 8 children of 2."""
    trees = _build(api, 1, 8, 2)
    query = _query(8, 50).replace('group_policy=none', 'group_policy=isolate')
    answer = _ask(database, query)
    per_root = _check(answer, trees, 2, 8)
    assert sum(per_root.values()) == 50
    for candidate in answer['allocation_requests']:
        children = [candidate['mappings'][str(g)][0] for g in range(8)]
        assert len(set(children)) == 8
    # 9 groups cannot be isolated over 8 children, though 16 units are free
    query = _query(9, None).replace('group_policy=none', 'group_policy=isolate')
    assert _ask(database, query)['allocation_requests'] == []


def test_identical_hosts_answer_as_each_alone(api, database):
    """Hosts alike share one search (assign.twin_key): each host's part of
    the answer over the fleet is its answer alone (in_tree), including
    hosts that differ by what is used of one device, and the search runs
    once per kind of host."""
    trees = _build(api, 5, 3, 2)
    busy = sorted(trees)[1]
    consumer = '1c1c0e7e-0f8b-4c34-9f5a-d0d0a1a1a1a1'
    resp = api.put('/allocations/%s' % consumer, {
        'allocations': {trees[busy][0]: {'resources': {'CUSTOM_VF': 1}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}, version='1.28')
    assert resp.status_int == 204, resp.body
    searched = []
    start = assign.AnchorSearch._start
    real_start = lambda self: searched.append(self.anchor) or start(self)  # noqa: E731
    query = _query(3, None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(assign.AnchorSearch, '_start', real_start)
        fleet = _ask(database, query, max_allocation_candidates=-1,
                     allocation_candidates_generation_strategy='depth-first')
    assert len(searched) == 2   # the free hosts' kind and the busy one
    by_root = collections.defaultdict(list)
    for ar in fleet['allocation_requests']:
        root = next(rp for rp in ar['allocations'] if rp in trees)
        by_root[root].append(ar)
    for root in trees:
        alone = _ask(database, query + '&in_tree=%s' % root, max_allocation_candidates=-1)
        assert by_root[root] == alone['allocation_requests'], root
    # 3 groups of one unit over 3 children of 2 units: 27 ways on a free
    # host but the 3 with every group on one child; fewer where a unit is used
    assert len(by_root[busy]) < len(by_root[sorted(trees)[0]]) == 24


def _clock(monkeypatch, tick):
    """assign's clock moves ``tick`` seconds each time it is read."""
    now = [1000.0]

    def monotonic():
        now[0] += tick
        return now[0]
    monkeypatch.setattr(assign.time, 'monotonic', monotonic)


def test_setting_up_the_searches_counts_against_the_time_limit(api, database, monkeypatch,
                                                                caplog):
    """A request whose searches cannot even be set up within the limit is
    cut with no candidates (and says so), never left to run on."""
    trees = _build(api, 2, 4, 1)
    api.get(_query(2, 1), version=VERSION)   # the view loaded first
    _clock(monkeypatch, 10.0)
    with caplog.at_level(logging.WARNING):
        answer = _ask(database, _query(2, None), allocation_candidates_time_limit=5)
    assert answer['allocation_requests'] == []
    assert [r for r in caplog.records if 'allocation_candidates_time_limit' in r.getMessage()]
    assert trees


def test_a_cut_answer_is_not_kept(api, database, monkeypatch):
    """The searches of a cut answer are not kept for the next identical
    request: it starts afresh, and answers as much, not more."""
    _build(api, 2, 12, 1)
    query = _query(12, None)
    app = client_mod.Client(client_mod.make_app(database, client_mod.make_conf(
        {('placement', 'max_allocation_candidates'): -1,
         ('placement', 'allocation_candidates_time_limit'): 1.0})))
    app.get(query + '&limit=1', version=VERSION)   # the view loaded first
    _clock(monkeypatch, 0.001)
    sizes = [len(app.get(query, version=VERSION).json['allocation_requests'])
             for _ in range(3)]
    assert sizes[0] > 0
    assert sizes == [sizes[0]] * 3, sizes
