"""The report client against a real placement: providers.

Every test takes ``placement``: here our server in process (PlacementDirect
on each database backend); tests/integration/test_report_client_upstream.py
runs these same functions against upstream openstack-placement.
"""
import pytest

from tests.functional.report_client_fixtures import AGG  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import GPU0  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import GPU1  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import NUMA0  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import NUMA1  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import ROOT  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import VM1  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import V  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import allocations  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import custom_trait  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import generation  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import get  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import host  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import placement  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import put  # noqa: F401 (placement: fixture)
from tracker.drivers.base import Instance
from tracker.placement import errors
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.provider import stable_uuid


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
    client.known.read_at[ROOT] -= client.known.refresh_interval   # the interval passes
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


def test_a_provider_already_in_another_tree_is_moved_into_ours(placement):
    other = placement.client()
    elsewhere = stable_uuid('other-host')
    other.sync([Provider(elsewhere, 'other-host'), Provider(GPU1, 'test-host_gpu1', elsewhere)])
    client = placement.client()
    result = client.sync(host())
    assert result.errors == []
    assert result.updated == {GPU1: ['parent', 'inventories']}
    assert client.fetch_tree(ROOT).get(GPU1).parent_uuid == NUMA1

def test_a_refused_part_does_not_block_the_providers_other_parts(placement):
    """Placement refuses the root's traits (a name it does not know): its
    inventories and aggregates, and the other providers, are still written."""
    client = placement.client()
    client.sync(host())
    desired = host()
    desired[0].traits = {'HW_NOT_A_TRAIT_ANYWHERE'}
    desired[0].aggregates = {AGG}
    desired[0].inventories['VCPU'] = inventory(32)
    desired[3].inventories['VGPU'] = inventory(6)
    result = client.sync(desired)
    assert [e.status for e in result.errors] == [400]
    assert 'traits' in str(result.errors[0])
    assert get(placement, '/resource_providers/%s/aggregates' % ROOT)['aggregates'] == [AGG]
    assert get(placement, '/resource_providers/%s/inventories' % ROOT)[
        'inventories']['VCPU']['total'] == 32
    assert get(placement, '/resource_providers/%s/inventories' % GPU0)[
        'inventories']['VGPU']['total'] == 6
    assert sorted(get(placement, '/resource_providers/%s/traits' % ROOT)['traits']) == [
        'CUSTOM_TRACKER', 'HW_CPU_X86_AVX2']
