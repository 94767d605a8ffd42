"""GET /allocation_candidates against a brute-force reference.

Hypothesis builds random provider trees (nested, sharing, with traits,
aggregates and usage) and random requests across microversions; every
returned candidate must be one the reference allows, and (without limit)
none the reference finds may be missing. Provider summaries are checked
against the world too.
"""
import urllib.parse
import uuid as uuidlib

import hypothesis
from hypothesis import strategies as st
import pytest
import webob.multidict

from placement_server.candidates import request as candidates_request
from tests import databases
from tests.functional import client as client_mod
from tests.property import reference
from tests.property import world as world_mod

CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB']
TRAITS = ['CUSTOM_A', 'CUSTOM_B']
AGGS = ['aaaaaaaa-0000-0000-0000-00000000000%d' % i for i in (1, 2)]
# Every version where behaviour changes; the newest (most features) twice as often.
VERSIONS = ['1.10', '1.12', '1.17', '1.21', '1.22', '1.24', '1.25', '1.27', '1.29',
            '1.31', '1.32', '1.33', '1.34', '1.35'] + ['1.36', '1.39'] * 7
EXAMPLES = {'sqlite': 300, 'postgresql': 20, 'mysql': 20}
# Wide trees' examples, per strategy
WIDE_EXAMPLES = {'sqlite': 120, 'postgresql': 15, 'mysql': 15}


def V(text):
    return tuple(int(x) for x in text.split('.'))


# Small numbers, biased so that requests often fit and sometimes do not.
inventory = st.fixed_dictionaries({
    'total': st.integers(1, 8), 'reserved': st.sampled_from([0, 0, 1]),
    'allocation_ratio': st.sampled_from([1.0, 1.0, 1.5, 2.0]),
    'min_unit': st.sampled_from([1, 1, 2]), 'step_size': st.sampled_from([1, 1, 2]),
    'max_unit_cut': st.sampled_from([0, 0, 1, 3]), 'used': st.sampled_from([0, 0, 1, 2, 4])})

provider = st.fixed_dictionaries({
    'inventories': st.dictionaries(st.sampled_from(CLASSES), inventory, max_size=3),
    'traits': st.sets(st.sampled_from(TRAITS)),
    'aggregates': st.sets(st.sampled_from(AGGS)),
})


@st.composite
def worlds(draw):
    """A list of (parent index or None, provider spec, is_sharing)."""
    specs = []
    for _ in range(draw(st.integers(1, 3))):
        root = len(specs)
        specs.append((None, draw(provider), False))
        for _ in range(draw(st.integers(0, 2))):
            child = len(specs)
            specs.append((root, draw(provider), False))
            if draw(st.booleans()):
                specs.append((child, draw(provider), False))
    for _ in range(draw(st.integers(0, 1))):
        specs.append((None, draw(provider), True))
    return specs


def build(world, specs):
    with world.batch():
        return _build(world, specs)


def _build(world, specs):
    world.ensure_traits(*TRAITS)
    made = []
    for i, (parent, spec, sharing) in enumerate(specs):
        prov = world.provider('rp%d' % i, parent=made[parent] if parent is not None else None)
        made.append(prov)
        for rc, inv in spec['inventories'].items():
            if inv['min_unit'] > inv['total']:
                continue
            max_unit = max(inv['min_unit'], inv['total'] - inv['max_unit_cut'])
            world.inventory(prov, rc, inv['total'], reserved=inv['reserved'],
                            min_unit=inv['min_unit'], max_unit=max_unit,
                            step_size=inv['step_size'],
                            allocation_ratio=inv['allocation_ratio'])
            used = min(inv['used'], int(inv['total'] * inv['allocation_ratio']))
            if used:
                world.allocate(prov, rc, used)
        traits = set(spec['traits']) | ({reference.SHARES} if sharing else set())
        if traits:
            world.traits(prov, *sorted(traits))
        if spec['aggregates']:
            world.aggregate(prov, *sorted(spec['aggregates']))
    return made


def _resources(draw, max_classes):
    classes = draw(st.lists(st.sampled_from(CLASSES), min_size=1, max_size=max_classes,
                            unique=True))
    return ','.join('%s:%d' % (rc, draw(st.sampled_from([1, 1, 2, 3]))) for rc in classes)


def _required(draw, version):
    names = draw(st.lists(st.sampled_from(TRAITS), max_size=2, unique=True))
    if not names:
        return None
    if version >= (1, 39) and len(names) == 2 and draw(st.booleans()):
        return 'in:' + ','.join(names)
    if version >= (1, 22):
        names = [('!' if draw(st.booleans()) else '') + n for n in names]
    return ','.join(names)


def _member_of(draw, version):
    aggs = draw(st.lists(st.sampled_from(AGGS), min_size=1, max_size=2, unique=True))
    value = aggs[0] if len(aggs) == 1 else 'in:' + ','.join(aggs)
    if version >= (1, 32) and draw(st.booleans()):
        value = '!' + value
    return value


@st.composite
def queries(draw, uuids):
    text = draw(st.sampled_from(VERSIONS))
    version = V(text)
    params = [('resources', _resources(draw, 2))]
    unsuffixed = [r.split(':')[0] for r in params[0][1].split(',')]
    if version >= (1, 17) and draw(st.booleans()):
        required = _required(draw, version)
        if required:
            params.append(('required', required))
    if version >= (1, 21) and draw(st.integers(0, 3)) == 0:
        params.append(('member_of', _member_of(draw, version)))
    if version >= (1, 31) and draw(st.integers(0, 3)) == 0:
        params.append(('in_tree', draw(st.sampled_from(uuids))))
    suffixes = []
    if version >= (1, 25):
        for n in range(draw(st.sampled_from([0, 1, 1, 2, 2]))):
            suffix = (str(n + 1) if version < (1, 33)
                      else draw(st.sampled_from(['%d' % (n + 1), '_G%d' % n])))
            suffixes.append(suffix)
            if draw(st.booleans()):
                # the same class as the unsuffixed group: amounts may add up
                params.append(('resources' + suffix, '%s:%d' % (
                    draw(st.sampled_from(unsuffixed)), draw(st.integers(1, 3)))))
            else:
                params.append(('resources' + suffix, _resources(draw, 1)))
            if version >= (1, 17) and draw(st.booleans()):
                required = _required(draw, version)
                if required:
                    params.append(('required' + suffix, required))
            if draw(st.integers(0, 4)) == 0:
                params.append(('member_of' + suffix, _member_of(draw, version)))
    if version >= (1, 35) and draw(st.integers(0, 3)) == 0:
        params.append(('root_required', draw(st.sampled_from(['CUSTOM_A', '!CUSTOM_B']))))
    if version >= (1, 36) and suffixes and draw(st.booleans()):
        if draw(st.booleans()):
            params.append(('required_R', 'CUSTOM_A'))
            suffixes = suffixes + ['_R']
        params.append(('same_subtree', ','.join(suffixes)))
    if suffixes and draw(st.booleans()) or len(suffixes) > 1:
        params.append(('group_policy', draw(st.sampled_from(['none', 'none', 'isolate']))))
    if version >= (1, 16) and draw(st.integers(0, 4)) == 0:
        params.append(('limit', str(draw(st.integers(1, 3)))))
    return text, params


def _conflicting(params):
    """Requests upstream rejects for conflicting traits are not what this tests."""
    by_key = {}
    for key, value in params:
        if key.startswith('required'):
            names = value[3:].split(',') if value.startswith('in:') else value.split(',')
            by_key[key] = names
    return any(n.startswith('!') and n[1:] in names
               for names in by_key.values() for n in names)


def _amounts(item, version):
    if version >= (1, 12):
        return frozenset(((u, rc), a) for u, alloc in item['allocations'].items()
                         for rc, a in alloc['resources'].items())
    return frozenset(((alloc['resource_provider']['uuid'], rc), a)
                     for alloc in item['allocations'] for rc, a in alloc['resources'].items())


def check(api, world, text, params):
    version = V(text)
    resp = api.get('/allocation_candidates?' + urllib.parse.urlencode(params), version=text)
    assert resp.status_int == 200, resp.body
    body = resp.json
    request = candidates_request.parse(webob.multidict.MultiDict(params), version)
    expected = reference.candidates(world, request)
    got = body['allocation_requests']
    if version >= (1, 34):
        got_keys = [(_amounts(i, version),
                     frozenset((s, frozenset(u)) for s, u in i['mappings'].items()))
                    for i in got]
        assert len(set(got_keys)) == len(got_keys), 'duplicate candidates'
        assert set(got_keys) <= expected, set(got_keys) - expected
        if not request.limit:
            assert set(got_keys) == expected, expected - set(got_keys)
    else:
        got_amounts = [_amounts(i, version) for i in got]
        allowed = {amounts for amounts, _ in expected}
        assert set(got_amounts) <= allowed, set(got_amounts) - allowed
        if not request.limit:
            assert set(got_amounts) == allowed, allowed - set(got_amounts)
            assert len(got_amounts) == len(expected)
    if request.limit:
        assert len(got) == min(request.limit, len(expected))
    _check_summaries(world, body, request, version)


def _check_summaries(world, body, request, version):
    summaries = body['provider_summaries']
    used = {u for item in body['allocation_requests'] for (u, _), _ in _amounts(item, version)}
    if version >= (1, 29):
        roots = {world.providers[u].root.uuid for u in used}
        shown = {u for u, p in world.providers.items() if p.root.uuid in roots}
    else:
        shown = used
    assert set(summaries) == shown
    requested = request.all_classes()
    for u, summary in summaries.items():
        prov = world.providers[u]
        want = {rc: {'capacity': inv.capacity, 'used': prov.used.get(rc, 0)}
                for rc, inv in prov.inventories.items()
                if version >= (1, 27) or rc in requested}
        assert summary['resources'] == want
        if version >= (1, 17):
            assert sorted(summary['traits']) == sorted(prov.traits)
        if version >= (1, 29):
            assert summary['root_provider_uuid'] == prov.root.uuid
            assert summary['parent_provider_uuid'] == (prov.parent.uuid if prov.parent else None)


@pytest.mark.parametrize('backend', databases.BACKENDS)
def test_candidates_match_reference(backend, _databases):
    test_db = _databases(backend)
    api = client_mod.Client(client_mod.make_app(test_db.db))

    @hypothesis.settings(max_examples=EXAMPLES[backend], deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(data=st.data())
    def run(data):
        test_db.reset()
        specs = data.draw(worlds())
        world = world_mod.World(test_db.db)
        made = build(world, specs)
        uuids = [p.uuid for p in made] + [str(uuidlib.UUID(int=7))]
        text, params = data.draw(queries(uuids))
        hypothesis.assume(not _conflicting(params))
        check(api, world, text, params)

    run()


# Wide trees: identical children under each root, many groups asking one
# unit or two of them each (PCI devices and vGPUs); some children used, some
# with a trait a group requires. Small enough for the reference's product.
DEVICE = 'VGPU'


@st.composite
def wide_worlds(draw):
    specs = []
    for _ in range(draw(st.integers(1, 2))):
        root = len(specs)
        specs.append((None, {'inventories': {'VCPU': _plain(8)}, 'traits': set(),
                             'aggregates': set()}, False))
        total = draw(st.integers(1, 3))
        for _ in range(draw(st.integers(1, 5))):
            inv = _plain(total)
            inv['used'] = draw(st.sampled_from([0, 0, 0, 1]))
            traits = draw(st.sampled_from([set(), set(), {'CUSTOM_A'}]))
            specs.append((root, {'inventories': {DEVICE: inv}, 'traits': traits,
                                 'aggregates': set()}, False))
    return specs


def _plain(total):
    return {'total': total, 'reserved': 0, 'allocation_ratio': 1.0, 'min_unit': 1,
            'step_size': 1, 'max_unit_cut': 0, 'used': 0}


@st.composite
def wide_queries(draw):
    params = [('resources', 'VCPU:1')]
    groups = draw(st.integers(1, 5))
    for g in range(groups):
        params.append(('resources%d' % g, '%s:%d' % (DEVICE, draw(st.sampled_from([1, 1, 2])))))
        if draw(st.integers(0, 3)) == 0:
            params.append(('required%d' % g, draw(st.sampled_from(['CUSTOM_A', '!CUSTOM_A']))))
    params.append(('group_policy', draw(st.sampled_from(['none', 'isolate']))))
    if groups > 1 and draw(st.integers(0, 3)) == 0:
        params.append(('same_subtree', ','.join(str(g) for g in range(2))))
    if draw(st.integers(0, 3)) == 0:
        params.append(('limit', str(draw(st.integers(1, 4)))))
    return '1.39', params


@pytest.mark.parametrize('strategy', ['depth-first', 'breadth-first'])
@pytest.mark.parametrize('backend', databases.BACKENDS)
def test_wide_tree_candidates_match_reference(backend, strategy, _databases):
    """The search's pruning (capacity, the tree's free capacity, isolate,
    interchangeable children) never drops a valid candidate nor admits an
    invalid one."""
    test_db = _databases(backend)
    conf = client_mod.make_conf({
        ('placement', 'allocation_candidates_generation_strategy'): strategy})
    api = client_mod.Client(client_mod.make_app(test_db.db, conf))

    @hypothesis.settings(max_examples=WIDE_EXAMPLES[backend], deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(data=st.data())
    def run(data):
        test_db.reset()
        world = world_mod.World(test_db.db)
        build(world, data.draw(wide_worlds()))
        text, params = data.draw(wide_queries())
        check(api, world, text, params)

    run()
