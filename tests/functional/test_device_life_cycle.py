"""A one-time-use PCI device through its life, agent cycle by cycle.

The host's facts go through the layout (as either driver's do) and the
report client writes them to our placement (every database backend):
each transition's writes are listed exactly, allocations are written
only by the allocation sync, and the next cycle sends nothing.
"""
import json

from oslo_config import cfg
import pytest

from tests.functional.report_client_fixtures import placement  # noqa: F401 (fixture)
from tracker import audit
from tracker import metrics
from tracker.drivers import drains
from tracker.drivers import facts
from tracker.drivers import layout
from tracker.drivers import options
from tracker.placement import devices

ADDRESS = '0000:81:00.0'
GPU = layout.device_uuid('node1', ADDRESS)
ROOT = layout.root_uuid('node1')
RC = 'CUSTOM_PCI_10DE_20B5'
VM = 'a1b2c3d4-0000-4000-8000-000000000001'


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    conf.set_override('host', 'node1')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [json.dumps(
        {'vendor_id': '10de', 'product_id': '20b5', 'one_time_use': 'true'})],
        'pci')
    yield conf
    conf.reset()


def discover(conf, instances=()):
    host = facts.HostFacts(
        hostname='node1', cpus=list(range(8)), memory_mb=16384, disk_gb=100,
        pci_devices=[facts.PciDevice(ADDRESS, '10de', '20b5', '030200')])
    return layout.Layout(host, conf).snapshot(instances)


def cycle(client, conf, instances=()):
    """One agent cycle: discover, sync providers, sync allocations."""
    snapshot = discover(conf, instances)
    result = client.sync(snapshot.providers, snapshot.instances)
    assert result.errors == []
    assert client.sync_allocations(ROOT, snapshot.instances).errors == []


def device(placement):
    adapter = placement.other_writer()
    body = adapter.get('/resource_providers/%s/inventories' % GPU,
                       microversion='1.39').json()
    traits = adapter.get('/resource_providers/%s/traits' % GPU,
                         microversion='1.39').json()['traits']
    return body['inventories'][RC]['reserved'], set(traits)


def vm():
    return facts.InstanceFacts(uuid=VM, project_id='p', user_id='u', vcpus=1,
                               memory_mb=512, pci_addresses=[ADDRESS])


INVENTORY_PUT = ('PUT', '/resource_providers/%s/inventories' % GPU)


def test_one_time_use_device(placement, conf):  # noqa: F811 (fixture)
    client = placement.client()
    cycle(client, conf)
    assert device(placement) == (0, {'HW_PCI_ONE_TIME_USE', 'OWNER_NOVA',
                                     'COMPUTE_MANAGED_PCI_DEVICE'})

    # an instance takes it: its allocation first, reserved not yet raised
    marker = placement.count()
    cycle(client, conf, [vm()])
    sent = placement.since(marker)
    assert ('PUT', '/allocations/%s' % VM) in sent
    assert INVENTORY_PUT not in sent
    assert device(placement)[0] == 0

    # the next cycle, placement holding the allocation: reserved = total
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == [INVENTORY_PUT]
    assert device(placement)[0] == 1

    marker = placement.count()
    cycle(client, conf, [vm()])
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []

    # cleaning is refused while an instance holds the device
    with pytest.raises(devices.DeviceError, match='still in use'):
        devices.clean(client.http, GPU, 'node1_0000:81:00.0')

    # the instance goes: its allocation goes, the device stays reserved
    marker = placement.count()
    cycle(client, conf)
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == [
        ('DELETE', '/allocations/%s' % VM)]
    assert device(placement)[0] == 1
    marker = placement.count()
    cycle(client, conf)
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []

    # tracker-manage device clean, after the operator's cleaning, lowers
    # it (one write); the agent leaves it lowered
    marker = placement.count()
    assert devices.clean(client.http, GPU, 'node1_0000:81:00.0') == [RC]
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == [INVENTORY_PUT]
    assert devices.clean(client.http, GPU, 'node1_0000:81:00.0') == []
    marker = placement.count()
    cycle(client, conf)
    cycle(client, conf)
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []
    assert device(placement)[0] == 0


def test_drained_device(placement, conf, tmp_path):  # noqa: F811 (fixture)
    """Drained by the operator (tracker-manage device drain writes the
    agent's drains file): no new allocation, the instance's kept."""
    conf.set_override('device_spec', [json.dumps(
        {'vendor_id': '10de', 'product_id': '20b5'})], 'pci')
    conf.set_override('state_path', str(tmp_path), 'tracker')
    client = placement.client()
    cycle(client, conf, [vm()])
    cycle(client, conf, [vm()])
    assert device(placement) == (0, {'OWNER_NOVA', 'COMPUTE_MANAGED_PCI_DEVICE'})

    drains.save(str(tmp_path), 'node1', {ADDRESS: 'ECC errors'})
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert sorted(s for s in placement.since(marker) if s[0] != 'GET') == [
        INVENTORY_PUT, ('PUT', '/resource_providers/%s/traits' % GPU),
        ('PUT', '/traits/CUSTOM_DEVICE_DRAINED')]
    assert device(placement) == (1, {'OWNER_NOVA', 'COMPUTE_MANAGED_PCI_DEVICE',
                                     'CUSTOM_DEVICE_DRAINED'})
    assert placement.other_writer().get(
        '/allocations/%s' % VM, microversion='1.39').json()['allocations'][
            GPU]['resources'] == {RC: 1}
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []
    # the audit names it, with its reason, and finds no drift
    report = audit.audit(discover(conf, [vm()]), client)
    assert report.in_sync and report.drained == {ADDRESS: 'ECC errors'}
    assert '  0000:81:00.0: ECC errors' in report.as_text().splitlines()
    gauges = metrics.Metrics()
    gauges.devices_drained(report.drained)
    assert ('tracker_device_drained{address="0000:81:00.0",reason="ECC errors"} 1.0'
            in gauges.exposition().splitlines())

    drains.save(str(tmp_path), 'node1', {})
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert sorted(s for s in placement.since(marker) if s[0] != 'GET') == [
        INVENTORY_PUT, ('PUT', '/resource_providers/%s/traits' % GPU)]
    assert device(placement) == (0, {'OWNER_NOVA', 'COMPUTE_MANAGED_PCI_DEVICE'})
    marker = placement.count()
    cycle(client, conf, [vm()])
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []
    gauges.devices_drained(discover(conf, [vm()]).drained)
    assert 'tracker_device_drained{' not in gauges.exposition()
