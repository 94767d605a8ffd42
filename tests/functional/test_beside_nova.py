"""Beside nova-compute, with libvirt's test driver (tests/libvirt/host-devices.xml:
PCI passthrough and an mdev, shapes a TCG guest cannot have) and our
placement in process holding what nova would have written: its root (the
compute_id uuid, libvirt's hostname), a child per PCI device
(``<root>_<address>``, nova's own class) and per GPU
(``<root>_pci_0000_41_00_0``), with placement's uuids, and its consumers
written as nova 34 writes them: at microversion 1.36, untyped (placement
shows 'unknown'), moves by POST /allocations from the instance to the
migration's uuid.
"""
import json
import os
import uuid as uuidlib

import libvirt
from oslo_config import cfg
import pytest

from tests.fixtures.nova_answers import Nova
from tests.fixtures.nova_answers import server
from tests.functional.report_client_fixtures import placement  # noqa: F401 (every engine)
from tracker import agent as agent_mod
from tracker import conf as tracker_conf
from tracker.drivers.libvirt import LibvirtDriver
from tracker.placement.client import ReportClient

HOST_XML = os.path.join(os.path.dirname(__file__), os.pardir, 'libvirt', 'host-devices.xml')
URI = 'test://' + os.path.abspath(HOST_XML)
V = '1.39'
NOVA_V = '1.36'     # nova 34's report client: no consumer types
NOVA_ROOT = str(uuidlib.uuid4())
NIC, NVME, GPU1, GPU2, OTHER = (str(uuidlib.uuid4()) for _ in range(5))
PROJECT = '7e9f1a2b3c4d4e5f8a9b0c1d2e3f4a5b'
USER = 'a0e4d2c4f3b84f5c9a5e0d1f2b3c4d5e'
LOCAL, VOLUME, PCI, MDEV = ('a1b2c3d4-0000-4000-8000-00000000000%d' % n for n in (1, 2, 3, 4))
NVME_CLASS = 'CUSTOM_PCI_144D_A808'    # nova's name for the drive's class




@pytest.fixture
def conf(tmp_path):
    nova_state = tmp_path / 'nova'
    nova_state.mkdir()
    (nova_state / 'compute_id').write_text(NOVA_ROOT + '\n')
    conf = tracker_conf.load([], conf=cfg.ConfigOpts())
    for name, value, group in (
            ('connection_uri', URI, 'libvirt'), ('driver', 'libvirt', 'tracker'),
            ('images_pool', 'instances', 'tracker'), ('host', 'node1', None),
            ('state_path', str(nova_state), None),
            ('state_path', str(tmp_path), 'tracker'),
            ('orphan_grace', 0, 'tracker'), ('notifications', False, 'tracker'),
            ('report_in_placement', True, 'pci'),
            ('device_spec', [json.dumps({'vendor_id': '8086', 'product_id': '1515'}),
                             json.dumps({'vendor_id': '144d'})], 'pci'),
            ('enabled_mdev_types', ['nvidia-222'], 'devices')):
        conf.set_override(name, value, group)
    return conf


def call(placement, method, path, body=None, version=V):
    resp = placement.other_writer().request(path, method, json=body, microversion=version)
    assert resp.status_code < 300, resp.text
    return resp


def provider(placement, uuid, name, inventories, parent=None):
    body = {'uuid': uuid, 'name': name}
    if parent:
        body['parent_provider_uuid'] = parent
    call(placement, 'POST', '/resource_providers', body)
    if NVME_CLASS in inventories:
        call(placement, 'PUT', '/resource_classes/%s' % NVME_CLASS)
    call(placement, 'PUT', '/resource_providers/%s/inventories' % uuid, {
        'resource_provider_generation': 0,
        'inventories': {rc: {'total': n} for rc, n in inventories.items()}})


def consumer(placement, uuid, allocations):
    """As nova 34's report client claims: 1.36, no consumer_type."""
    call(placement, 'PUT', '/allocations/%s' % uuid, {
        'allocations': {rp: {'resources': r} for rp, r in allocations.items()},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': None},
        version=NOVA_V)


def move(placement, source, target, target_allocations):
    """nova's move_allocations: the source's allocation to ``target`` (the
    migration's uuid), ``source`` given ``target_allocations``."""
    held = record(placement, source)
    call(placement, 'POST', '/allocations', {
        target: {'allocations': held['allocations'], 'project_id': PROJECT,
                 'user_id': USER, 'consumer_generation': None},
        source: {'allocations': {rp: {'resources': r}
                                 for rp, r in target_allocations.items()},
                 'project_id': PROJECT, 'user_id': USER,
                 'consumer_generation': held['consumer_generation']}}, version=NOVA_V)


def record(placement, uuid):
    return call(placement, 'GET', '/allocations/%s' % uuid).json()


def allocations(placement, uuid):
    return {rp: a['resources'] for rp, a in record(placement, uuid)['allocations'].items()}


ROOT_PART = {
    LOCAL: {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 26},
    VOLUME: {'VCPU': 4, 'MEMORY_MB': 4096},
    PCI: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10},
    MDEV: {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 11},
}


@pytest.fixture
def nova_host(placement):
    """nova's tree and its guests' allocations, the PCI guest's NVMe drive
    and the mdev guest's vGPU left out (nova's heal_allocations cannot
    put them back)."""
    name = libvirt.open(URI).getHostname()
    provider(placement, NOVA_ROOT, name,
             {'VCPU': 64, 'MEMORY_MB': 32768, 'DISK_GB': 100})
    provider(placement, NIC, name + '_0000:81:00.0', {'SRIOV_NET_VF': 4}, NOVA_ROOT)
    provider(placement, NVME, name + '_0000:05:00.0', {NVME_CLASS: 1}, NOVA_ROOT)
    provider(placement, GPU1, name + '_pci_0000_41_00_0', {'VGPU': 16}, NOVA_ROOT)
    provider(placement, GPU2, name + '_pci_0000_42_00_0', {'VGPU': 16}, NOVA_ROOT)
    provider(placement, OTHER, 'other-compute',
             {'VCPU': 64, 'MEMORY_MB': 32768, 'DISK_GB': 100})
    for guest in (LOCAL, VOLUME):
        consumer(placement, guest, {NOVA_ROOT: ROOT_PART[guest]})
    consumer(placement, PCI, {NOVA_ROOT: ROOT_PART[PCI], NIC: {'SRIOV_NET_VF': 2}})
    consumer(placement, MDEV, {NOVA_ROOT: ROOT_PART[MDEV]})
    return name


def agent_for(conf, placement):
    return agent_mod.Agent(conf, driver=LibvirtDriver(conf),
                           client=ReportClient(adapter=placement.adapter()))


def writes(placement, since):
    return [(m, p) for m, p in placement.since(since) if m != 'GET']


def test_device_allocations_nova_left_out_are_found_and_only_they_repaired(
        conf, placement, nova_host):
    agent = agent_for(conf, placement)
    marker = placement.count()
    report = agent.audit(dry_run=True)
    assert agent.compute_node == NOVA_ROOT
    assert report.host == nova_host
    assert sorted((d.kind, d.uuid) for d in report.drift) == [
        ('allocation_device_missing', PCI), ('allocation_device_missing', MDEV)]
    pci = next(d for d in report.drift if d.uuid == PCI)
    assert pci.detail['host'][NVME] == {NVME_CLASS: 1}
    assert sorted((w['method'], w['path']) for w in report.writes) == [
        ('PUT', '/allocations/' + PCI), ('PUT', '/allocations/' + MDEV)]
    assert writes(placement, marker) == []           # a dry run writes nothing
    dry = report

    report = agent.audit(fix=True)
    assert report.fixed and report.remaining == [] and report.exit_code == 0
    assert sorted(writes(placement, marker)) == [
        ('PUT', '/allocations/' + PCI), ('PUT', '/allocations/' + MDEV)]
    # the dry run listed what the repair sent, in order, bodies included
    assert dry.writes == report.writes
    assert dry.written == report.written
    assert [(w.method, w.path) for w in dry.written] == writes(placement, marker)
    assert allocations(placement, PCI) == {
        NOVA_ROOT: ROOT_PART[PCI], NIC: {'SRIOV_NET_VF': 2}, NVME: {NVME_CLASS: 1}}
    assert allocations(placement, MDEV) == {NOVA_ROOT: ROOT_PART[MDEV],
                                            GPU1: {'VGPU': 1}}
    for guest in (PCI, MDEV):       # still as nova wrote them: untyped, one write
        assert record(placement, guest)['consumer_type'] == 'unknown'
        assert record(placement, guest)['consumer_generation'] == 2
        assert (record(placement, guest)['project_id'],
                record(placement, guest)['user_id']) == (PROJECT, USER)

    marker = placement.count()
    result = agent.run_cycle()
    assert result.ok and result.writes == 0, result.summary()
    assert writes(placement, marker) == []
    assert 'tracker_allocation_findings{kind="allocation_device_missing"} 0.0' \
        in agent.metrics.exposition()


def test_the_daemon_reports_and_repairs_only_when_configured(conf, placement, nova_host):
    agent = agent_for(conf, placement)
    marker = placement.count()
    result = agent.run_cycle()
    assert result.ok, result.summary()
    assert writes(placement, marker) == []
    assert sorted(event for event, _ in result.changes) == [
        'tracker.allocation.finding'] * 2
    assert 'tracker_allocation_findings{kind="allocation_device_missing"} 2.0' \
        in agent.metrics.exposition()
    assert agent.run_cycle().changes == []       # each finding is told once

    conf.set_override('repair_allocations', True, 'tracker')
    result = agent.run_cycle()
    assert result.ok, result.summary()
    assert sorted(writes(placement, marker)) == [
        ('PUT', '/allocations/' + PCI), ('PUT', '/allocations/' + MDEV)]
    assert sorted(event for event, _ in result.changes) == [
        'tracker.allocation.update'] * 2
    marker = placement.count()
    assert agent.run_cycle().writes == 0
    assert writes(placement, marker) == []


def test_beside_without_compute_id_is_a_clear_error(conf, placement, tmp_path):
    conf.set_override('state_path', str(tmp_path / 'elsewhere'))
    conf.set_override('nova_compute', 'beside', 'tracker')
    with pytest.raises(Exception, match='compute_id does not exist'):
        agent_for(conf, placement).audit()


def test_absent_ignores_compute_id(conf, placement, nova_host):
    conf.set_override('nova_compute', 'absent', 'tracker')
    agent = agent_for(conf, placement)
    agent.audit()
    assert agent.compute_node is None


def test_a_repair_never_touches_a_consumer_a_migration_holds(conf, placement, nova_host):
    agent = agent_for(conf, placement)
    agent.audit()                      # reads nova's tree and its consumers
    marker = placement.count()
    result = agent.client.repair_allocations(
        NOVA_ROOT, [(MDEV, {NOVA_ROOT: ROOT_PART[MDEV], GPU1: {'VGPU': 1}}, None, None)],
        protected={MDEV})
    assert result.kept == [(MDEV, 'a migration is in flight')]
    assert writes(placement, marker) == []


MIGRATION = str(uuidlib.uuid4())
INCOMING = str(uuidlib.uuid4())
RESIZED = {'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 40}


def settled(conf, placement):
    """An agent whose host is in sync (nova's left-out device parts repaired)."""
    agent = agent_for(conf, placement)
    assert agent.audit(fix=True).exit_code == 0
    return agent


def quiet_over_cycles(agent, placement, cycles=3):
    """The audit (--dry-run, --fix) and the repairing daemon write nothing."""
    marker = placement.count()
    for fix in (False, True):
        report = agent.audit(dry_run=not fix, fix=fix)
        assert report.drift == [] and report.writes == [], report.as_text()
    agent.conf.set_override('repair_allocations', True, 'tracker')
    for _ in range(cycles):
        result = agent.run_cycle()
        assert result.ok and result.writes == 0, result.summary()
    assert writes(placement, marker) == []
    return report


def test_the_source_of_a_resize_is_never_written(conf, placement, nova_host):
    """nova's resize of LOCAL to another host, in flight or in
    VERIFY_RESIZE: LOCAL's domain stays here (shut off), its instance holds
    the new flavour there, the migration's consumer the old one here."""
    agent = settled(conf, placement)
    move(placement, LOCAL, MIGRATION, {OTHER: RESIZED})
    report = quiet_over_cycles(agent, placement)
    assert sorted(d.uuid for d in report.held) == sorted([LOCAL, MIGRATION])
    assert allocations(placement, MIGRATION) == {NOVA_ROOT: ROOT_PART[LOCAL]}
    assert allocations(placement, LOCAL) == {OTHER: RESIZED}


def test_a_guest_arriving_before_its_domain_is_never_written(conf, placement, nova_host):
    """The destination of a move, long past the grace: the instance's
    consumer holds here, no domain yet. Reported (nova's API not asked),
    never removed."""
    agent = settled(conf, placement)
    consumer(placement, INCOMING, {NOVA_ROOT: RESIZED})
    marker = placement.count()
    report = agent.audit(fix=True)
    assert [(d.kind, d.uuid) for d in report.drift] == [('allocation_orphan', INCOMING)]
    assert report.writes == [] and writes(placement, marker) == []
    assert allocations(placement, INCOMING) == {NOVA_ROOT: RESIZED}
    # the repairing daemon writes nothing either, and tells the finding once
    agent.conf.set_override('repair_allocations', True, 'tracker')
    assert [e for e, _ in agent.run_cycle().changes] == ['tracker.allocation.finding']
    assert agent.run_cycle().changes == []
    assert writes(placement, marker) == []
    # with nova's API saying it is arriving: held, not even reported
    agent.nova = Nova(servers={INCOMING: server('RESIZE', 'resize_migrated')})
    report = quiet_over_cycles(agent, placement)
    assert [d.uuid for d in report.held] == [INCOMING]


def test_a_leftover_nova_knows_nothing_of_is_removed_by_its_generation(
        conf, placement, nova_host):
    agent = settled(conf, placement)
    consumer(placement, INCOMING, {NOVA_ROOT: RESIZED})
    agent.nova = Nova()
    marker = placement.count()
    report = agent.audit(fix=True)
    assert [(d.kind, d.uuid) for d in report.drift] == [('allocation_orphan', INCOMING)]
    assert report.errors == [] and report.remaining == []
    assert [(w.method, w.path, w.body['allocations'], w.body['consumer_generation'])
            for w in report.written] == [('PUT', '/allocations/' + INCOMING, {}, 1)]
    assert writes(placement, marker) == [('PUT', '/allocations/' + INCOMING)]
    assert allocations(placement, INCOMING) == {}


def test_a_drained_device_is_only_reported(conf, placement, nova_host):
    """nova owns the device's provider: a drain (by hand here; a health
    source writes the same file) is an audit finding, a metric and a
    notification, never a write."""
    from tracker.drivers import drains
    agent = agent_for(conf, placement)
    agent.run_cycle()
    drains.save(conf.tracker.state_path, 'node1', {'0000:05:00.0': 'AER fatal errors'})
    marker = placement.count()
    result = agent.run_cycle()
    assert result.ok and writes(placement, marker) == [], result.summary()
    drained = [(e, p['tracker_object.data']) for e, p in result.changes
               if e.startswith('tracker.device.')]
    assert drained == [('tracker.device.drain', {
        'host': 'node1', 'address': '0000:05:00.0', 'reason': 'AER fatal errors'})]
    assert ('tracker_device_drained{address="0000:05:00.0",reason="AER fatal errors"} 1.0'
            in agent.metrics.exposition().splitlines())
    report = agent.audit()
    assert report.drained == {'0000:05:00.0': 'AER fatal errors'}
    assert '  0000:05:00.0: AER fatal errors' in report.as_text().splitlines()
    assert writes(placement, marker) == []
    assert [e for e, _ in agent.run_cycle().changes if e.startswith('tracker.device.')] == []

    drains.save(conf.tracker.state_path, 'node1', {})
    result = agent.run_cycle()
    assert [(e, p['tracker_object.data']['address']) for e, p in result.changes
            if e.startswith('tracker.device.')] == [('tracker.device.undrain', '0000:05:00.0')]
    assert agent.run_cycle().changes == []
    assert writes(placement, marker) == []
    assert 'tracker_device_drained{' not in agent.metrics.exposition()
