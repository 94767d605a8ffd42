"""Beside nova-compute: nova 34's moves as placement shows them.

nova 34 writes every consumer untyped (placement shows 'unknown'): a
migration's consumer is told from an orphan only by what the move looks
like (tracker/reconcile.py) or by asking nova's API. Each shape here is a
step of a move, on the source or the destination, with orphan_grace 0:
nothing nova holds for it may be repaired (removed or rewritten).
"""
import pytest

from tests.fixtures.nova_answers import Nova
from tests.fixtures.nova_answers import migration
from tests.fixtures.nova_answers import server
from tests.unit.agent.test_reconcile import GPU
from tests.unit.agent.test_reconcile import MIG
from tests.unit.agent.test_reconcile import ORPHAN
from tests.unit.agent.test_reconcile import OTHER
from tests.unit.agent.test_reconcile import ROOT
from tests.unit.agent.test_reconcile import SIZE
from tests.unit.agent.test_reconcile import VM
from tests.unit.agent.test_reconcile import check
from tests.unit.agent.test_reconcile import kinds
from tests.unit.agent.test_reconcile import record
from tracker.drivers.base import Instance

UNTYPED = 'unknown'
OLD = {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 20}
GROWN = {'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 40}
SHRUNK = {'VCPU': 1, 'MEMORY_MB': 1024, 'DISK_GB': 20}


def nova_record(allocations, project='p', user='u'):
    return record(allocations, UNTYPED, project, user)


def domain(allocations, uuid=VM, project='p', user='u'):
    return Instance(uuid, 'vm', project, user, allocations)


def untouched(found, *held):
    """No finding, no repair, and exactly ``held`` left alone."""
    assert found.drift == [] and found.repairs == [], [d.describe() for d in found.drift]
    assert sorted(d.uuid for d in found.held) == sorted(held)
    assert set(held) <= found.protected


ASKED = {
    'unasked': None,
    'nova': lambda: Nova(servers={VM: server('VERIFY_RESIZE')},
                         migrations=[migration(MIG, VM, 'finished')]),
}


@pytest.mark.parametrize('asked', sorted(ASKED))
@pytest.mark.parametrize('new', [GROWN, SHRUNK, OLD], ids=['up', 'down', 'same'])
@pytest.mark.parametrize('disk', [20, 40, 0], ids=['as-was', 'grown', 'not-shared'])
def test_the_source_of_a_resize_is_left_alone(asked, new, disk):
    """In flight or in VERIFY_RESIZE: the shut-off domain (its disk as the
    storage shows it), the instance holding the destination, the
    migration's consumer holding the old flavour here."""
    running = dict(OLD, DISK_GB=disk) if disk else {'VCPU': 2, 'MEMORY_MB': 2048}
    consumers = {VM: nova_record({OTHER: new}), MIG: nova_record({ROOT: OLD})}
    nova = ASKED[asked]() if ASKED[asked] else None
    untouched(check([domain({ROOT: running})], consumers, nova=nova), VM, MIG)


@pytest.mark.parametrize('asked', sorted(ASKED))
def test_the_source_of_a_live_migration_is_left_alone(asked):
    consumers = {VM: nova_record({OTHER: OLD}), MIG: nova_record({ROOT: OLD})}
    nova = Nova(servers={VM: server('MIGRATING', 'migrating')},
                migrations=[migration(MIG, VM, 'running', 'live-migration')])
    found = check([domain({ROOT: OLD})], consumers, nova=nova if asked == 'nova' else None)
    untouched(found, VM, MIG)


@pytest.mark.parametrize('state', [
    ('RESIZE', 'resize_migrating'), ('RESIZE', 'resize_finish'), ('VERIFY_RESIZE', None),
    ('REBUILD', 'rebuild_spawning'), ('SHELVED_OFFLOADED', 'spawning'),
    ('MIGRATING', 'migrating')])
def test_a_guest_arriving_before_its_domain_is_held_when_nova_says_so(state):
    """The destination: the instance's consumer holds here, no domain yet,
    long after the grace (a long disk copy, an unshelve)."""
    found = check([], {VM: nova_record({ROOT: GROWN})}, grace=0,
                  nova=Nova(servers={VM: server(*state)}))
    untouched(found, VM)


def test_a_consumer_without_domain_is_never_removed_without_nova():
    found = check([], {VM: nova_record({ROOT: GROWN})}, grace=0)
    assert kinds(found) == [('allocation_orphan', VM)]
    assert found.repairs == []
    assert 'nova\'s API' in found.drift[0].detail['not_repaired']


@pytest.mark.parametrize('status', ['ACTIVE', 'SHUTOFF', 'SHELVED_OFFLOADED', 'ERROR'])
def test_a_server_nova_knows_is_reported_not_removed(status):
    found = check([], {VM: nova_record({ROOT: OLD})}, nova=Nova(servers={VM: server(status)}))
    assert kinds(found) == [('allocation_orphan', VM)] and found.repairs == []


@pytest.mark.parametrize('status', ['confirmed', 'reverted', 'error', 'failed', 'completed'])
def test_a_migration_nova_ended_is_reported_not_removed(status):
    found = check([], {MIG: nova_record({ROOT: OLD})},
                  nova=Nova(migrations=[migration(MIG, VM, status)]))
    assert kinds(found) == [('migration_stale', MIG)] and found.repairs == []


def test_the_source_of_a_confirm_after_the_domain_went_is_held():
    """Confirm: the source's domain is destroyed before nova drops the
    migration's allocation."""
    found = check([], {MIG: nova_record({ROOT: OLD})},
                  nova=Nova(migrations=[migration(MIG, VM, 'confirming')]))
    untouched(found, MIG)


@pytest.mark.parametrize('asked', [False, True])
def test_a_resize_on_the_same_host_is_left_alone(asked):
    """Both halves here: the domain (old flavour, shut off) against its
    instance's new allocation, and the migration's consumer with the old."""
    consumers = {VM: nova_record({ROOT: GROWN}), MIG: nova_record({ROOT: OLD})}
    nova = Nova(servers={VM: server('RESIZE', 'resize_migrated')},
                migrations=[migration(MIG, VM)]) if asked else None
    untouched(check([domain({ROOT: OLD})], consumers, nova=nova), VM, MIG)


@pytest.mark.parametrize('asked', [False, True])
def test_an_evacuation_is_left_alone_on_both_hosts(asked):
    """The instance holds both hosts until the source's nova-compute
    starts and cleans up."""
    consumers = {VM: nova_record({ROOT: OLD, OTHER: OLD})}
    nova = Nova(servers={VM: server('ACTIVE')},
                migrations=[migration('eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee', VM, 'done',
                                      'evacuation')]) if asked else None
    # the destination, rebuilt: nothing to say
    assert check([domain({ROOT: OLD})], consumers, nova=nova).drift == []
    # the source, its domain gone: reported at most, never written
    found = check([], consumers, nova=nova)
    assert found.repairs == []
    assert kinds(found) == ([] if asked else [('allocation_evacuation_leftover', VM)])


def test_a_moving_guests_owner_holds_its_unexplained_consumers_without_nova():
    """Placement alone cannot say which consumer is the migration's: any
    consumer of the moving guest's owner without a domain here is held."""
    consumers = {VM: nova_record({OTHER: OLD}), MIG: nova_record({ROOT: OLD}),
                 ORPHAN: nova_record({ROOT: SIZE}, project='q')}
    found = check([domain({ROOT: OLD})], consumers)
    assert sorted(d.uuid for d in found.held) == sorted([VM, MIG])
    assert kinds(found) == [('allocation_orphan', ORPHAN)] and found.repairs == []


def test_a_deleted_guests_leftover_is_removed_when_nova_knows_nothing_of_it():
    found = check([], {ORPHAN: nova_record({ROOT: OLD})}, nova=Nova())
    assert kinds(found) == [('allocation_orphan', ORPHAN)]
    assert [(r.consumer, r.wanted) for r in found.repairs] == [(ORPHAN, {})]


def test_a_drifted_guest_is_repaired_with_placements_owner_when_the_domain_has_none():
    consumers = {VM: nova_record({ROOT: OLD}, project='proj', user='usr')}
    found = check([domain({ROOT: OLD, GPU: {'VGPU': 1}}, project=None, user=None)],
                  consumers)
    assert kinds(found) == [('allocation_device_missing', VM)]
    assert [(r.project_id, r.user_id) for r in found.repairs] == [('proj', 'usr')]


def test_a_guest_with_no_owner_anywhere_is_reported_not_written():
    found = check([domain({ROOT: OLD}, project=None, user=None)], {VM: {}})
    assert kinds(found) == [('allocation_missing', VM)] and found.repairs == []


def test_a_guest_with_no_owner_takes_novas():
    found = check([domain({ROOT: OLD}, project=None, user=None)], {VM: {}},
                  nova=Nova(servers={VM: server(project='np', user='nu')}))
    assert [(r.project_id, r.user_id) for r in found.repairs] == [('np', 'nu')]


def test_a_drifted_guest_nova_is_moving_is_held():
    consumers = {VM: nova_record({ROOT: OLD})}
    found = check([domain({ROOT: GROWN})], consumers,
                  nova=Nova(servers={VM: server('RESIZE', 'resize_prep')}))
    untouched(found, VM)


def test_nova_unreachable_writes_nothing_it_would_settle():
    class Down(Nova):
        def server(self, uuid):
            from tracker.nova_api import NovaUnavailable
            raise NovaUnavailable('503')
    found = check([], {ORPHAN: nova_record({ROOT: OLD})}, nova=Down())
    assert kinds(found) == [('allocation_orphan', ORPHAN)] and found.repairs == []


@pytest.mark.parametrize('held', [
    {ROOT: OLD, GPU: {'VGPU': 1}},          # an mdev the agent does not see
    {ROOT: GROWN},                          # more than the domain shows
    {ROOT: dict(OLD, MEMORY_MB=512), GPU: {'VGPU': 1}},   # one part up, one down
])
def test_a_repair_never_frees_what_nova_allocated(held):
    found = check([domain({ROOT: OLD})], {VM: nova_record(held)}, nova=Nova(
        servers={VM: server()}))
    assert [d.uuid for d in found.drift] == [VM] and found.repairs == []
    assert 'free' in found.drift[0].detail['not_repaired']
