"""The explanation of allocation candidates against the brute-force reference.

For random worlds and queries (test_allocation_candidates' strategies):
the roots the explanation says fit are exactly the roots the reference's
candidates touch, and every other root's stated reason is true of the
world: a class no provider of its pool has, a capacity short with the
largest free amount stated, another tree named by in_tree, a root that
misses root_required.
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


def pool(world, root):
    tree = [p for p in world.providers.values() if p.root is root]
    aggs = set().union(*(p.aggregates for p in tree))
    return tree + [p for p in world.providers.values()
                   if reference.SHARES in p.traits and p.aggregates & aggs and p.root is not root]


def largest(prov, rc):
    inv = prov.inventories[rc]
    return max((a for a in range(1, inv.capacity + 1) if reference.fits(prov, rc, a)), default=0)


def check(db, world, text, params):
    query = urllib.parse.urlencode(params)
    with db.reader() as conn:
        found = explain.explain(conn, query, text)
    request = explain.parse(query, text)
    touched = {world.providers[u].root.uuid
               for amounts, _ in reference.candidates(world, request) for (u, _), _ in amounts}
    said = {v.root for v in found.verdicts if v.stage == 'fits'}
    assert said == touched
    roots = {p.uuid: p for p in world.providers.values() if p.root is p}
    assert {v.root for v in found.verdicts} == set(roots)
    for v in found.verdicts:
        root = roots[v.root]
        group = request.groups.get('' if v.group == '(unsuffixed)' else v.group)
        if v.stage == 'fits':
            continue
        if v.stage == 'class':
            assert not any(v.resource_class in p.inventories for p in pool(world, root)), v
        elif v.stage == 'capacity':
            have = [p for p in pool(world, root) if v.resource_class in p.inventories]
            assert have and not any(reference.fits(p, v.resource_class, v.asked) for p in have)
            assert v.largest_free == max(largest(p, v.resource_class) for p in have)
        elif v.stage == 'in_tree':
            named = world.providers.get(group.in_tree)
            assert named is None or named.root is not root
        elif v.stage == 'root_required':
            assert (not request.root_required <= root.traits
                    or request.root_forbidden & root.traits)
        else:
            assert v.stage in explain.STAGES
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
