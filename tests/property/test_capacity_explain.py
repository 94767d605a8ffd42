"""The explanation of allocation candidates against the brute-force reference.

For random worlds and queries (test_allocation_candidates' strategies):
the roots the explanation says fit are exactly the roots the reference's
candidates touch, and every other root's stated reason is true of the
world: a class no provider of its pool has, a capacity short with the
largest free amount stated, unit limits every provider breaks, named,
another tree named by in_tree, a root that misses root_required,
candidates of sharing providers alone, combined only of several groups.
"""
import urllib.parse
import uuid as uuidlib

import hypothesis
from hypothesis import strategies as st
import pytest

from placement_server.capacity import explain
from tests import databases
from tests.property import reference
from tests.property import world as world_mod
from tests.property.test_allocation_candidates import _conflicting
from tests.property.test_allocation_candidates import build
from tests.property.test_allocation_candidates import queries
from tests.property.test_allocation_candidates import worlds

EXAMPLES = {'sqlite': 200, 'postgresql': 15, 'mysql': 15}


def pool(world, root, group):
    """The providers a group may take from under ``root``, filters aside."""
    tree = [p for p in world.providers.values() if p.root is root]
    if group.in_tree:
        return tree
    aggs = set().union(*(p.aggregates for p in tree))
    return tree + [p for p in world.providers.values()
                   if reference.SHARES in p.traits and p.aggregates & aggs and p.root is not root]


def unit_limit(inv, amount):
    if amount < inv.min_unit:
        return 'min_unit %d' % inv.min_unit
    if amount > inv.max_unit:
        return 'max_unit %d' % inv.max_unit
    if amount % inv.step_size:
        return 'step_size %d' % inv.step_size
    return ''


def check_reason(world, request, found, roots, v):
    """The reason ``v`` names is true of the world."""
    root = roots[v.root]
    group = request.groups.get('' if v.group == '(unsuffixed)' else v.group)
    if v.stage in ('class', 'capacity', 'unit_limits'):
        have = [p for p in pool(world, root, group) if v.resource_class in p.inventories]
        assert not any(reference.fits(p, v.resource_class, v.asked) for p in have), v
    if v.stage == 'class':
        assert not have, v
    elif v.stage == 'capacity':
        within = [p for p in have if not unit_limit(p.inventories[v.resource_class], v.asked)]
        assert within, v
        assert v.largest_free == max(
            max(0, p.inventories[v.resource_class].capacity - p.used.get(v.resource_class, 0))
            for p in within) < v.asked, v
    elif v.stage == 'unit_limits':
        assert have, v
        assert v.limits == sorted({unit_limit(p.inventories[v.resource_class], v.asked)
                                   for p in have}), v
        assert '' not in v.limits, v
    elif v.stage == 'in_tree':
        named = world.providers.get(group.in_tree)
        assert named is None or named.root is not root
    elif v.stage == 'root_required':
        assert (not request.root_required <= root.traits
                or request.root_forbidden & root.traits)
    elif v.stage == 'combined':
        assert len(request.groups) > 1, v
    elif v.stage == 'shared_only':
        assert any(all(reference.SHARES in world.providers[u].traits
                       and world.providers[u].root is not root
                       and world.providers[u].aggregates & set().union(*(
                           p.aggregates for p in world.providers.values() if p.root is root))
                       for (u, _), _ in amounts)
                   for amounts, _ in found), v
    else:
        assert v.stage in explain.STAGES and v.stage not in ('fits', 'time_limit'), v


def check(db, world, text, params):
    query = urllib.parse.urlencode(params)
    with db.reader() as conn:
        found = explain.explain(conn, query, text)
    request = explain.parse(query, text)
    expected = reference.candidates(world, request)
    touched = {world.providers[u].root.uuid for amounts, _ in expected for (u, _), _ in amounts}
    said = {v.root for v in found.verdicts if v.stage == 'fits'}
    assert said == touched
    roots = {p.uuid: p for p in world.providers.values() if p.root is p}
    assert {v.root for v in found.verdicts} == set(roots)
    assert not found.cut
    for v in found.verdicts:
        if v.stage != 'fits':
            check_reason(world, request, expected, roots, v)
    assert found.headline()


@pytest.mark.parametrize('backend', databases.BACKENDS)
def test_explanation_matches_reference(backend, _databases):
    test_db = _databases(backend)

    @hypothesis.settings(max_examples=EXAMPLES[backend], deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(data=st.data())
    def run(data):
        test_db.reset()
        world = world_mod.World(test_db.db)
        made = build(world, data.draw(worlds()))
        uuids = [p.uuid for p in made] + [str(uuidlib.UUID(int=7))]
        text, params = data.draw(queries(uuids))
        hypothesis.assume(not _conflicting(params))
        check(test_db.db, world, text, params)

    run()
