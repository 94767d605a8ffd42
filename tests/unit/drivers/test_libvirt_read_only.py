"""The libvirt driver only reads: it discovers through a read-only
connection, which libvirt refuses any change on."""
import libvirt
import pytest

from tests.unit.drivers.test_libvirt_driver import devices_host  # noqa: F401
from tracker.drivers import load_driver

DOMAIN = ("<domain type='test'><name>intruder</name><memory>1024</memory>"
          "<os><type>hvm</type></os></domain>")


def test_discovery_connects_read_only(devices_host):  # noqa: F811
    driver = load_driver(devices_host, 'libvirt')
    snapshot = driver.discover()
    assert snapshot.instances       # it read the host's domains
    with pytest.raises(libvirt.libvirtError) as refused:
        driver.connection.defineXML(DOMAIN)
    assert refused.value.get_error_code() == libvirt.VIR_ERR_OPERATION_DENIED
