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
def test_almost_fitting_root_has_no_candidates(api, database, strategy, caplog):
    """63 single-unit children, 64 groups: nothing fits, and the search
    says so before building anything (upstream's bug 2160721): a time limit
    far too short for any search is never reached."""
    _build(api, 1, 63, 1)
    with caplog.at_level(logging.WARNING):
        answer = _ask(database, _query(64, 10000), max_allocation_candidates=1000,
                      allocation_candidates_generation_strategy=strategy,
                      allocation_candidates_time_limit=0.000001)
    assert answer['allocation_requests'] == []
    assert answer['provider_summaries'] == {}
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
