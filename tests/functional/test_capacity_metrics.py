"""Capacity series: openstack-exporter's names and labels, and numbers
equal to what the API's inventories and usages say, on every engine."""
import uuid

from prometheus_client import parser
import pytest

from placement_server.capacity import flavors
from placement_server.capacity import metrics
from tests.functional.client import make_provider

# openstack-exporter's placement capacity metrics (exporters/placement.go
# at a94a54f, 2026-08-06, and its README's table): name -> label names
EXPORTER_SERIES = {
    'openstack_placement_resource_total': {'hostname', 'resourcetype'},
    'openstack_placement_resource_reserved': {'hostname', 'resourcetype'},
    'openstack_placement_resource_allocation_ratio': {'hostname', 'resourcetype'},
    'openstack_placement_resource_usage': {'hostname', 'resourcetype'},
    # per class of the provider's inventory, as the exporter emits it
    'openstack_placement_resource_generation': {'hostname', 'resourcetype'},
}


def scrape(exporter):
    """{name: {frozenset(labels.items()): value}} of one scrape, through
    prometheus_client's own parser (which refuses malformed text)."""
    found = {}
    for family in parser.text_string_to_metric_families(exporter.text().decode()):
        assert family.type == 'gauge', family.name
        for sample in family.samples:
            key = frozenset(sample.labels.items())
            assert key not in found.setdefault(sample.name, {}), sample
            found[sample.name][key] = sample.value
    return found


def claim(api, allocations):
    resp = api.put('/allocations/%s' % uuid.uuid4(), {
        'allocations': {rp: {'resources': r} for rp, r in allocations.items()},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}, version='1.28')
    assert resp.status_int == 204, resp.body


@pytest.fixture
def cloud(api):
    cn1 = make_provider(api, 'cn1', {
        'VCPU': {'total': 16, 'reserved': 2, 'allocation_ratio': 4.0},
        'MEMORY_MB': {'total': 32768, 'reserved': 512, 'allocation_ratio': 1.5,
                      'step_size': 256, 'max_unit': 16384},
        'DISK_GB': {'total': 500}})
    cn2 = make_provider(api, 'cn2', {'MEMORY_MB': {'total': 8192}})
    numa = make_provider(api, 'cn2_numa0', {'VCPU': {'total': 8, 'max_unit': 4}}, parent=cn2)
    make_provider(api, 'empty')
    claim(api, {cn1: {'VCPU': 5, 'MEMORY_MB': 4096}})
    claim(api, {cn2: {'MEMORY_MB': 2048}, numa: {'VCPU': 3}})
    return {'cn1': cn1, 'cn2': cn2, 'cn2_numa0': numa}


def api_view(api, providers):
    """{name: {metric suffix: {class: value}}} from the API itself."""
    seen = {}
    for name, rp in providers.items():
        inv = api.get('/resource_providers/%s/inventories' % rp, version='1.39').json
        use = api.get('/resource_providers/%s/usages' % rp, version='1.39').json
        per = seen[name] = {'total': {}, 'reserved': {}, 'allocation_ratio': {}, 'usage': {}}
        for rc, i in inv['inventories'].items():
            for key in ('total', 'reserved', 'allocation_ratio'):
                per[key][rc] = i[key]
            per['usage'][rc] = use['usages'][rc]
    return seen


def test_names_and_labels_are_openstack_exporters(api, database, cloud):
    found = scrape(metrics.Exporter(database, []))
    for name, labels in EXPORTER_SERIES.items():
        assert found[name], name
        assert {frozenset(dict(k)) for k in found[name]} == {frozenset(labels)}, name


def test_numbers_equal_the_apis_inventories_and_usages(api, database, cloud):
    exporter = metrics.Exporter(database, [])
    for step in range(2):
        found = scrape(exporter)
        expected = api_view(api, cloud)
        got = {}
        for suffix in ('total', 'reserved', 'allocation_ratio', 'usage'):
            for key, value in found['openstack_placement_resource_' + suffix].items():
                labels = dict(key)
                got.setdefault(labels['hostname'], {}).setdefault(suffix, {})[
                    labels['resourcetype']] = value
        assert got == expected
        # Then a change the view learns from the change sequence: only the
        # changed tree is read again, and it shows.
        claim(api, {cloud['cn1']: {'VCPU': 7, 'DISK_GB': 20}})
        generation = api.get('/resource_providers/%s' % cloud['cn1'],
                             version='1.39').json['generation']
        resp = api.put('/resource_providers/%s/inventories/DISK_GB' % cloud['cn1'], {
            'resource_provider_generation': generation, 'total': 600 + step,
            'reserved': 10, 'allocation_ratio': 1.25}, version='1.39')
        assert resp.status_int == 200, resp.body
    assert scrape(exporter)['openstack_placement_resource_usage'][
        frozenset({'hostname': 'cn1', 'resourcetype': 'VCPU'}.items())] == 19


def test_generations_equal_the_apis(api, database, cloud):
    exporter = metrics.Exporter(database, [])
    for _ in range(2):
        listed = api.get('/resource_providers', version='1.39').json['resource_providers']
        # a provider without inventory has none, as with the exporter
        assert scrape(exporter)['openstack_placement_resource_generation'] == {
            frozenset({'hostname': rp['name'], 'resourcetype': rc}.items()): rp['generation']
            for rp in listed
            for rc in api.get('/resource_providers/%s/inventories' % rp['uuid'],
                              version='1.39').json['inventories']}
        claim(api, {cloud['cn2_numa0']: {'VCPU': 1}})   # moves the generation


def test_flavor_fits_and_free_capacity(api, database, cloud):
    small = flavors.parse('small: VCPU=2, MEMORY_MB=1024')
    big = flavors.parse('big: VCPU=6, MEMORY_MB=1024')
    avx = flavors.parse('avx: VCPU=1, MEMORY_MB=512, trait:HW_CPU_X86_AVX2=required')
    found = scrape(metrics.Exporter(database, [small, big, avx]))
    host = {(dict(k)['flavor'], dict(k)['hostname']): v
            for k, v in found['openstack_placement_flavor_host_fits'].items()}
    # cn1: VCPU (16-2)*4 - 5 = 51 free -> 25 of 2; MEMORY (32768-512)*1.5 - 4096
    # = 44288 -> 43 of 1024. cn2: VCPU 8 - 3 = 5 on the NUMA child -> 2;
    # MEMORY 6144 -> 6. big: VCPU 6 > max_unit 4 on cn2.
    assert host == {('small', 'cn1'): 25, ('small', 'cn2'): 2, ('small', 'empty'): 0,
                    ('big', 'cn1'): 8, ('big', 'cn2'): 0, ('big', 'empty'): 0,
                    ('avx', 'cn1'): 0, ('avx', 'cn2'): 0, ('avx', 'empty'): 0}
    total = {dict(k)['flavor']: v for k, v in found['openstack_placement_flavor_fits'].items()}
    assert total == {'small': 27, 'big': 8, 'avx': 0}
    free = {dict(k)['resourcetype']: v
            for k, v in found['openstack_placement_resource_free'].items()}
    largest = {dict(k)['resourcetype']: v
               for k, v in found['openstack_placement_resource_largest_free'].items()}
    assert free == {'VCPU': 51 + 5, 'MEMORY_MB': 44288 + 6144, 'DISK_GB': 500}
    # MEMORY on cn1: max_unit 16384 (a multiple of the step, 256)
    assert largest == {'VCPU': 51, 'MEMORY_MB': 16384, 'DISK_GB': 500}


@pytest.mark.parametrize('series', ['aggregate', 'cloud'])
def test_summed_series(api, database, cloud, series):
    agg = str(uuid.uuid4())
    resp = api.put('/resource_providers/%s/aggregates' % cloud['cn2'], {
        'aggregates': [agg], 'resource_provider_generation': 2}, version='1.19')
    assert resp.status_int == 200, resp.body
    found = scrape(metrics.Exporter(database, [], series=series))
    total = {frozenset(dict(k).items()): v
             for k, v in found['openstack_placement_resource_total'].items()}
    if series == 'cloud':
        assert total == {frozenset({'resourcetype': 'VCPU'}.items()): 24,
                         frozenset({'resourcetype': 'MEMORY_MB'}.items()): 32768 + 8192,
                         frozenset({'resourcetype': 'DISK_GB'}.items()): 500}
    else:
        # the empty aggregate label is no label (Prometheus reads them alike)
        assert total == {frozenset({'resourcetype': 'VCPU'}.items()): 16 + 8,
                         frozenset({'resourcetype': 'MEMORY_MB'}.items()): 32768,
                         frozenset({'resourcetype': 'DISK_GB'}.items()): 500,
                         frozenset({'aggregate': agg, 'resourcetype': 'MEMORY_MB'}.items()): 8192}
    ratio = {dict(k)['resourcetype']: v
             for k, v in found['openstack_placement_resource_allocation_ratio'].items()
             if dict(k).get('aggregate', '') == ''}
    if series == 'cloud':
        # (14 * 4 + 8 * 1) / 22: the capacity over what is not reserved
        assert ratio['VCPU'] == pytest.approx(64 / 22)
    assert 'openstack_placement_flavor_host_fits' not in found


def test_bound_on_hosts_falls_back_to_aggregates(api, database, cloud):
    found = scrape(metrics.Exporter(database, [], series='host', max_hosts=2))
    assert all('hostname' not in dict(k) for k in found['openstack_placement_resource_total'])


def test_a_flavor_that_says_no_flavor_is_refused():
    for text in ['nocolon', 'x: VCPU', 'x: VCPU=two', 'x: trait:FOO=forbidden', 'x: ']:
        with pytest.raises(flavors.FlavorError):
            flavors.parse(text)
    with pytest.raises(flavors.FlavorError):
        flavors.parse_all(['a: VCPU=1', 'a: VCPU=2'])
    assert flavors.parse(' m1: resources:VCPU=2,MEMORY_MB=0 ') == flavors.Flavor(
        'm1', (('VCPU', 2),))


# openstack-exporter's per-consumer series (exporters/placement.go at
# a94a54f, 2026-08-06: resource_provider_allocations, a gauge labelled
# hostname, uuid, resourcetype), behind [capacity] consumer_allocations.
ALLOCATIONS = 'openstack_placement_resource_provider_allocations'


def api_allocations(api):
    """{(hostname, consumer, class): amount} from each provider's
    allocations, as the exporter reads them."""
    seen = {}
    for rp in api.get('/resource_providers', version='1.39').json['resource_providers']:
        held = api.get('/resource_providers/%s/allocations' % rp['uuid'],
                       version='1.39').json['allocations']
        for consumer, alloc in held.items():
            for rc, amount in alloc['resources'].items():
                seen[(rp['name'], consumer, rc)] = amount
    return seen


def test_consumer_allocations_only_with_the_option(api, database, cloud):
    assert ALLOCATIONS not in scrape(metrics.Exporter(database, []))
    found = scrape(metrics.Exporter(database, [], consumer_allocations=True))
    assert {frozenset(dict(k)) for k in found[ALLOCATIONS]} == {
        frozenset({'hostname', 'uuid', 'resourcetype'})}
    # per host only: summed series have no hosts to name
    assert ALLOCATIONS not in scrape(metrics.Exporter(
        database, [], series='cloud', consumer_allocations=True))


def test_consumer_allocations_equal_the_apis(api, database, cloud):
    exporter = metrics.Exporter(database, [], consumer_allocations=True)
    moved, generation = str(uuid.uuid4()), None
    for step in range(3):
        found = {(dict(k)['hostname'], dict(k)['uuid'], dict(k)['resourcetype']): v
                 for k, v in scrape(exporter)[ALLOCATIONS].items()}
        assert found == api_allocations(api) and found, step
        # then a new consumer, one moved to another provider, one removed:
        # the view's changed trees are read again
        claim(api, {cloud['cn2']: {'MEMORY_MB': 100 + step}})
        target = cloud['cn1'] if step == 0 else cloud['cn2_numa0']
        resp = api.put('/allocations/%s' % moved, {
            'allocations': {target: {'resources': {'VCPU': 1 + step}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': generation},
            version='1.28')
        assert resp.status_int == 204, resp.body
        generation = 1 if generation is None else generation + 1
        if step == 1:
            assert api.delete('/allocations/%s' % moved).status_int == 204
            moved, generation = str(uuid.uuid4()), None

