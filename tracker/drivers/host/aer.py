"""PCI Advanced Error Reporting counters (sysfs aer_dev_fatal and
aer_dev_nonfatal: one 'NAME count' line per error kind, the total last as
TOTAL_ERR_FATAL / TOTAL_ERR_NONFATAL). Absent where the device or kernel
has no AER: unknown, never healthy by default nor failing."""
import os

from tracker.drivers import facts
from tracker.drivers.host import sysfs


def total(path: str) -> int | None:
    """The TOTAL_ line's count of one AER file; None when unreadable."""
    text = sysfs.read(path, '')
    for line in text.splitlines():
        name, _, count = line.strip().partition(' ')
        if name.startswith('TOTAL_') and count.strip().isdigit():
            return int(count)
    return None


def discover(paths: sysfs.HostPaths, host: facts.HostFacts) -> None:
    for device in host.pci_devices:
        base = paths.sys('bus/pci/devices', device.address)
        device.aer_fatal = total(os.path.join(base, 'aer_dev_fatal'))
        device.aer_nonfatal = total(os.path.join(base, 'aer_dev_nonfatal'))
