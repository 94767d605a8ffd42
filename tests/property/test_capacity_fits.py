"""Flavor counts and free capacity against a brute-force count.

On random trees (tests/property/test_allocation_candidates.py's worlds:
nested, sharing, with usage, reserved, ratios and unit limits), instances
of a random flavor are placed one at a time with the reference's own
capacity rule until none fits, per root; the exporter's per-host and
summed counts must equal how many were placed. Free capacity and the
largest single allocation per class are counted amount by amount.
"""
import hypothesis
from hypothesis import strategies as st
from prometheus_client import parser
import pytest

from placement_server.capacity import flavors
from placement_server.capacity import metrics
from tests import databases
from tests.property import reference
from tests.property import world as world_mod
from tests.property.test_allocation_candidates import CLASSES
from tests.property.test_allocation_candidates import build
from tests.property.test_allocation_candidates import worlds

EXAMPLES = {'sqlite': 200, 'postgresql': 15, 'mysql': 15}


@st.composite
def flavor_specs(draw):
    classes = draw(st.lists(st.sampled_from(CLASSES), min_size=1, max_size=3, unique=True))
    specs = ['%s=%d' % (rc, draw(st.integers(1, 3))) for rc in classes]
    if draw(st.integers(0, 3)) == 0:
        specs.append('trait:CUSTOM_A=required')
    return 'f%d: %s' % (draw(st.integers(0, 99)), ', '.join(specs))


def placed(world, root, flavor):
    """Instances of ``flavor`` placed one by one in the tree of ``root``."""
    if not flavor.required <= root.traits:
        return 0
    tree = [p for p in world.providers.values() if p.root is root]
    saved = {p.uuid: dict(p.used) for p in tree}
    count = 0
    try:
        while True:
            chosen = []
            for rc, amount in flavor.resources:
                where = next((p for p in tree if reference.fits(p, rc, amount)), None)
                if where is None:
                    return count
                chosen.append((where, rc, amount))
            for p, rc, amount in chosen:
                p.used[rc] = p.used.get(rc, 0) + amount
            count += 1
    finally:
        for p in tree:
            p.used = saved[p.uuid]


def scrape(exporter):
    found = {}
    for family in parser.text_string_to_metric_families(exporter.text().decode()):
        for sample in family.samples:
            found.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return found


def check(test_db, world, flavor_texts):
    chosen = flavors.parse_all(flavor_texts)
    found = scrape(metrics.Exporter(test_db.db, chosen))
    roots = [p for p in world.providers.values() if p.root is p]
    for f in chosen:
        per_host = {root.name: placed(world, root, f) for root in roots}
        got = {dict(k)['hostname']: v
               for k, v in found['openstack_placement_flavor_host_fits'].items()
               if dict(k)['flavor'] == f.name}
        assert got == per_host, f
        assert found['openstack_placement_flavor_fits'][
            frozenset({'flavor': f.name}.items())] == sum(per_host.values())
    free, largest = {}, {}
    for p in world.providers.values():
        for rc, inv in p.inventories.items():
            used = p.used.get(rc, 0)
            free[rc] = free.get(rc, 0) + max(0, inv.capacity - used)
            one = max((a for a in range(1, inv.capacity + 1) if reference.fits(p, rc, a)),
                      default=0)
            largest[rc] = max(largest.get(rc, 0), one)
    got_free = {dict(k)['resourcetype']: v
                for k, v in found.get('openstack_placement_resource_free', {}).items()}
    got_largest = {dict(k)['resourcetype']: v
                   for k, v in found.get('openstack_placement_resource_largest_free', {}).items()}
    assert got_free == free
    assert got_largest == largest


@pytest.mark.parametrize('backend', databases.BACKENDS)
def test_fits_and_free_match_brute_force(backend, _databases):
    test_db = _databases(backend)

    @hypothesis.settings(max_examples=EXAMPLES[backend], deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(data=st.data())
    def run(data):
        test_db.reset()
        world = world_mod.World(test_db.db)
        build(world, data.draw(worlds()))
        texts = data.draw(st.lists(flavor_specs(), min_size=1, max_size=3,
                                   unique_by=lambda t: t.split(':')[0]))
        check(test_db, world, texts)

    run()
