"""One capacity rule for lists, candidates and claims, on every backend.

GET /resource_providers?resources= and GET /allocation_candidates judge
"can this inventory take that much more" with the same rule over the
resource view (``candidates.search.fits``), lists and candidates' single
provider groups through ``single_providers``, a group spread over a tree
per class (``providers_per_class``). A claim judges it
in Python on the rows it locked (``allocations._check_capacity``: it must
say which limit failed). On random inventories (reserved, fractional
allocation ratios, min_unit, max_unit, step_size) and usage, all of them
must agree with the reference rule: pick exactly the providers it picks,
show the capacity it computes, accept exactly the claims it accepts.
"""
import random
import uuid

import pytest

from tests.property import reference
from tests.property import world as world_mod

# Ratios whose products are not whole, or not exact in binary (0.1, 0.7, 3.3).
RATIOS = [1.0, 1.0, 1.5, 0.1, 0.7, 3.3, 16.0]


def _inventory(rng):
    total = rng.randint(1, 40)
    max_unit = rng.randint(1, total)
    return {'total': total, 'reserved': rng.choice([0, 0, 1, total // 2, total]),
            'allocation_ratio': rng.choice(RATIOS), 'max_unit': max_unit,
            'min_unit': rng.randint(1, max_unit), 'step_size': rng.choice([1, 1, 2, 3, 5])}


def _world(database, rng, nested):
    """Providers with one VCPU inventory each, some used; ``nested`` puts
    each under a root without inventory (candidates then search per class
    across trees)."""
    world = world_mod.World(database)
    with world.batch():
        for i in range(24):
            parent = world.provider('root%d' % i) if nested else None
            prov = world.provider('rp%d' % i, parent=parent)
            inv = world.inventory(prov, 'VCPU', **_inventory(rng))
            # Some left with exactly min_unit or max_unit free: fits to the unit.
            used = max(0, rng.choice([0, 1, inv.capacity // 2, inv.capacity,
                                      inv.capacity - inv.min_unit,
                                      inv.capacity - inv.max_unit]))
            if used > 0:
                world.allocate(prov, 'VCPU', used)
    return world


def _listed(api, amount):
    resp = api.get('/resource_providers?resources=VCPU:%d' % amount, version='1.39')
    assert resp.status_int == 200, resp.body
    return {rp['uuid'] for rp in resp.json['resource_providers']}


def _candidates(api, amount):
    resp = api.get('/allocation_candidates?resources=VCPU:%d' % amount, version='1.39')
    assert resp.status_int == 200, resp.body
    found = {rp for request in resp.json['allocation_requests']
             for rp in request['allocations']}
    return found, resp.json['provider_summaries']


@pytest.mark.parametrize('nested', [False, True], ids=['flat', 'nested'])
@pytest.mark.parametrize('seed', range(3))
def test_lists_and_candidates_fit_by_the_reference_rule(api, database, seed, nested):
    world = _world(database, random.Random(seed), nested)
    providers = [p for p in world.providers.values() if p.inventories]
    for amount in range(1, 42):
        expected = {p.uuid for p in providers if reference.fits(p, 'VCPU', amount)}
        assert _listed(api, amount) == expected, amount
        found, summaries = _candidates(api, amount)
        assert found == expected, amount
        for p in providers:
            if p.uuid in summaries:
                assert summaries[p.uuid]['resources']['VCPU'] == {
                    'capacity': p.inventories['VCPU'].capacity,
                    'used': p.used.get('VCPU', 0)}, p.uuid


@pytest.mark.parametrize('seed', range(3))
def test_claims_fit_by_the_reference_rule(api, database, seed):
    world = _world(database, random.Random(seed), nested=False)
    for p in world.providers.values():
        inv = p.inventories['VCPU']
        free = int(inv.capacity) - p.used.get('VCPU', 0)
        amounts = {1, inv.min_unit - 1, inv.min_unit, inv.max_unit, inv.max_unit + 1,
                   inv.step_size + 1, free, free + 1}
        for amount in sorted(a for a in amounts if a > 0):
            consumer = str(uuid.uuid4())
            resp = api.put('/allocations/%s' % consumer, {
                'allocations': {p.uuid: {'resources': {'VCPU': amount}}},
                'consumer_generation': None, 'project_id': 'p', 'user_id': 'u'},
                version='1.28')
            assert resp.status_int == (204 if reference.fits(p, 'VCPU', amount) else 409), (
                p.uuid, amount, resp.body)
            if resp.status_int == 204:
                assert api.delete('/allocations/%s' % consumer).status_int == 204
