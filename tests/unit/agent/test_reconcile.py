"""Beside nova-compute: the rules deciding what a guest's allocation is."""
import pytest

from tests.fixtures.nova_answers import Nova
from tests.fixtures.nova_answers import migration
from tests.fixtures.nova_answers import server
from tracker import nova_api
from tracker import nova_compute
from tracker import reconcile
from tracker.drivers.base import Instance

ROOT = '11111111-1111-4111-8111-111111111111'
GPU = '22222222-2222-4222-8222-222222222222'
OTHER = '33333333-3333-4333-8333-333333333333'
VM = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'
ORPHAN = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb'
MIG = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'
SIZE = {'VCPU': 2, 'MEMORY_MB': 2048}


def record(allocations, consumer_type='INSTANCE', project='p', user='u'):
    return {'allocations': {rp: {'resources': r} for rp, r in allocations.items()},
            'project_id': project, 'user_id': user, 'consumer_type': consumer_type}


def check(instances, consumers, ages=None, now=1000.0, grace=0, max_age=60, nova=None):
    return reconcile.findings(instances, consumers, {ROOT, GPU}, ROOT,
                              ages or reconcile.ConsumerAges(), orphan_grace=grace,
                              migration_max_age=max_age, now=now,
                              nova=nova_api.Moves(nova) if nova else None)


def kinds(found):
    return sorted((d.kind, d.uuid) for d in found.drift)


def guest(allocations, project='p'):
    return Instance(VM, 'vm', project, 'u', allocations)


def test_a_guest_as_placement_holds_it_is_no_finding():
    found = check([guest({ROOT: SIZE})], {VM: record({ROOT: SIZE})})
    assert found.drift == [] and found.repairs == []


@pytest.mark.parametrize('held, kind', [
    (None, 'allocation_missing'),
    ({ROOT: dict(SIZE, MEMORY_MB=1024)}, 'allocation_differs'),
    ({ROOT: SIZE}, 'allocation_device_missing'),
])
def test_a_domain_against_its_instance(held, kind):
    wanted = {ROOT: SIZE, GPU: {'VGPU': 1}}
    consumers = {VM: record(held)} if held else {}
    found = check([guest(wanted)], consumers)
    assert kinds(found) == [(kind, VM)]
    assert [(r.consumer, r.wanted) for r in found.repairs] == [(VM, wanted)]


def test_another_hosts_part_is_not_this_hosts_finding():
    found = check([guest({ROOT: SIZE})], {VM: record({ROOT: SIZE, OTHER: SIZE})})
    assert found.drift == []


def test_an_orphan_waits_for_its_grace_then_is_reported():
    ages = reconcile.ConsumerAges()
    consumers = {ORPHAN: record({ROOT: SIZE})}
    nova = Nova()                     # nova knows nothing of it: a deleted guest's
    assert check([], consumers, ages, now=1000, grace=300, nova=nova).drift == []
    assert check([], consumers, ages, now=1299, grace=300, nova=nova).drift == []
    found = check([], consumers, ages, now=1300, grace=300, nova=nova)
    assert kinds(found) == [('allocation_orphan', ORPHAN)]
    assert [(r.consumer, r.wanted) for r in found.repairs] == [(ORPHAN, {})]


def test_an_orphan_that_found_its_domain_starts_again():
    ages = reconcile.ConsumerAges()
    consumers = {ORPHAN: record({ROOT: SIZE})}
    check([], consumers, ages, now=1000, grace=300)
    check([Instance(ORPHAN, 'o', 'p', 'u', {ROOT: SIZE})], consumers, ages, now=1100)
    assert check([], consumers, ages, now=1350, grace=300).drift == []


def test_an_evacuation_leftover_is_reported_never_repaired():
    found = check([], {ORPHAN: record({ROOT: SIZE, OTHER: SIZE})}, nova=Nova())
    assert kinds(found) == [('allocation_evacuation_leftover', ORPHAN)]
    assert found.drift[0].detail['elsewhere'] == {OTHER: SIZE}
    assert found.repairs == []


def test_a_typed_migration_without_nova_is_held_then_reported_never_removed():
    ages = reconcile.ConsumerAges()
    consumers = {MIG: record({ROOT: SIZE}, 'MIGRATION')}
    found = check([], consumers, ages, now=1000, max_age=60)
    assert found.drift == [] and found.repairs == []
    assert [d.uuid for d in found.held] == [MIG]
    found = check([], consumers, ages, now=1060, max_age=60)
    assert kinds(found) == [('migration_stale', MIG)]
    assert found.repairs == []


def test_a_typed_migration_holds_no_unrelated_guest_of_its_project():
    """nova says whose migration it is: another guest of the same project
    with the same resources is not shielded by it."""
    consumers = {MIG: record({ROOT: SIZE}, 'MIGRATION'),
                 VM: record({ROOT: dict(SIZE, MEMORY_MB=1024)})}
    nova = Nova(servers={VM: server()},
                migrations=[migration(MIG, 'ffffffff-ffff-4fff-8fff-ffffffffffff')])
    found = check([guest({ROOT: SIZE})], consumers, nova=nova)
    assert kinds(found) == [('allocation_differs', VM)]
    assert [r.consumer for r in found.repairs] == [VM]
    assert [d.uuid for d in found.held] == [MIG]


def test_ages_survive_a_restart(tmp_path):
    path = str(tmp_path / 'ages.json')
    consumers = {MIG: record({ROOT: SIZE}, 'MIGRATION')}
    check([], consumers, reconcile.ConsumerAges(path), now=1000)
    found = check([], consumers, reconcile.ConsumerAges(path), now=1060)
    assert kinds(found) == [('migration_stale', MIG)]


def test_an_unreadable_ages_file_starts_again(tmp_path):
    path = tmp_path / 'ages.json'
    path.write_text('{not json')
    assert reconcile.ConsumerAges(str(path)).first_seen == {}


@pytest.mark.parametrize('name, address', [
    ('cn1_0000:81:00.0', '0000:81:00.0'),
    ('cn1_pci_0000_41_00_0', '0000:41:00.0'),
    ('cn1_NUMA0', None),
    ('cn2_0000:81:00.0', None),
])
def test_nova_child_names(name, address):
    assert nova_compute.device_address(name, 'cn1') == address


def test_compute_id(tmp_path):
    path = tmp_path / 'compute_id'
    assert nova_compute.read_compute_id(str(path)) is None
    path.write_text(ROOT.upper() + '\n')
    assert nova_compute.read_compute_id(str(path)) == ROOT
    path.write_text('host-1')
    with pytest.raises(nova_compute.NovaTreeError, match='does not hold a uuid'):
        nova_compute.read_compute_id(str(path))
