"""The kernel driver each PCI function is bound to (the sysfs 'driver'
link; '' when none: unbound, e.g. a device that failed and was released)."""
import os

from tracker.drivers import facts
from tracker.drivers.host import sysfs


def discover(paths: sysfs.HostPaths, host: facts.HostFacts) -> None:
    for device in host.pci_devices:
        link = os.path.join(paths.sys('bus/pci/devices', device.address), 'driver')
        device.driver = sysfs.link_name(link) or ''
