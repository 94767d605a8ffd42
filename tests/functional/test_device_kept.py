"""A device that still holds an instance's allocation stays in placement
when it leaves the device spec or the host: reserved = total (nothing new
lands on it), the instance's allocation untouched, the audit naming it and
why; it goes with its last allocation. Each transition's writes exactly,
and the next cycle sends none."""
import json

from oslo_config import cfg
import pytest

from tests.functional.report_client_fixtures import placement  # noqa: F401 (fixture)
from tracker import audit
from tracker.drivers import facts
from tracker.drivers import layout
from tracker.drivers import options

ADDRESS = '0000:81:00.0'
GPU = layout.device_uuid('node1', ADDRESS)
ROOT = layout.root_uuid('node1')
RC = 'CUSTOM_PCI_10DE_20B5'
VM = 'a1b2c3d4-0000-4000-8000-000000000002'
SPEC = json.dumps({'vendor_id': '10de', 'product_id': '20b5'})
OTHER_SPEC = json.dumps({'vendor_id': '8086'})


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    conf.set_override('host', 'node1')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [SPEC], 'pci')
    yield conf
    conf.reset()


def discover(conf, instances=(), present=True):
    devices = [facts.PciDevice(ADDRESS, '10de', '20b5', '030200')] if present else []
    host = facts.HostFacts(hostname='node1', cpus=list(range(8)), memory_mb=16384,
                           disk_gb=100, pci_devices=devices)
    return layout.Layout(host, conf).snapshot(instances)


def cycle(client, conf, instances=(), present=True):
    snapshot = discover(conf, instances, present)
    synced = client.sync(snapshot.providers, snapshot.instances)
    allocated = client.sync_allocations(ROOT, snapshot.instances)
    assert allocated.errors == []
    return synced


def vm():
    return facts.InstanceFacts(uuid=VM, project_id='p', user_id='u', vcpus=1,
                               memory_mb=512, pci_addresses=[ADDRESS])


def writes(placement, marker):
    return sorted(s for s in placement.since(marker) if s[0] != 'GET')


def held(placement):
    body = placement.other_writer().get('/allocations/%s' % VM,
                                        microversion='1.39').json()
    return body['allocations'].get(GPU, {}).get('resources')


def gpu_inventory(placement):
    resp = placement.other_writer().get('/resource_providers/%s/inventories' % GPU,
                                        microversion='1.39')
    return resp.json()['inventories'].get(RC) if resp.status_code == 200 else None


@pytest.mark.parametrize('leaves, why', [
    ('spec', 'no longer in [pci] device_spec'),
    ('host', 'gone from the host'),
])
def test_allocated_device_kept_until_its_last_allocation_goes(
        placement, conf, leaves, why):  # noqa: F811 (fixture)
    client = placement.client()
    cycle(client, conf, [vm()])
    assert held(placement) == {RC: 1}

    # the device leaves the spec (or the host) while the instance holds it
    present = leaves != 'host'
    if leaves == 'spec':
        conf.set_override('device_spec', [OTHER_SPEC], 'pci')
    marker = placement.count()
    synced = cycle(client, conf, [vm()], present)
    # one refused DELETE, then reserved = total; the allocation untouched
    assert writes(placement, marker) == [
        ('DELETE', '/resource_providers/%s' % GPU),
        ('PUT', '/resource_providers/%s/inventories' % GPU)]
    assert synced.errors == [] and synced.deleted == []
    assert synced.kept == [(GPU, 'holds allocations')]
    assert held(placement) == {RC: 1}
    assert gpu_inventory(placement)['reserved'] == 1
    for _ in range(2):
        marker = placement.count()
        cycle(client, conf, [vm()], present)
        assert writes(placement, marker) == []

    # the audit names it and why; it is not drift
    report = audit.audit(discover(conf, [vm()], present), client)
    assert report.in_sync, report.as_text()
    assert [k.as_dict() for k in report.kept] == [{
        'uuid': GPU, 'name': 'node1_0000:81:00.0', 'address': ADDRESS,
        'reason': why, 'consumers': [VM], 'closed': True}]
    assert ('  node1_0000:81:00.0 (%s): %s, held by %s' % (ADDRESS, why, VM)
            in report.as_text().splitlines())

    # the instance goes: its allocation, then the provider
    marker = placement.count()
    cycle(client, conf, [], present)
    assert writes(placement, marker) == [('DELETE', '/allocations/%s' % VM)]
    marker = placement.count()
    synced = cycle(client, conf, [], present)
    assert writes(placement, marker) == [('DELETE', '/resource_providers/%s' % GPU)]
    assert synced.deleted == [GPU]
    assert gpu_inventory(placement) is None
    marker = placement.count()
    cycle(client, conf, [], present)
    assert writes(placement, marker) == []


def test_kept_device_back_in_the_spec(placement, conf):  # noqa: F811 (fixture)
    """Back in the spec while still held: reported as before, reserved 0."""
    client = placement.client()
    cycle(client, conf, [vm()])
    conf.set_override('device_spec', [OTHER_SPEC], 'pci')
    cycle(client, conf, [vm()])
    conf.set_override('device_spec', [SPEC], 'pci')
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert writes(placement, marker) == [
        ('PUT', '/resource_providers/%s/inventories' % GPU)]
    assert gpu_inventory(placement)['reserved'] == 0 and held(placement) == {RC: 1}
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert writes(placement, marker) == []


def test_kept_across_an_agent_restart(placement, conf):  # noqa: F811 (fixture)
    client = placement.client()
    cycle(client, conf, [vm()])
    conf.set_override('device_spec', [OTHER_SPEC], 'pci')
    cycle(client, conf, [vm()])
    # a new client knows nothing kept: one refused DELETE, nothing else
    client = placement.client()
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert writes(placement, marker) == [('DELETE', '/resource_providers/%s' % GPU)]
    assert held(placement) == {RC: 1}
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert writes(placement, marker) == []


def test_the_audit_finds_a_kept_device_still_open(placement, conf):  # noqa: F811 (fixture)
    """Out of the spec, not yet closed by a sync: drift the repair mends
    by the sync's own rule (one refused DELETE, reserved = total)."""
    client = placement.client()
    cycle(client, conf, [vm()])
    conf.set_override('device_spec', [OTHER_SPEC], 'pci')
    report = audit.audit(discover(conf, [vm()]), client, fix=True)
    assert [(d.kind, d.uuid) for d in report.drift] == [('provider_kept_open', GPU)]
    assert [(w['method'], w['path']) for w in report.writes] == [
        ('DELETE', '/resource_providers/%s' % GPU),
        ('PUT', '/resource_providers/%s/inventories' % GPU)]
    assert report.remaining == [] and report.exit_code == 0
    assert held(placement) == {RC: 1} and gpu_inventory(placement)['reserved'] == 1
