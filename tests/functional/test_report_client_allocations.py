"""The report client against a real placement: allocations and reshapes.

Like test_report_client.py, these run on our server here and on upstream
placement in tests/integration/test_report_client_upstream.py.
"""
from tests.functional.report_client_fixtures import GPU0  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import GPU1  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import NUMA1  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import ROOT  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import VM1  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import VM2  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import allocations  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import get  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import host  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import placement  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import put  # noqa: F401 (placement: fixture)
from tracker.drivers.base import Instance
from tracker.placement import errors
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.provider import stable_uuid


def test_a_provider_holding_allocations_is_kept_and_reported(placement):
    client = placement.client()
    client.sync(host())
    client.sync_allocations(ROOT, [Instance(VM1, project_id='p', user_id='u',
                                            allocations={GPU1: {'VGPU': 1}})])
    result = client.sync(host()[:2] + [host()[3]])      # NUMA1 and GPU1 gone
    assert (GPU1, 'holds allocations') in result.kept
    assert (NUMA1, 'has children that are kept') in result.kept
    assert result.errors == []        # kept on purpose, reserved (test_device_kept.py)
    assert get(placement, '/resource_providers/%s' % GPU1)['uuid'] == GPU1
    # the next sync writes nothing: GPU1 stays under NUMA1, both closed
    marker = placement.count()
    assert client.sync(host()[:2] + [host()[3]]).errors == []
    assert [m for m, _ in placement.since(marker) if m != 'GET'] == []
    assert get(placement, '/resource_providers/%s' % GPU1)['parent_provider_uuid'] == NUMA1
    inventories = get(placement, '/resource_providers/%s/inventories' % NUMA1)['inventories']
    assert all(i['reserved'] == i['total'] for i in inventories.values())

def _vcpu_in_use_then_gone(placement):
    """A synced host whose root's VCPU holds an allocation, and the same
    host without VCPU (as if the operator took it away)."""
    client = placement.client()
    client.sync(host())
    client.sync_allocations(ROOT, [Instance(VM1, project_id='p', user_id='u',
                                            allocations={ROOT: {'VCPU': 2}})])
    desired = host()
    del desired[0].inventories['VCPU']
    return client, desired


def test_removing_allocated_inventory_is_reported_not_retried(placement):
    client, desired = _vcpu_in_use_then_gone(placement)
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

def test_kept_inventory_is_not_rewritten_for_a_difference_the_diff_ignores(placement):
    """Whether the rest of an inventory changed is the diff's rule (ratios
    as floats), also when allocated classes are kept."""
    client, desired = _vcpu_in_use_then_gone(placement)
    desired[0].inventories['MEMORY_MB']['allocation_ratio'] += 1e-12
    marker = placement.count()
    result = client.sync(desired)
    assert [type(e) for e in result.errors] == [errors.InventoryInUse]
    assert [m for m, _ in placement.since(marker)] == ['PUT', 'GET']   # try, usages


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
