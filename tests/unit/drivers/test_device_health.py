"""The host driver drains the devices sysfs says are failing (a fake
sysfs tree the test edits between discoveries)."""
import json

from tracker.drivers import drains
from tracker.drivers import load_driver
from tracker.drivers.layout import device_uuid

NVME = '0000:05:00.0'
GPU = '0000:41:00.0'


def drained_file(conf):
    return drains.load(conf.tracker.state_path, 'node1')


def provider(snapshot, address):
    return next(p for p in snapshot.providers
                if p.uuid == device_uuid('node1', address))


def host_with_devices(conf, fake_host, used=()):
    host = fake_host()
    host.pci_device(NVME, '144d', 'a808', '0x010802')
    host.pci_device(GPU, '10de', '20b5', '0x030200')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [json.dumps({'vendor_id': '144d'}),
                                      json.dumps({'vendor_id': '10de'})], 'pci')
    if used:
        path = host.path('instances.yaml')
        with open(path, 'w') as f:
            json.dump([{'uuid': 'vm', 'vcpus': 1, 'memory_mb': 512,
                        'pci_devices': list(used)}], f)
        conf.set_override('instances_file', path, 'tracker')
    return host


def test_rising_aer_counters_drain_the_device(conf, fake_host):
    host = host_with_devices(conf, fake_host)
    host.aer(GPU, fatal=0, nonfatal=3)
    driver = load_driver(conf, 'host')
    first = driver.discover()                 # learns the counts
    assert first.drained == {} and drained_file(conf) == {}

    host.aer(GPU, fatal=0, nonfatal=3)
    assert driver.discover().drained == {}    # unchanged: healthy

    host.aer(GPU, fatal=1, nonfatal=3)
    snapshot = driver.discover()
    reason = 'AER fatal errors (0 -> 1)'
    assert snapshot.drained == drained_file(conf) == {GPU: reason}
    gpu = provider(snapshot, GPU)
    assert gpu.inventories['CUSTOM_PCI_10DE_20B5']['reserved'] == 1
    assert 'CUSTOM_DEVICE_DRAINED' in gpu.traits
    assert 'CUSTOM_DEVICE_DRAINED' not in provider(snapshot, NVME).traits

    # it stays drained once the counts stop rising, until undrained
    assert driver.discover().drained == {GPU: reason}
    drains.save(conf.tracker.state_path, 'node1', {})
    assert driver.discover().drained == {}


def test_a_device_without_aer_is_not_judged_by_it(conf, fake_host):
    host_with_devices(conf, fake_host)
    driver = load_driver(conf, 'host')
    driver.discover()
    assert driver.discover().drained == {}


def test_unbound_or_gone_while_allocated(conf, fake_host):
    host = host_with_devices(conf, fake_host, used=[NVME, GPU])
    driver = load_driver(conf, 'host')
    assert driver.discover().drained == {}

    host.unbind(NVME)
    snapshot = driver.discover()
    assert snapshot.drained == {NVME: 'no driver bound while allocated'}
    assert provider(snapshot, NVME).inventories[
        'CUSTOM_PCI_144D_A808']['reserved'] == 1

    host.remove_pci_device(GPU)
    snapshot = driver.discover()
    assert snapshot.drained == {NVME: 'no driver bound while allocated',
                                GPU: 'gone from the host while allocated'}


def test_unbound_but_unused_is_not_failing(conf, fake_host):
    host = host_with_devices(conf, fake_host)
    host.unbind(NVME)
    driver = load_driver(conf, 'host')
    driver.discover()
    assert driver.discover().drained == {}
