"""From what a driver saw to the provider tree and the instances' claims.

One place decides, for every driver, what the tree looks like:

- the root compute node: name = [DEFAULT] host, uuid =
  stable_uuid('compute-node', host), traits COMPUTE_NODE and OWNER_NOVA,
  HW_CPU_* from the CPU flags and the driver's own (the libvirt driver's
  COMPUTE_* capabilities); VCPU from the shared CPUs and PCPU from [compute]
  cpu_dedicated_set (reserved 0, ratio 1.0), MEMORY_MB and DISK_GB (none
  of DISK_GB when instance disks live on shared storage: the root then
  joins the storage aggregate instead). Allocation ratios follow nova (see
  nova_opts.allocation_ratio);
- with [tracker] numa_providers, one child per NUMA node '<host>_NUMA<n>'
  (trait HW_NUMA_ROOT) holding that node's VCPU, PCPU and MEMORY_MB instead
  of the root; host reservations are taken from node 0 first;
- with [pci] report_in_placement, one child '<host>_<ADDRESS>' (upper
  case; uuid stable_uuid(host, 'pci', address)) per device chosen by [pci]
  device_spec, as nova 34's PCI-in-placement: a plain device or PF offers
  one unit of the spec's resource_class, else CUSTOM_PCI_<VENDOR>_<PRODUCT>;
  chosen VFs are counted on their PF's provider in their own class (a PF
  whose VFs are chosen is not offered whole, where nova refuses the
  configuration); traits: the spec's, COMPUTE_MANAGED_PCI_DEVICE,
  HW_PCI_LIVE_MIGRATABLE, HW_PCI_ONE_TIME_USE (whole devices: reserved =
  total while an instance uses one, kept by placement after, see
  provider.keep_one_time_use) and OWNER_NOVA; devices of a spec with
  physical_network are neutron's and left out;
- one child '<host>_pci_<dddd>_<bb>_<ss>_<f>' (libvirt's node device name,
  as nova names it) per GPU offering its [devices] enabled_mdev_types type:
  the type's [mdev_<type>] mdev_class (VGPU by default) = available
  instances + mdevs of that type already there, and the traits OWNER_NOVA
  and CUSTOM_MDEV_<TYPE> (the latter the agent's own);
- one child '<host>_<model>' per memory-encryption model the host runs
  guests of (amd_sev, amd_sev_es, amd_sev_snp, intel_tdx, as nova 34
  names them; which and how many: drivers/libvirt/mem_encryption.py):
  MEM_ENCRYPTION_CONTEXT = those guests, one per guest (max_unit 1), the
  model's HW_CPU_X86_* trait and OWNER_NOVA. nova before 2025.2 held that
  inventory on the root: the sync's reshape moves it, allocations
  included, to these children (each guest to its model's child, the host
  says which; else the first, SEV's, as nova moves them), and its old
  root trait HW_CPU_X86_AMD_SEV goes, whoever wrote it.

Instances consume VCPU (PCPU for the vCPUs pinned to dedicated CPUs) and
MEMORY_MB from the root (or from their NUMA node's provider: the node they
are bound to, else the first with room), DISK_GB from the root or the
sharing provider, one unit per passthrough device from that device's
provider, one mdev class unit per mdev from its GPU's, and an encrypted
guest one MEM_ENCRYPTION_CONTEXT from its model's child. Devices and
models the tree does not report are not claimed.
"""
from collections.abc import Iterable
import logging
import re

from oslo_config import cfg

from tracker import nova_opts
from tracker.drivers import base
from tracker.drivers import cpu_traits
from tracker.drivers import drains
from tracker.drivers import facts as facts_mod
from tracker.drivers import pci_spec
from tracker.providers.provider import Inventory
from tracker.providers.provider import Provider
from tracker.providers.provider import capacity
from tracker.providers.provider import inventory
from tracker.providers.provider import stable_uuid

LOG = logging.getLogger(__name__)
# nova 34's scheduler asks for it on the root and on every PCI device's
# provider (request_filter.owner_nova_filter); nova puts it on its GPUs too
OWNER = 'OWNER_NOVA'
MEM_ENCRYPTION_CONTEXT = 'MEM_ENCRYPTION_CONTEXT'
# nova 34's memory-encryption models, in its order, and each child's trait
MEM_ENCRYPTION_TRAITS = {
    'amd_sev': 'HW_CPU_X86_AMD_SEV',
    'amd_sev_es': 'HW_CPU_X86_AMD_SEV_ES',
    'amd_sev_snp': 'HW_CPU_X86_AMD_SEV_SNP',
    'intel_tdx': 'HW_CPU_X86_INTEL_TDX',
}


def root_uuid(hostname: str) -> str:
    return stable_uuid('compute-node', hostname)


def device_uuid(hostname: str, address: str) -> str:
    return stable_uuid(hostname, 'pci', address)


def numa_uuid(hostname: str, node_id: int) -> str:
    return stable_uuid(hostname, 'numa', node_id)


def mem_encryption_uuid(hostname: str, model: str) -> str:
    return stable_uuid(hostname, 'mem_encryption', model)


class _Pool:
    """Greedily hands out a host reservation across providers."""

    def __init__(self, amount: int) -> None:
        self.left = amount

    def take(self, total: int) -> int:
        taken = min(self.left, total)
        self.left -= taken
        return taken


def _add(provider: Provider, rc: str, total: int, reserved: int = 0,
         ratio: float = 1.0) -> None:
    if total > 0:     # placement refuses an inventory of total 0
        provider.inventories[rc] = inventory(
            total, reserved=min(reserved, total), allocation_ratio=ratio)


def _fit_largest(record: Inventory | None) -> None:
    """Let one allocation take the whole capacity, overcommit included: a
    guest bigger than physical memory runs on an overcommitted host, and
    the tracker must be able to report it (max_unit = total would refuse
    its allocation forever)."""
    if record:
        record['max_unit'] = max(record['total'], capacity(record))


class Layout:
    """The provider tree for one ``HostFacts``, and claims against it."""

    def __init__(self, facts: facts_mod.HostFacts, conf: cfg.ConfigOpts) -> None:
        self.facts = facts
        self.conf = conf
        self.host = facts.hostname
        self.root = Provider(uuid=root_uuid(self.host), name=self.host)
        self.numa: dict[int, Provider] = {}          # node id -> Provider
        # PCI address -> (provider uuid, rc)
        self.devices: dict[str, tuple[str, str]] = {}
        # GPU address -> (provider uuid, mdev class)
        self.gpus: dict[str, tuple[str, str]] = {}
        # owner PCI address -> Provider
        self._device_children: dict[str, Provider] = {}
        # NUMA provider uuid -> {rc: used}
        self._used: dict[str, dict[str, int]] = {}
        self._mdev_parents = {m.uuid: m.parent for m in facts.mdevs}
        self.cpus = nova_opts.CpuSets(conf, facts.cpus)
        self.sharing_uuid: str | None = conf.tracker.shared_storage_provider_uuid
        self._build_root()
        if conf.tracker.numa_providers and facts.numa_nodes:
            self._build_numa()
        self._build_devices()
        # model -> its child, in nova's order
        self.mem_encryption = {
            model: Provider(uuid=mem_encryption_uuid(self.host, model),
                            name='%s_%s' % (self.host, model),
                            parent_uuid=self.root.uuid, traits={OWNER, trait},
                            inventories={MEM_ENCRYPTION_CONTEXT: inventory(
                                facts.mem_encryption[model], max_unit=1)})
            for model, trait in MEM_ENCRYPTION_TRAITS.items()
            if facts.mem_encryption.get(model, 0) > 0}
        if self.mem_encryption:     # the trait moved to SEV's child (nova 34)
            self.root.retired_traits.add(MEM_ENCRYPTION_TRAITS['amd_sev'])
        # address -> reason, for the devices this tree reports
        self.drained: dict[str, str] = {}
        self._drain(drains.load(conf.tracker.state_path, self.host))

    @property
    def providers(self) -> list[Provider]:
        """Root, NUMA nodes by id, devices by address, then the
        memory-encryption children in nova's order."""
        return ([self.root] + [self.numa[n] for n in sorted(self.numa)]
                + [self._device_children[a]
                   for a in sorted(self._device_children)]
                + list(self.mem_encryption.values()))

    # -- the tree ----------------------------------------------------------

    def _add_ratioed(self, provider: Provider, rc: str, total: int, reserved: int,
                     fit: bool = False) -> None:
        """An inventory whose allocation ratio follows nova's rule."""
        ratio, placement_wins = nova_opts.allocation_ratio(self.conf, rc)
        _add(provider, rc, total, reserved, ratio)
        if fit:
            _fit_largest(provider.inventories.get(rc))
        if placement_wins and rc in provider.inventories:
            provider.placement_ratios[rc] = fit

    def _add_cpus(self, provider: Provider, cpus: Iterable[int], reserved: int) -> None:
        """VCPU from the shared CPUs among ``cpus``, PCPU from the
        dedicated ones (never overcommitted, never reserved)."""
        self._add_ratioed(provider, 'VCPU', len(self.cpus.shared & set(cpus)),
                          reserved)
        _add(provider, 'PCPU', len(self.cpus.dedicated & set(cpus)))

    def _build_root(self) -> None:
        facts, conf = self.facts, self.conf
        root = self.root
        root.traits = ({'COMPUTE_NODE', OWNER} | set(facts.traits)
                       | cpu_traits.traits_for_flags(facts.cpu_flags, facts.arch))
        numa = conf.tracker.numa_providers and facts.numa_nodes
        if not numa:
            self._add_cpus(root, facts.cpus, conf.reserved_host_cpus)
            self._add_ratioed(root, 'MEMORY_MB', facts.memory_mb,
                              self._reserved_memory(), fit=True)
        if self.sharing_uuid:
            root.aggregates = {conf.tracker.shared_storage_aggregate_uuid
                               or self.sharing_uuid}
        elif facts.disk_gb:
            self._add_ratioed(
                root, 'DISK_GB', facts.disk_gb,
                facts_mod.ceil_div(conf.reserved_host_disk_mb, 1024))

    def _reserved_memory(self) -> int:
        reserved: int = self.conf.reserved_host_memory_mb
        if self._reserve_huge_pages():
            reserved += self.facts.huge_pages_mb
        return reserved

    def _reserve_huge_pages(self) -> bool:
        reserve: bool = self.conf.tracker.reserve_huge_pages
        return reserve

    def _build_numa(self) -> None:
        cpus = _Pool(self.conf.reserved_host_cpus)
        memory = _Pool(self.conf.reserved_host_memory_mb)
        for node in sorted(self.facts.numa_nodes, key=lambda n: n.id):
            child = Provider(uuid=numa_uuid(self.host, node.id),
                             name='%s_NUMA%d' % (self.host, node.id),
                             parent_uuid=self.root.uuid,
                             traits={'HW_NUMA_ROOT'})
            mem_reserved = memory.take(node.memory_mb)
            if self._reserve_huge_pages():
                mem_reserved += node.huge_pages_mb
            shared = len(self.cpus.shared & set(node.cpus))
            self._add_cpus(child, node.cpus, cpus.take(shared))
            self._add_ratioed(child, 'MEMORY_MB', node.memory_mb,
                              mem_reserved)
            self.numa[node.id] = child

    def _device_provider(self, address: str, name: str) -> Provider:
        if address not in self._device_children:
            self._device_children[address] = Provider(
                uuid=device_uuid(self.host, address),
                name='%s_%s' % (self.host, name),
                parent_uuid=self.root.uuid, traits={OWNER})
        return self._device_children[address]

    def _build_devices(self) -> None:
        specs = pci_spec.DeviceSpecList(self.conf.pci.device_spec)
        reported = self.conf.pci.report_in_placement
        by_address, every_device = nova_opts.mdev_types(self.conf)
        # address -> (device, spec)
        chosen: dict[str, tuple[facts_mod.PciDevice, pci_spec.DeviceSpec]] = {}
        for device in sorted(self.facts.pci_devices, key=lambda d: d.address):
            offered = by_address.get(device.address, every_device)
            if offered and offered[0] in device.mdev_types:
                self._add_gpu(device, *offered)
                continue
            spec = specs.match(device) if reported else None
            if spec and not spec.physical_network:
                chosen[device.address] = (device, spec)
        vf_parents = {d.physfn for d, _ in chosen.values() if d.is_vf}
        for address, (device, spec) in chosen.items():
            if address in vf_parents:
                continue          # its VFs are offered instead
            owner = device.physfn if device.physfn is not None else address
            rc = spec.resource_class or 'CUSTOM_PCI_%s_%s' % (
                device.vendor_id.upper(), device.product_id.upper())
            child = self._device_provider(owner, owner.upper())
            record = child.inventories.get(rc)
            _add(child, rc, (record['total'] if record else 0) + 1)
            child.traits |= spec.traits | {'COMPUTE_MANAGED_PCI_DEVICE'}
            if spec.one_time_use and not device.is_vf:
                child.traits.add('HW_PCI_ONE_TIME_USE')
                child.one_time_use.add(rc)
            self.devices[address] = (child.uuid, rc)

    def _drain(self, drained: dict[str, str]) -> None:
        """No new allocation on a drained device (see drivers/drains.py)."""
        for address, reason in sorted(drained.items()):
            self.drained[address] = reason      # for the audit and metrics
            target = self.devices.get(address) or self.gpus.get(address)
            if target is None:
                continue        # not (or no longer) reported
            uuid, rc = target
            child = next(p for p in self._device_children.values() if p.uuid == uuid)
            record = child.inventories[rc]
            whole = address in self.gpus or address in self._device_children
            record['reserved'] = (record['total'] if whole
                                  else min(record['total'], record['reserved'] + 1))
            child.traits.add(drains.TRAIT)

    def _add_gpu(self, device: facts_mod.PciDevice, mdev_type: str, rc: str) -> None:
        existing = sum(1 for m in self.facts.mdevs
                       if m.parent == device.address and m.type == mdev_type)
        child = self._device_provider(
            device.address, 'pci_' + re.sub('[:.]', '_', device.address))
        _add(child, rc, device.mdev_types[mdev_type] + existing)
        child.traits.add(pci_spec.custom_name('MDEV_' + mdev_type))
        self.gpus[device.address] = (child.uuid, rc)

    # -- claims ------------------------------------------------------------

    def instance(self, inst: facts_mod.InstanceFacts) -> base.Instance:
        """The ``Instance`` (with allocations) for ``InstanceFacts``."""
        claims: dict[str, dict[str, int]] = {}

        def claim(provider_uuid: str, rc: str, amount: int) -> None:
            if amount:
                rcs = claims.setdefault(provider_uuid, {})
                rcs[rc] = rcs.get(rc, 0) + amount

        demands = self._cpu_demands(inst)
        demands['MEMORY_MB'] = inst.memory_mb
        compute_uuid = self._compute_provider(demands, inst.numa_node)
        for rc, amount in demands.items():
            claim(compute_uuid, rc, amount)
        claim(self.sharing_uuid or self.root.uuid, 'DISK_GB', inst.disk_gb)
        for address in inst.pci_addresses:
            if address in self.devices:
                claim(*self.devices[address], 1)
                self._used_once(*self.devices[address])
            else:
                LOG.debug('instance %s uses unreported device %s',
                          inst.uuid, address)
        for mdev in inst.mdev_uuids:
            parent = self._mdev_parents.get(mdev)
            gpu = self.gpus.get(parent) if parent is not None else None
            if gpu:
                claim(*gpu, 1)
        encrypted = self.mem_encryption.get(inst.mem_encryption or '')
        if encrypted is not None:
            claim(encrypted.uuid, MEM_ENCRYPTION_CONTEXT, 1)
        if self.numa:
            used = self._used.setdefault(compute_uuid, {})
            for rc, amount in demands.items():
                used[rc] = used.get(rc, 0) + amount
        return base.Instance(uuid=inst.uuid, name=inst.name,
                             project_id=inst.project_id, user_id=inst.user_id,
                             allocations=claims)

    def _used_once(self, provider_uuid: str, rc: str) -> None:
        """A one-time-use device in use: reserved = total (nova's rule;
        see provider.keep_one_time_use for when it is written)."""
        child = next(p for p in self._device_children.values()
                     if p.uuid == provider_uuid)
        if rc in child.one_time_use:
            record = child.inventories[rc]
            record['reserved'] = record['total']

    def _cpu_demands(self, inst: facts_mod.InstanceFacts) -> dict[str, int]:
        """{VCPU: n, PCPU: m}: a vCPU pinned to a dedicated CPU (or every
        vCPU of a guest whose nova flavor says hw:cpu_policy=dedicated) is
        a PCPU once [compute] cpu_dedicated_set is set; the rest are VCPU."""
        dedicated = self.cpus.dedicated
        if not dedicated:
            return {'VCPU': inst.vcpus}
        if inst.cpu_policy == 'dedicated':
            pinned = inst.vcpus
        else:
            pinned = sum(1 for pins in inst.vcpu_pins
                         if pins and set(pins) <= dedicated)
        pinned = min(pinned, inst.vcpus)
        return {'VCPU': inst.vcpus - pinned, 'PCPU': pinned}

    def _compute_provider(self, demands: dict[str, int], numa_node: int | None) -> str:
        if not self.numa:
            return self.root.uuid
        if numa_node in self.numa:
            return self.numa[numa_node].uuid
        for node_id in sorted(self.numa):
            child = self.numa[node_id]
            used = self._used.setdefault(child.uuid, {})
            if all(self._room(child, rc, used) >= amount
                   for rc, amount in demands.items() if amount):
                return child.uuid
        return self.numa[min(self.numa)].uuid

    @staticmethod
    def _room(provider: Provider, rc: str, used: dict[str, int]) -> int:
        record = provider.inventories.get(rc)
        if not record:
            return 0
        return capacity(record) - used.get(rc, 0)

    def snapshot(self, instances: Iterable[facts_mod.InstanceFacts]) -> base.HostSnapshot:
        return base.HostSnapshot(
            hostname=self.host, providers=self.providers,
            instances=[self.instance(i) for i in instances],
            drained=dict(self.drained),
            host_devices={d.address for d in self.facts.pci_devices})
