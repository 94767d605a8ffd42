"""A passthrough device gone from a libvirt host while its guest holds it,
through the libvirt driver (libvirt's test driver on a copy of
tests/libvirt/host-devices.xml, rewritten between cycles) and the report
client against our placement: drained by the libvirt health source, its
provider kept with reserved = total, the guest's allocation untouched,
the audit naming both; then the guest goes, its allocation, then the
provider. Each transition's writes exactly, and the next cycle none."""
import json
import os

from oslo_config import cfg
import pytest

from tests.functional.report_client_fixtures import placement  # noqa: F401 (fixture)
from tracker import audit
from tracker.drivers import layout
from tracker.drivers import options
from tracker.drivers.libvirt import LibvirtDriver

HOST_XML = os.path.join(os.path.dirname(__file__), os.pardir, 'libvirt', 'host-devices.xml')
NVME = '0000:05:00.0'
NVME_NODE = '  <device>\n    <name>pci_0000_05_00_0</name>'
PCI_GUEST = 'a1b2c3d4-0000-4000-8000-000000000003'
RC = 'CUSTOM_PCI_144D_A808'


@pytest.fixture
def libvirt_host(conf, tmp_path):
    path = tmp_path / 'host.xml'
    original = open(HOST_XML).read()
    conf.set_override('connection_uri', 'test://%s' % path, 'libvirt')
    conf.set_override('images_pool', 'instances', 'tracker')
    conf.set_override('host', 'node1')
    conf.set_override('state_path', str(tmp_path / 'state'), 'tracker')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [json.dumps({'vendor_id': '144d'})], 'pci')
    driver = LibvirtDriver(conf)

    def show(drive=True, guest=True):
        text = original
        if not drive:
            start = text.index(NVME_NODE)
            text = text[:start] + text[text.index('</device>', start) + len('</device>\n'):]
        if not guest:
            start = text.rindex('<domain', 0, text.index(PCI_GUEST))
            text = text[:start] + text[text.index('</domain>', start) + len('</domain>\n'):]
        path.write_text(text)
        driver.close()          # the next discovery reads the file again
    show()
    yield driver, show
    driver.close()


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    yield conf
    conf.reset()


def writes(placement, marker):
    return sorted(s for s in placement.since(marker) if s[0] != 'GET')


def test_a_drive_gone_under_its_guest(placement, libvirt_host):  # noqa: F811 (fixture)
    driver, show = libvirt_host
    client = placement.client()
    drive = layout.device_uuid('node1', NVME)

    def cycle():
        snapshot = driver.discover()
        assert client.sync(snapshot.providers, snapshot.instances).errors == []
        assert client.sync_allocations(snapshot.root.uuid, snapshot.instances).errors == []
        return snapshot

    def guest_holds():
        body = placement.other_writer().get('/allocations/%s' % PCI_GUEST,
                                            microversion='1.39').json()
        return body['allocations'].get(drive, {}).get('resources')

    cycle()
    marker = placement.count()
    cycle()
    assert writes(placement, marker) == []
    assert guest_holds() == {RC: 1}

    show(drive=False)
    marker = placement.count()
    snapshot = cycle()
    assert snapshot.drained == {NVME: 'gone from the host while allocated'}
    assert writes(placement, marker) == [
        ('DELETE', '/resource_providers/%s' % drive),
        ('PUT', '/resource_providers/%s/inventories' % drive)]
    assert guest_holds() == {RC: 1}
    marker = placement.count()
    cycle()
    cycle()
    assert writes(placement, marker) == []
    report = audit.audit(driver.discover(), client)
    assert report.in_sync, report.as_text()
    assert report.drained == {NVME: 'gone from the host while allocated'}
    assert [(k.address, k.reason, k.consumers) for k in report.kept] == [
        (NVME, 'gone from the host', [PCI_GUEST])]

    show(drive=False, guest=False)
    marker = placement.count()
    cycle()
    assert writes(placement, marker) == [('DELETE', '/allocations/%s' % PCI_GUEST)]
    marker = placement.count()
    cycle()
    assert writes(placement, marker) == [('DELETE', '/resource_providers/%s' % drive)]
    marker = placement.count()
    cycle()
    assert writes(placement, marker) == []
