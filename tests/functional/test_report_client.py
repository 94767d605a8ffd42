"""The report client against a real placement.

Every test takes ``placement``: here our server in process (PlacementDirect
on each database backend); tests/integration/test_report_client_upstream.py
runs these same functions against upstream openstack-placement.
"""
import pytest

from placement_server.direct import PlacementDirect
from tests.functional.report_client_fixtures import Placement
from tracker.drivers.base import Instance
from tracker.placement import errors
from tracker.providers.provider import Provider, inventory, stable_uuid

V = '1.39'
ROOT = stable_uuid('test-host')
NUMA0 = stable_uuid('test-host', 'numa0')
NUMA1 = stable_uuid('test-host', 'numa1')
GPU0 = stable_uuid('test-host', 'gpu0')
GPU1 = stable_uuid('test-host', 'gpu1')
VM1 = stable_uuid('vm1')
VM2 = stable_uuid('vm2')
AGG = stable_uuid('aggregate')


@pytest.fixture
def placement(database):
    direct = PlacementDirect(database)
    with direct:
        yield Placement(direct.new_adapter, 'ours')


def host(vgpu_on_root=False, gpus=(GPU0, GPU1)):
    """A compute node with two NUMA cells and a GPU under each."""
    root = Provider(ROOT, 'test-host', inventories={
        'VCPU': inventory(16), 'MEMORY_MB': inventory(32768, reserved=512)},
        traits={'HW_CPU_X86_AVX2', 'CUSTOM_TRACKER'})
    if vgpu_on_root:
        root.inventories['VGPU'] = inventory(8)
    providers = [root, Provider(NUMA0, 'test-host_numa0', ROOT),
                 Provider(NUMA1, 'test-host_numa1', ROOT)]
    for gpu, numa in zip(gpus, (NUMA0, NUMA1)):
        gpu_provider = Provider(gpu, 'test-host_gpu%d' % (gpu == GPU1), numa)
        if not vgpu_on_root:
            gpu_provider.inventories['VGPU'] = inventory(4)
        providers.append(gpu_provider)
    return providers


def get(placement, path):
    resp = placement.other_writer().get(path, microversion=V)
    assert resp.status_code == 200, resp.text
    return resp.json()


def put(placement, path, body):
    return placement.other_writer().put(path, json=body, microversion=V)


def allocations(placement, consumer):
    """{rp: {rc: n}} of one consumer, as placement has it."""
    return {rp: a['resources'] for rp, a in
            get(placement, '/allocations/%s' % consumer)['allocations'].items()}


def custom_trait(placement, name):
    resp = placement.other_writer().put('/traits/%s' % name, microversion=V)
    assert resp.status_code in (201, 204), resp.text


def generation(placement, uuid):
    return get(placement, '/resource_providers/%s' % uuid)['generation']


def test_first_sync_writes_the_tree_and_a_second_sends_nothing(placement):
    client = placement.client()
    result = client.sync(host())
    assert result.errors == []
    assert result.created == [ROOT, NUMA0, NUMA1, GPU0, GPU1]
    tree = client.fetch_tree(ROOT)
    assert [p.uuid for p in tree.providers()] == [ROOT, NUMA0, NUMA1, GPU0, GPU1]
    assert tree.get(ROOT).inventories['MEMORY_MB'] == inventory(32768, reserved=512)
    assert tree.get(ROOT).traits == {'HW_CPU_X86_AVX2', 'CUSTOM_TRACKER'}
    assert tree.get(GPU1).parent_uuid == NUMA1
    assert tree.get(GPU1).inventories == {'VGPU': inventory(4)}

    marker = placement.count()
    result = client.sync(host())
    assert placement.since(marker) == []
    assert result.requests == 0 and not result.changed


def test_a_change_to_one_provider_sends_only_that_change(placement):
    client = placement.client()
    client.sync(host())
    desired = host()
    desired[3].inventories['VGPU'] = inventory(6)
    marker = placement.count()
    result = client.sync(desired)
    assert placement.since(marker) == [('PUT', '/resource_providers/%s/inventories' % GPU0)]
    assert result.updated == {GPU0: ['inventories']}

    desired[0].traits.add('HW_CPU_X86_SSE42')
    marker = placement.count()
    client.sync(desired)
    assert placement.since(marker) == [('PUT', '/resource_providers/%s/traits' % ROOT)]
    assert set(get(placement, '/resource_providers/%s/traits' % ROOT)['traits']) == {
        'HW_CPU_X86_AVX2', 'CUSTOM_TRACKER', 'HW_CPU_X86_SSE42'}


def test_another_writer_bumps_generations_and_the_client_converges(placement):
    client = placement.client()
    client.sync(host())
    # behind the client's back: a trait on the root, a new inventory total
    # on a GPU, each bumping that provider's generation
    gen = generation(placement, ROOT)
    assert put(placement, '/resource_providers/%s/traits' % ROOT, {
        'resource_provider_generation': gen,
        'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_TRACKER', 'COMPUTE_STATUS_DISABLED']}
    ).status_code == 200
    gen = generation(placement, GPU0)
    assert put(placement, '/resource_providers/%s/inventories' % GPU0, {
        'resource_provider_generation': gen,
        'inventories': {'VGPU': {'total': 1}}}).status_code == 200

    desired = host()
    desired[0].inventories['VCPU'] = inventory(24)
    desired[3].inventories['VGPU'] = inventory(5)
    result = client.sync(desired)
    assert result.errors == []
    assert result.conflicts == 2
    tree = client.fetch_tree(ROOT)
    assert tree.get(ROOT).inventories['VCPU'] == inventory(24)
    assert tree.get(GPU0).inventories['VGPU'] == inventory(5)
    # the other writer's trait is theirs: kept
    assert 'COMPUTE_STATUS_DISABLED' in tree.get(ROOT).traits
    # and now the client knows the generations again: steady state
    marker = placement.count()
    assert client.sync(desired).requests == 0
    assert placement.since(marker) == []


def test_conflicts_are_retried_a_bounded_number_of_times(placement):
    client = placement.client()
    client.sync(host())
    writer = placement.other_writer()
    bumps = []
    custom_trait(placement, 'CUSTOM_RACE')

    def bump_root():
        bumps.append(1)      # a different trait set each time: a real change
        resp = writer.put('/resource_providers/%s/traits' % ROOT, microversion=V, json={
            'resource_provider_generation': generation(placement, ROOT),
            'traits': ['HW_CPU_X86_AVX2', 'CUSTOM_TRACKER'] + ['CUSTOM_RACE'] * (len(bumps) % 2)})
        assert resp.status_code == 200, resp.text

    def race(response, *args, **kwargs):
        # each time the client has reread the root, someone writes it again
        if response.request.url.endswith('/resource_providers/%s/aggregates' % ROOT):
            bump_root()
    client.http.adapter.session.session.hooks['response'].append(race)
    bump_root()
    desired = host()
    desired[0].inventories['VCPU'] = inventory(4)
    result = client.sync(desired)
    assert [type(e) for e in result.errors] == [errors.GenerationConflict]
    assert result.conflicts == client.conflict_retries + 1
    assert get(placement, '/resource_providers/%s/inventories'
               % ROOT)['inventories']['VCPU']['total'] == 16


def test_providers_gone_from_the_host_are_deleted_children_first(placement):
    client = placement.client()
    client.sync(host())
    desired = host()[:2] + [host()[3]]       # NUMA1 and GPU1 are gone
    result = client.sync(desired)
    assert result.deleted == [GPU1, NUMA1]
    listed = get(placement, '/resource_providers?in_tree=%s' % ROOT)['resource_providers']
    assert sorted(p['uuid'] for p in listed) == sorted([ROOT, NUMA0, GPU0])


def test_a_provider_holding_allocations_is_kept_and_reported(placement):
    client = placement.client()
    client.sync(host())
    client.sync_allocations(ROOT, [Instance(VM1, project_id='p', user_id='u',
                                            allocations={GPU1: {'VGPU': 1}})])
    result = client.sync(host()[:2] + [host()[3]])      # NUMA1 and GPU1 gone
    assert (GPU1, 'holds allocations') in result.kept
    assert (NUMA1, 'has children that are kept') in result.kept
    assert [type(e) for e in result.errors] == [errors.ProviderInUse]
    assert get(placement, '/resource_providers/%s' % GPU1)['uuid'] == GPU1


def test_removing_allocated_inventory_is_reported_not_retried(placement):
    client = placement.client()
    client.sync(host())
    client.sync_allocations(ROOT, [Instance(VM1, project_id='p', user_id='u',
                                            allocations={ROOT: {'VCPU': 2}})])
    desired = host()
    del desired[0].inventories['VCPU']
    desired[0].inventories['MEMORY_MB'] = inventory(16384)
    marker = placement.count()
    result = client.sync(desired)
    [err] = result.errors
    assert isinstance(err, errors.InventoryInUse)
    assert err.resource_classes == {'VCPU'} and 'VCPU=2' in str(err)
    assert len(placement.since(marker)) <= 4, placement.since(marker)   # try, usages, the rest
    inventories = get(placement, '/resource_providers/%s/inventories' % ROOT)['inventories']
    assert inventories['VCPU']['total'] == 16        # kept
    assert inventories['MEMORY_MB']['total'] == 16384  # the rest was written
    # while the allocation stays, each sync tries once and reports again
    marker = placement.count()
    result = client.sync(desired)
    assert [type(e) for e in result.errors] == [errors.InventoryInUse]
    assert result.updated == {}
    assert [m for m, _ in placement.since(marker)] == ['PUT', 'GET']


def test_reshape_moves_vgpu_and_its_allocations_in_one_post(placement):
    client = placement.client()
    client.sync(host(vgpu_on_root=True))
    vms = [Instance(VM1, project_id='p', user_id='u',
                    allocations={ROOT: {'VCPU': 2, 'VGPU': 1}}),
           Instance(VM2, project_id='p', user_id='u',
                    allocations={ROOT: {'VCPU': 1, 'VGPU': 2}})]
    assert client.sync_allocations(ROOT, vms).errors == []

    marker = placement.count()
    # the host now sees VM2's vGPUs on GPU1
    moved = [Instance(VM1, project_id='p', user_id='u',
                      allocations={ROOT: {'VCPU': 2}, GPU0: {'VGPU': 1}}),
             Instance(VM2, project_id='p', user_id='u',
                      allocations={ROOT: {'VCPU': 1}, GPU1: {'VGPU': 2}})]
    result = client.sync(host(), instances=moved)
    assert result.errors == [] and result.reshaped
    posts = [s for s in placement.since(marker) if s[0] == 'POST']
    assert posts == [('POST', '/reshaper')]
    root_inv = get(placement, '/resource_providers/%s/inventories' % ROOT)['inventories']
    assert 'VGPU' not in root_inv
    assert allocations(placement, VM1) == {ROOT: {'VCPU': 2}, GPU0: {'VGPU': 1}}
    assert allocations(placement, VM2) == {ROOT: {'VCPU': 1}, GPU1: {'VGPU': 2}}
    assert client.sync(host()).requests == 0
    # the reshape already put the allocations where the host sees them
    marker = placement.count()
    assert client.sync_allocations(ROOT, moved).errors == []
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []


def test_allocations_are_written_once_and_orphans_removed(placement):
    client = placement.client()
    client.sync(host())
    vm1 = Instance(VM1, project_id='p', user_id='u', allocations={ROOT: {'VCPU': 2}})
    vm2 = Instance(VM2, project_id='p', user_id='u', allocations={GPU0: {'VGPU': 1}})
    result = client.sync_allocations(ROOT, [vm1, vm2])
    assert sorted(result.created) == sorted([VM1, VM2]) and result.errors == []
    marker = placement.count()
    assert client.sync_allocations(ROOT, [vm1, vm2]).requests == 0
    assert placement.since(marker) == []

    vm1.allocations = {ROOT: {'VCPU': 4, 'MEMORY_MB': 1024}}
    result = client.sync_allocations(ROOT, [vm1], authoritative=False)
    assert result.updated == [VM1] and result.deleted == []
    assert placement.since(marker) == [('PUT', '/allocations/%s' % VM1)]
    result = client.sync_allocations(ROOT, [vm1])
    assert result.deleted == [VM2]
    assert allocations(placement, VM2) == {}
    records = client.get_allocations_for_tree(ROOT)
    assert set(records) == {VM1}
    assert records[VM1]['allocations'] == {ROOT: {'resources': {'VCPU': 4, 'MEMORY_MB': 1024}}}
    assert records[VM1]['project_id'] == 'p' and records[VM1]['consumer_generation'] == 2


def test_allocations_outside_the_tree_are_left_alone(placement):
    client = placement.client()
    client.sync(host())
    other = placement.client()
    shared = stable_uuid('shared-disk')
    other.sync([Provider(shared, 'shared-disk', inventories={'DISK_GB': inventory(100)})])
    client.put_allocations(VM1, {ROOT: {'VCPU': 1}, shared: {'DISK_GB': 10}}, 'p', 'u')
    # the host no longer runs VM1: only its part in the tree goes
    result = client.sync_allocations(ROOT, [])
    assert result.deleted == [VM1]
    assert allocations(placement, VM1) == {shared: {'DISK_GB': 10}}


def test_a_consumer_changed_behind_the_client_converges(placement):
    client = placement.client()
    client.sync(host())
    vm1 = Instance(VM1, project_id='p', user_id='u', allocations={ROOT: {'VCPU': 2}})
    client.sync_allocations(ROOT, [vm1])
    current = get(placement, '/allocations/%s' % VM1)
    assert put(placement, '/allocations/%s' % VM1, {
        'allocations': {ROOT: {'resources': {'VCPU': 3}}}, 'project_id': 'p',
        'user_id': 'u', 'consumer_generation': current['consumer_generation'],
        'consumer_type': 'INSTANCE'}).status_code == 204
    vm1.allocations = {ROOT: {'VCPU': 1}}
    result = client.sync_allocations(ROOT, [vm1])
    assert result.errors == [] and result.conflicts == 1
    assert allocations(placement, VM1) == {ROOT: {'VCPU': 1}}


def test_aggregates_by_host_name_survive_later_syncs(placement):
    client = placement.client()
    client.sync(host())
    assert client.aggregate_add_host(AGG, 'test-host') is True
    assert get(placement, '/resource_providers/%s/aggregates' % ROOT)['aggregates'] == [AGG]
    marker = placement.count()
    desired = host()
    desired[0].inventories['VCPU'] = inventory(20)
    assert client.sync(desired).errors == []
    assert get(placement, '/resource_providers/%s/aggregates' % ROOT)['aggregates'] == [AGG]
    assert ('PUT', '/resource_providers/%s/aggregates' % ROOT) not in placement.since(marker)
    assert client.aggregate_remove_host(AGG, 'test-host') is True
    assert get(placement, '/resource_providers/%s/aggregates' % ROOT)['aggregates'] == []
    assert client.aggregate_add_host(AGG, 'no-such-host') is False


def test_tracker_owned_traits_go_when_the_host_drops_them(placement):
    client = placement.client()
    client.sync(host())
    desired = host()
    desired[0].traits.discard('CUSTOM_TRACKER')
    desired[1].aggregates = {AGG}
    assert client.sync(desired).updated == {ROOT: ['traits'], NUMA0: ['aggregates']}
    assert get(placement, '/resource_providers/%s/traits' % ROOT)['traits'] == [
        'HW_CPU_X86_AVX2']
    assert get(placement, '/resource_providers/%s/aggregates' % NUMA0)['aggregates'] == [AGG]


def test_a_name_taken_by_another_provider_is_reported(placement):
    other = placement.client()
    other.sync([Provider(stable_uuid('someone else'), 'test-host_numa1')])
    client = placement.client()
    result = client.sync(host())
    assert [type(e) for e in result.errors] == [errors.DuplicateProviderName]
    assert result.created == [ROOT, NUMA0, GPU0]     # GPU1 sits under NUMA1


def test_renamed_and_reparented_providers(placement):
    client = placement.client()
    client.sync(host())
    desired = host()
    desired[3].name = 'test-host_gpu0_renamed'
    desired[4].parent_uuid = NUMA0
    result = client.sync(desired)
    assert result.errors == []
    assert result.updated == {GPU0: ['name'], GPU1: ['parent']}
    tree = client.fetch_tree(ROOT)
    assert tree.get(GPU0).name == 'test-host_gpu0_renamed'
    assert tree.get(GPU1).parent_uuid == NUMA0


@pytest.mark.parametrize('version', ['1.14', '1.26'])
def test_an_older_microversion_still_syncs(placement, version):
    client = placement.client(microversion=version)
    assert client.microversion == version
    assert client.sync(host(vgpu_on_root=True)).errors == []
    assert client.sync(host(vgpu_on_root=True)).requests == 0
    vm1 = Instance(VM1, project_id='p', user_id='u', allocations={ROOT: {'VGPU': 1}})
    assert client.sync_allocations(ROOT, [vm1]).errors == []
    assert client.aggregate_add_host(AGG, 'test-host') is True
    result = client.sync(host())     # a reshape is needed: none before 1.30
    assert errors.ReshapeUnsupported in [type(e) for e in result.errors]
    assert 'VGPU' in get(placement, '/resource_providers/%s/inventories'
                         % ROOT)['inventories']
    assert allocations(placement, VM1) == {ROOT: {'VGPU': 1}}


def test_associations_written_by_others_are_refreshed_on_the_interval(placement):
    client = placement.client()
    client.sync(host())
    custom_trait(placement, 'CUSTOM_FROM_OPERATOR')
    assert put(placement, '/resource_providers/%s/traits' % NUMA0, {
        'resource_provider_generation': generation(placement, NUMA0),
        'traits': ['CUSTOM_FROM_OPERATOR']}).status_code == 200
    marker = placement.count()
    client.sync(host())
    assert placement.since(marker) == []        # not due yet: nothing read
    client._fetched[ROOT] -= client.refresh_interval   # the interval passes
    result = client.sync(host())
    assert result.errors == [] and not result.changed
    # one listing, and a reread of the one provider whose generation moved
    assert placement.since(marker) == [('GET', '/resource_providers')] + [
        ('GET', '/resource_providers/%s/%s' % (NUMA0, part))
        for part in ('inventories', 'traits', 'aggregates')]
    assert client.fetch_tree(ROOT).get(NUMA0).traits == {'CUSTOM_FROM_OPERATOR'}


def test_sharing_providers_of_the_hosts_aggregates_are_learnt(placement):
    client = placement.client()
    desired = host()
    desired[0].aggregates = {AGG}
    client.sync(desired)
    shared = stable_uuid('shared-disk')
    other = placement.client()
    other.sync([Provider(shared, 'shared-disk', inventories={'DISK_GB': inventory(100)},
                         traits={'MISC_SHARES_VIA_AGGREGATE'}, aggregates={AGG})])
    assert client.sharing_providers(ROOT) == []       # not reread yet
    client.fetch_tree(ROOT)
    assert [p.uuid for p in client.sharing_providers(ROOT)] == [shared]


def test_converges_while_another_writer_races_in_a_thread(placement):
    import threading
    client = placement.client()
    client.sync(host())
    custom_trait(placement, 'CUSTOM_RACE')
    writer = placement.other_writer()
    stop = threading.Event()
    written = []

    def race():
        while not stop.is_set():
            gen = generation(placement, ROOT)
            traits = ['HW_CPU_X86_AVX2', 'CUSTOM_TRACKER'] + ['CUSTOM_RACE'] * (len(written) % 2)
            resp = writer.put('/resource_providers/%s/traits' % ROOT, microversion=V,
                              json={'resource_provider_generation': gen, 'traits': traits})
            if resp.status_code == 200:
                written.append(traits)
    thread = threading.Thread(target=race)
    thread.start()
    desired = host()
    import time
    deadline = time.monotonic() + 60
    try:
        total = 16
        # keep changing the host until the other writer got in 10 times
        while (len(written) < 10 or total < 26) and time.monotonic() < deadline:
            total += 1
            desired[0].inventories['VCPU'] = inventory(total)
            client.sync(desired)
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join()
    result = client.sync(desired)      # the race is over: one sync converges
    assert result.errors == []
    tree = client.fetch_tree(ROOT)
    assert tree.get(ROOT).inventories['VCPU'] == inventory(total)
    assert len(written) >= 10 and tree.get(ROOT).traits == set(written[-1])
    assert client.sync(desired).requests == 0


def test_a_device_replaced_under_the_same_name(placement):
    client = placement.client()
    client.sync(host())
    new_gpu = stable_uuid('test-host', 'gpu0', 'replaced')
    result = client.sync(host(gpus=(new_gpu, GPU1)))
    assert result.errors == []
    assert result.deleted == [GPU0] and result.created == [new_gpu]
    tree = client.fetch_tree(ROOT)
    assert tree.get('test-host_gpu0').uuid == new_gpu
    assert tree.get(new_gpu).inventories == {'VGPU': inventory(4)}


def test_reshape_folds_gone_children_back_into_the_root(placement):
    client = placement.client()
    client.sync(host())
    vm1 = Instance(VM1, project_id='p', user_id='u', allocations={GPU1: {'VGPU': 3}})
    assert client.sync_allocations(ROOT, [vm1]).errors == []
    folded = [p for p in host(vgpu_on_root=True) if p.uuid not in (GPU0, GPU1)]
    result = client.sync(folded)
    assert result.errors == [] and result.reshaped
    assert sorted(result.deleted) == sorted([GPU0, GPU1])
    assert allocations(placement, VM1) == {ROOT: {'VGPU': 3}}
    assert client.sync(folded).requests == 0


def test_a_restarted_agent_reads_placement_and_writes_nothing(placement):
    first = placement.client()
    first.sync(host())
    vm1 = Instance(VM1, project_id='p', user_id='u', allocations={ROOT: {'VCPU': 2}})
    first.sync_allocations(ROOT, [vm1])
    restarted = placement.client()
    marker = placement.count()
    result = restarted.sync(host())
    allocated = restarted.sync_allocations(ROOT, [vm1])
    assert not result.changed and result.errors == []
    assert allocated.created == allocated.updated == allocated.deleted == []
    assert restarted.writes == 0
    assert {method for method, _ in placement.since(marker)} == {'GET'}
