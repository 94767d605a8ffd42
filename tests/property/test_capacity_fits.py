"""Flavor counts against placing the flavor through the API.

On random clouds of the trees the agent builds (flat hosts, hosts whose
disk is a sharing DISK_GB pool of their aggregate, NUMA children under a
root that holds only traits (or disk), vGPU and SR-IOV children, ironic
nodes), with random inventories, unit limits, ratios and usage, random
flavors are placed as a scheduler places them, one instance at a time
(GET /allocation_candidates?limit=1, PUT /allocations, until none
comes: tests/functional/placing.py); the exporter's summed and per-host
counts must equal what was placed, before and (zero) after. Then each
root's explanation for the flavor's query must agree with whether the
root is in GET /allocation_candidates' answer. Free capacity and the
largest single allocation per class are counted amount by amount.
"""
import hypothesis
from hypothesis import strategies as st
import pytest

from placement_server.capacity import explain
from placement_server.capacity import flavors
from placement_server.capacity import metrics
from tests import databases
from tests.functional import client as client_mod
from tests.functional import placing
from tests.property import reference
from tests.property import world as world_mod
from tests.property.test_allocation_candidates import AGGS
from tests.property.test_allocation_candidates import build

EXAMPLES = {'sqlite': 100, 'postgresql': 4, 'mysql': 4}
HOST = ['VCPU', 'MEMORY_MB']
BAREMETAL = 'CUSTOM_BAREMETAL'
# Room for a few instances, often; unit limits and usage now and then.
inventory = st.fixed_dictionaries({
    'total': st.integers(2, 12), 'reserved': st.sampled_from([0, 0, 0, 1]),
    'allocation_ratio': st.sampled_from([1.0, 1.0, 1.5, 2.0]),
    'min_unit': st.sampled_from([1, 1, 1, 2]), 'step_size': st.sampled_from([1, 1, 1, 2]),
    'max_unit_cut': st.sampled_from([0, 0, 0, 1, 3]), 'used': st.sampled_from([0, 0, 0, 1, 2])})


def _spec(draw, classes, traits=(), aggregates=()):
    return {'inventories': {rc: draw(inventory) for rc in classes},
            'traits': set(traits), 'aggregates': set(aggregates)}


@st.composite
def clouds(draw):
    """(parent index or None, provider spec, is_sharing), as ``build`` takes them."""
    specs = []
    aggs = st.sets(st.sampled_from(AGGS), max_size=1)
    root_traits = st.sets(st.sampled_from(['CUSTOM_A']))
    for _ in range(draw(st.integers(1, 4))):
        layout = draw(st.sampled_from(['flat', 'pooled', 'numa', 'vgpu', 'sriov', 'ironic']))
        root = len(specs)
        if layout == 'ironic':
            specs.append((None, _spec(draw, [BAREMETAL]), False))
            specs[-1][1]['inventories'][BAREMETAL].update(
                total=1, reserved=0, allocation_ratio=1.0, min_unit=1, step_size=1,
                max_unit_cut=0, used=draw(st.sampled_from([0, 1])))
            continue
        if layout == 'numa':
            disk = ['DISK_GB'] if draw(st.booleans()) else []
            specs.append((None, _spec(draw, disk, draw(root_traits), draw(aggs)), False))
            for _ in range(draw(st.integers(1, 2))):
                specs.append((root, _spec(draw, HOST), False))
            continue
        disk = [] if layout == 'pooled' else ['DISK_GB']
        specs.append((None, _spec(draw, HOST + disk, draw(root_traits), draw(aggs)), False))
        if layout == 'vgpu':
            specs.append((root, _spec(draw, ['VGPU']), False))
        elif layout == 'sriov':
            for _ in range(draw(st.integers(1, 2))):
                specs.append((root, _spec(draw, ['SRIOV_NET_VF'],
                                          draw(st.sets(st.sampled_from(['CUSTOM_B'])))),
                              False))
    for _ in range(draw(st.integers(0, 2))):
        specs.append((None, _spec(draw, ['DISK_GB'], (), draw(aggs)), True))
    return specs


@st.composite
def flavor_specs(draw):
    if draw(st.integers(0, 5)) == 0:
        return {BAREMETAL: 1}, ()
    classes = draw(st.lists(st.sampled_from(HOST + ['DISK_GB']), min_size=1, max_size=2,
                            unique=True))
    classes += draw(st.sampled_from([[], [], ['VGPU'], ['SRIOV_NET_VF']]))
    resources = {rc: draw(st.sampled_from([1, 1, 2, 3])) for rc in classes}
    required = draw(st.sampled_from([(), (), ('CUSTOM_A',), ('CUSTOM_B',)]))
    return resources, required


def _text(name, resources, required):
    return '%s: %s' % (name, ', '.join(
        ['%s=%d' % rc for rc in sorted(resources.items())]
        + ['trait:%s=required' % t for t in required]))


def check_explained(api, db, world, resources, required):
    """Each root's verdict agrees with whether GET /allocation_candidates shows it."""
    query = placing.query(resources, required)
    resp = api.get('/allocation_candidates?' + query, version=placing.V)
    if resp.status_int == 400:
        return
    shown = {s['root_provider_uuid'] for rp, s in resp.json['provider_summaries'].items()
             if any(rp in c['allocations'] for c in resp.json['allocation_requests'])}
    with db.reader() as conn:
        found = explain.explain(conn, query, placing.V)
    assert {v.root for v in found.verdicts if v.stage == 'fits'} == shown
    assert not {v.stage for v in found.verdicts} & {'combined', 'time_limit'}


def check_free(found, world):
    free, largest = {}, {}
    for p in world.providers.values():
        for rc, inv in p.inventories.items():
            used = p.used.get(rc, 0)
            free[rc] = free.get(rc, 0) + max(0, inv.capacity - used)
            one = max((a for a in range(1, inv.capacity + 1) if reference.fits(p, rc, a)),
                      default=0)
            largest[rc] = max(largest.get(rc, 0), one)
    assert {dict(k)['resourcetype']: v
            for k, v in found.get('openstack_placement_resource_free', {}).items()} == free
    assert {dict(k)['resourcetype']: v for k, v in found.get(
        'openstack_placement_resource_largest_free', {}).items()} == largest


def check(api, db, world, chosen):
    texts = [_text('f%d' % i, *f) for i, f in enumerate(chosen)]
    exporter = metrics.Exporter(db, flavors.parse_all(texts))
    check_free(placing.scrape(exporter), world)
    names = {p.uuid: p.name for p in world.providers.values() if p.root is p}
    for i, (resources, required) in enumerate(chosen):
        check_explained(api, db, world, resources, required)
        total, per_host = placing.fits(exporter, 'f%d' % i)
        consumers = []
        placed = placing.place(api, resources, required, consumers)
        assert per_host == {name: placed.get(u, 0) for u, name in names.items()}, texts[i]
        assert total == sum(placed.values())
        # and nothing more fits now, by the kept figures brought up to date
        assert placing.fits(exporter, 'f%d' % i)[0] == 0
        for consumer in consumers:
            assert api.delete('/allocations/%s' % consumer).status_int == 204


@pytest.mark.parametrize('backend', databases.BACKENDS)
def test_fits_equal_placing_through_the_api(backend, _databases):
    test_db = _databases(backend)
    api = client_mod.Client(client_mod.make_app(test_db.db))

    @hypothesis.settings(max_examples=EXAMPLES[backend], deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck),
                         derandomize=backend != 'sqlite')
    @hypothesis.given(data=st.data())
    def run(data):
        test_db.reset()
        world = world_mod.World(test_db.db)
        build(world, data.draw(clouds()))
        chosen = data.draw(st.lists(flavor_specs(), min_size=1, max_size=3))
        check(api, test_db.db, world, chosen)

    run()

