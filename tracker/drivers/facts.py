"""What a discovery source saw, before it becomes providers.

The host and libvirt drivers read different sources but see the same
things: CPUs, memory, disk, NUMA nodes, PCI devices, instances. They fill
these plain values; ``layout`` turns them into the provider tree and the
instances' allocations the same way for every driver.
"""
import dataclasses

from tracker.drivers.errors import DiscoveryError

GiB = 1024 ** 3
MiB = 1024 ** 2


@dataclasses.dataclass
class NumaNode:
    id: int
    cpus: list            # online CPU ids
    memory_mb: int
    huge_pages_mb: int = 0


@dataclasses.dataclass
class PciDevice:
    address: str          # 0000:81:00.0
    vendor_id: str        # 4 hex digits, lower case, no 0x
    product_id: str
    class_id: str = ''    # 6 hex digits (0x020000 -> '020000')
    numa_node: int | None = None
    physfn: str | None = None                           # set on a VF
    virtfns: list = dataclasses.field(default_factory=list)  # set on a PF
    # mediated device types offered: {type id: available instances}
    mdev_types: dict = dataclasses.field(default_factory=dict)

    @property
    def is_vf(self):
        return self.physfn is not None


@dataclasses.dataclass
class Mdev:
    uuid: str
    parent: str           # PCI address of the physical device
    type: str


@dataclasses.dataclass
class HostFacts:
    hostname: str
    cpus: list                 # online CPU ids
    memory_mb: int
    disk_gb: int | None        # None: instance storage unknown
    cpu_flags: set = dataclasses.field(default_factory=set)
    arch: str = 'x86_64'
    huge_pages_mb: int = 0
    numa_nodes: list = dataclasses.field(default_factory=list)
    pci_devices: list = dataclasses.field(default_factory=list)
    mdevs: list = dataclasses.field(default_factory=list)
    traits: set = dataclasses.field(default_factory=set)


@dataclasses.dataclass
class InstanceFacts:
    """An instance as the hypervisor describes it."""
    uuid: str
    name: str = ''
    project_id: str | None = None
    user_id: str | None = None
    vcpus: int = 0
    memory_mb: int = 0
    disk_gb: int = 0           # local disks: root + ephemeral + swap
    pci_addresses: list = dataclasses.field(default_factory=list)
    mdev_uuids: list = dataclasses.field(default_factory=list)
    numa_node: int | None = None


def ceil_div(value, unit):
    return -(-int(value) // unit)


def parse_cpu_list(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus = []
    for part in text.strip().split(','):
        if not part:
            continue
        first, _, last = part.partition('-')
        try:
            cpus.extend(range(int(first), int(last or first) + 1))
        except ValueError:
            raise DiscoveryError('bad CPU list %r' % text) from None
    return cpus


def pci_address(domain, bus, slot, function):
    """Canonical PCI address from its integer parts."""
    return '%04x:%02x:%02x.%x' % (domain, bus, slot, function)


def instance_from_dict(data):
    """An InstanceFacts from a YAML/JSON description (the host driver's
    instances file): uuid, name, project_id, user_id, vcpus, memory_mb,
    root_gb, ephemeral_gb, swap_mb, pci_devices, mdevs, numa_node."""
    if not isinstance(data, dict) or 'uuid' not in data:
        raise DiscoveryError('an instance needs at least a uuid: %r' % (data,))
    try:
        disk_gb = (int(data.get('root_gb', 0)) + int(data.get('ephemeral_gb', 0))
                   + ceil_div(int(data.get('swap_mb', 0)), 1024))
        return InstanceFacts(
            uuid=str(data['uuid']), name=str(data.get('name', '')),
            project_id=data.get('project_id'), user_id=data.get('user_id'),
            vcpus=int(data.get('vcpus', 0)),
            memory_mb=int(data.get('memory_mb', 0)), disk_gb=disk_gb,
            pci_addresses=[str(a).lower() for a in data.get('pci_devices', [])],
            mdev_uuids=[str(u).lower() for u in data.get('mdevs', [])],
            numa_node=data.get('numa_node'))
    except (TypeError, ValueError) as exc:
        raise DiscoveryError('instance %s: %s' % (data.get('uuid'), exc)) from None
