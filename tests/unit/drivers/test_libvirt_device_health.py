"""The libvirt driver drains the allocated devices libvirt shows failing:
libvirt's test driver on a copy of tests/libvirt/host-devices.xml that
the test edits between discoveries (a new connection reads it again), and
a node-device removal event."""
import json
import os
import threading
import time

import libvirt
import pytest

from tracker.drivers import drains
from tracker.drivers.layout import device_uuid
from tracker.drivers.libvirt import LibvirtDriver
from tracker.drivers.libvirt import events
from tracker.drivers.libvirt import health
from tracker.drivers.libvirt import parse

HOST_XML = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                        'libvirt', 'host-devices.xml')
NVME = '0000:05:00.0'        # the PCI passthrough domain's drive
NVME_NODE = "<name>pci_0000_05_00_0</name>\n    <parent>computer</parent>"
NVME_RC = 'CUSTOM_PCI_144D_A808'


@pytest.fixture
def host(conf, tmp_path):
    path = tmp_path / 'host.xml'
    original = open(HOST_XML).read()
    assert NVME_NODE in original
    conf.set_override('connection_uri', 'test://%s' % path, 'libvirt')
    conf.set_override('images_pool', 'instances', 'tracker')
    conf.set_override('host', 'node1')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [json.dumps({'vendor_id': '144d'})], 'pci')
    driver = LibvirtDriver(conf)

    def show(nvme):
        """Rewrite the host, the drive 'there' or 'gone'; the next
        discovery reads it."""
        text = original
        if nvme == 'gone':
            start = text.index(NVME_NODE) - len('<device>\n    ')
            text = text[:start] + text[text.index('</device>', start) + len('</device>'):]
        path.write_text(text)
        driver.close()
    yield driver, show
    driver.close()


def nvme_provider(snapshot):
    return next((p for p in snapshot.providers
                 if p.uuid == device_uuid('node1', NVME)), None)


BOUND_XML = """<device>
  <name>pci_0000_05_00_0</name>
  <path>/sys/devices/pci0000:00/0000:00:01.0/0000:05:00.0</path>
  <parent>pci_0000_00_01_0</parent>
  <driver><name>nvme</name></driver>
  <capability type='pci'>
    <class>0x010802</class>
    <domain>0</domain><bus>5</bus><slot>0</slot><function>0</function>
    <product id='0xa808'/>
    <vendor id='0x144d'/>
  </capability>
</device>"""


def test_unbound_after_bound_while_allocated_drains():
    """What a real libvirtd shows of a bound and an unbound function (the
    test driver drops <driver> from its host file, so the XML is given)."""
    bound = parse.pci_device(BOUND_XML)
    unbound = parse.pci_device(BOUND_XML.replace('<driver><name>nvme</name></driver>', ''))
    assert (bound.driver, unbound.driver) == ('nvme', '')
    judge = health.NodeDeviceHealth()
    assert judge.failing([bound], [NVME]) == {}
    assert judge.failing([unbound], []) == {}          # not allocated: not judged
    assert judge.failing([unbound], [NVME]) == {NVME: 'no driver bound while allocated'}


def test_never_shown_bound_is_not_judged_by_it(conf, host):
    """libvirt's test driver (and a host binding at first use) shows no
    driver from the start: not a failure."""
    driver, show = host
    show('there')
    assert driver.discover().drained == {}
    assert driver.discover().drained == {}


def test_gone_while_allocated_drains(conf, host):
    driver, show = host
    show('there')
    driver.discover()
    show('gone')
    snapshot = driver.discover()
    assert snapshot.drained == {NVME: 'gone from the host while allocated'}
    assert drains.load(conf.tracker.state_path, 'node1') == snapshot.drained
    assert nvme_provider(snapshot) is None       # placement keeps it (sync.keep)


def test_a_removal_event_drains_with_its_reason(conf, host):
    driver, show = host
    show('there')
    driver.discover()
    driver.health.device_removed(NVME)
    driver.health.device_removed('0000:00:1f.0')     # not allocated: not drained
    assert driver.discover().drained == {NVME: health.REMOVED}


def test_node_device_removal_events():
    """libvirt's test driver deletes no PCI device (its destroy keeps
    them): a vHBA it creates and destroys carries the event through; the
    PCI name is mapped on its own."""
    removed, seen = [], threading.Event()
    watcher = events.NodeDeviceEvents(
        'test:///default', lambda name: (removed.append(name), seen.set()))
    assert watcher.start()
    try:
        conn = libvirt.open('test:///default')      # the same host as the watcher's
        vhba = conn.nodeDeviceCreateXML(
            "<device><parent>scsi_host1</parent><capability type='scsi_host'>"
            "<capability type='fc_host'><wwnn>2000000012341234</wwnn>"
            "<wwpn>1000000012341234</wwpn></capability></capability></device>", 0)
        name = vhba.name()
        vhba.destroy()
        deadline = time.monotonic() + 10
        while not seen.wait(0.1) and time.monotonic() < deadline:
            pass
        assert removed == [name]
        conn.close()
    finally:
        watcher.stop()
    assert events.pci_address('pci_0000_05_00_0') == NVME
    assert events.pci_address(name) is None
