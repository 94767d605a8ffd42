"""What a discovery source saw, before it becomes providers.

The host and libvirt drivers read different sources but see the same
things: CPUs, memory, disk, NUMA nodes, PCI devices, instances. They fill
these plain values; ``layout`` turns them into the provider tree and the
instances' allocations the same way for every driver.
"""
import dataclasses
from typing import Any

from tracker.drivers.errors import DiscoveryError

GiB = 1024 ** 3
MiB = 1024 ** 2


@dataclasses.dataclass
class NumaNode:
    id: int
    cpus: list[int]       # online CPU ids
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
    virtfns: list[str] = dataclasses.field(default_factory=list)  # set on a PF
    # mediated device types offered: {type id: available instances}
    mdev_types: dict[str, int] = dataclasses.field(default_factory=dict)
    # health, where the source tells (None: unknown): PCI AER error
    # counters since boot, and the kernel driver bound ('' : none)
    aer_fatal: int | None = None
    aer_nonfatal: int | None = None
    driver: str | None = None

    @property
    def is_vf(self) -> bool:
        return self.physfn is not None


@dataclasses.dataclass
class Mdev:
    uuid: str
    parent: str           # PCI address of the physical device
    type: str


@dataclasses.dataclass
class HostFacts:
    hostname: str
    cpus: list[int]            # online CPU ids
    memory_mb: int
    disk_gb: int | None        # None: instance storage unknown
    cpu_flags: set[str] = dataclasses.field(default_factory=set)
    arch: str = 'x86_64'
    huge_pages_mb: int = 0
    numa_nodes: list[NumaNode] = dataclasses.field(default_factory=list)
    pci_devices: list[PciDevice] = dataclasses.field(default_factory=list)
    mdevs: list[Mdev] = dataclasses.field(default_factory=list)
    traits: set[str] = dataclasses.field(default_factory=set)
    # memory-encryption model (nova's: amd_sev, amd_sev_es, amd_sev_snp,
    # intel_tdx) -> how many such guests the host can run at once
    mem_encryption: dict[str, int] = dataclasses.field(default_factory=dict)


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
    pci_addresses: list[str] = dataclasses.field(default_factory=list)
    mdev_uuids: list[str] = dataclasses.field(default_factory=list)
    numa_node: int | None = None
    # host CPUs each vCPU may run on (empty: not pinned), in vCPU order
    vcpu_pins: list[list[int]] = dataclasses.field(default_factory=list)
    cpu_policy: str | None = None   # nova's hw:cpu_policy, when known
    mem_encryption: str | None = None   # its model, as HostFacts names them


def ceil_div(value: int | float | str, unit: int) -> int:
    return -(-int(value) // unit)


def parse_cpu_list(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(','):
        if not part:
            continue
        first, _, last = part.partition('-')
        try:
            cpus.extend(range(int(first), int(last or first) + 1))
        except ValueError:
            raise DiscoveryError('bad CPU list %r' % text) from None
    return cpus


def pci_address(domain: int, bus: int, slot: int, function: int) -> str:
    """Canonical PCI address from its integer parts."""
    return '%04x:%02x:%02x.%x' % (domain, bus, slot, function)


def instance_from_dict(data: Any) -> InstanceFacts:
    """An InstanceFacts from a YAML/JSON description (the host driver's
    instances file): uuid, name, project_id, user_id, vcpus, memory_mb,
    root_gb, ephemeral_gb, swap_mb, pci_devices, mdevs, numa_node,
    cpu_policy (nova's hw:cpu_policy: dedicated guests take PCPU)."""
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
            numa_node=data.get('numa_node'),
            cpu_policy=data.get('cpu_policy'))
    except (TypeError, ValueError) as exc:
        raise DiscoveryError('instance %s: %s' % (data.get('uuid'), exc)) from None
