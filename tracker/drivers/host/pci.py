"""PCI devices: ids, class, NUMA node, SR-IOV links, mediated devices."""
import logging
import os

from tracker.drivers import facts
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.host import sysfs

LOG = logging.getLogger(__name__)


def discover(paths: sysfs.HostPaths, host: facts.HostFacts) -> None:
    host.pci_devices = []
    for address in sysfs.listdir(paths.sys('bus/pci/devices')):
        try:
            host.pci_devices.append(read_device(paths, address))
        except DiscoveryError:
            if os.path.exists(paths.sys('bus/pci/devices', address)):
                raise
            LOG.info('PCI device %s went away while being read', address)
    host.mdevs = read_mdevs(paths)


def _hex(text: str) -> str:
    return text.lower().removeprefix('0x')


def read_device(paths: sysfs.HostPaths, address: str) -> facts.PciDevice:
    path = paths.sys('bus/pci/devices', address)
    numa_node = sysfs.read_int(os.path.join(path, 'numa_node'), -1)
    links = (sysfs.link_name(os.path.join(path, name))
             for name in sysfs.listdir(path) if name.startswith('virtfn'))
    # a link unreadable (the VF went away meanwhile) names no VF
    virtfns = sorted(link for link in links if link is not None)
    return facts.PciDevice(
        address=address,
        vendor_id=_hex(sysfs.read(os.path.join(path, 'vendor'))),
        product_id=_hex(sysfs.read(os.path.join(path, 'device'))),
        class_id=_hex(sysfs.read(os.path.join(path, 'class'), '')),
        numa_node=numa_node if numa_node >= 0 else None,
        physfn=sysfs.link_name(os.path.join(path, 'physfn')),
        virtfns=virtfns,
        mdev_types=read_mdev_types(os.path.join(path, 'mdev_supported_types')))


def read_mdev_types(directory: str) -> dict[str, int]:
    """{type id: available instances} offered by one physical device."""
    return {name: sysfs.read_int(
                os.path.join(directory, name, 'available_instances'), 0)
            for name in sysfs.listdir(directory)}


def read_mdevs(paths: sysfs.HostPaths) -> list[facts.Mdev]:
    """Mediated devices that exist, with their parent and type."""
    base = paths.sys('bus/mdev/devices')
    mdevs: list[facts.Mdev] = []
    for name in sysfs.listdir(base):
        target = os.path.realpath(os.path.join(base, name))
        mdevs.append(facts.Mdev(
            uuid=name.lower(),
            parent=os.path.basename(os.path.dirname(target)),
            type=sysfs.link_name(os.path.join(target, 'mdev_type')) or ''))
    return mdevs
