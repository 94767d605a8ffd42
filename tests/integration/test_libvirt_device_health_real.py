"""The libvirt health source on a real libvirtd (tests/integration/
libvirtd.py): what its node devices show of each PCI function's kernel
driver is what sysfs says, and devices never shown bound (a host bridge)
are not drained for it, even when allocated.

Not here: removing or unbinding a node device. This libvirtd can neither
create nor delete a PCI node device (that takes hardware: hot-unplug, or
nodeDeviceDetachFlags moving a real function to vfio-pci, which would take
this machine's own devices away); the removal, unbinding and event paths
are tested on libvirt's test driver (tests/unit/drivers/
test_libvirt_device_health.py) and with its XML as a real libvirtd writes
it."""
import os

import libvirt
import pytest

from tests.integration.libvirtd import hypervisor  # noqa: F401 (fixture)
from tracker.drivers.libvirt import health
from tracker.drivers.libvirt import parse

pytestmark = pytest.mark.integration


def test_node_devices_show_the_bound_driver(hypervisor):  # noqa: F811 (fixture)
    conn = libvirt.openReadOnly(hypervisor.uri)
    try:
        devices = [parse.pci_device(d.XMLDesc(0)) for d in conn.listAllDevices(
            libvirt.VIR_CONNECT_LIST_NODE_DEVICES_CAP_PCI_DEV)]
    finally:
        conn.close()
    assert devices
    for device in devices:
        link = '/sys/bus/pci/devices/%s/driver' % device.address
        sysfs = os.path.basename(os.readlink(link)) if os.path.islink(link) else ''
        assert device.driver == sysfs, device.address
    assert any(d.driver for d in devices)

    judge = health.NodeDeviceHealth()
    every = {d.address for d in devices}
    assert judge.failing(devices, every) == {}
    assert judge.failing(devices, every) == {}
