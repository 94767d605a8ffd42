"""From what a driver saw to the provider tree and the instances' claims.

One place decides, for every driver, what the tree looks like:

- the root compute node: name = host, uuid = stable_uuid('compute-node',
  host), trait COMPUTE_NODE plus HW_CPU_* from the CPU flags; VCPU,
  MEMORY_MB and DISK_GB (none of DISK_GB when instance disks live on shared
  storage: the root then joins the storage aggregate instead);
- with [compute] numa_providers, one child per NUMA node '<host>_NUMA<n>'
  (trait HW_NUMA_ROOT) holding that node's VCPU and MEMORY_MB instead of
  the root; host reservations are taken from node 0 first;
- one child '<host>_<address>' (uuid stable_uuid(host, 'pci', address)) per
  device chosen by [pci] device_spec: a plain device or PF offers one
  PCI_DEVICE (or the spec's class); chosen VFs are counted on their PF's
  provider as SRIOV_NET_VF (network class) or PCI_DEVICE; a PF whose VFs
  are chosen is not offered whole;
- one child per GPU offering an [devices] enabled_mdev_types type: VGPU =
  available instances + mdevs of that type already there, and the trait
  CUSTOM_MDEV_<TYPE>.

Instances consume VCPU and MEMORY_MB from the root (or from their NUMA
node's provider: the node they are bound to, else the first with room),
DISK_GB from the root or the sharing provider, one unit per passthrough
device from that device's provider and one VGPU per mdev from its GPU's.
Devices the tree does not report are not claimed.
"""
import logging

from tracker.drivers import base
from tracker.drivers import cpu_traits
from tracker.drivers import facts as facts_mod
from tracker.drivers import pci_spec
from tracker.providers.provider import Provider, inventory, stable_uuid

LOG = logging.getLogger(__name__)


def root_uuid(hostname):
    return stable_uuid('compute-node', hostname)


def device_uuid(hostname, address):
    return stable_uuid(hostname, 'pci', address)


def numa_uuid(hostname, node_id):
    return stable_uuid(hostname, 'numa', node_id)


class _Pool:
    """Greedily hands out a host reservation across providers."""

    def __init__(self, amount):
        self.left = amount

    def take(self, total):
        taken = min(self.left, total)
        self.left -= taken
        return taken


def _add(provider, rc, total, reserved=0, ratio=1.0):
    if total > 0:     # placement refuses an inventory of total 0
        provider.inventories[rc] = inventory(
            total, reserved=min(reserved, total), allocation_ratio=ratio)


def _fit_largest(record):
    """Let one allocation take the whole capacity, overcommit included: a
    guest bigger than physical memory runs on an overcommitted host, and
    the tracker must be able to report it (max_unit = total would refuse
    its allocation forever)."""
    if record:
        capacity = int((record['total'] - record['reserved'])
                       * record['allocation_ratio'])
        record['max_unit'] = max(record['total'], capacity)


class Layout:
    """The provider tree for one ``HostFacts``, and claims against it."""

    def __init__(self, facts, conf):
        self.facts = facts
        self.conf = conf
        self.host = facts.hostname
        self.root = Provider(uuid=root_uuid(self.host), name=self.host)
        self.numa = {}            # node id -> Provider
        self.devices = {}         # PCI address -> (provider uuid, rc)
        self.gpus = {}            # GPU address -> provider uuid
        self._device_children = {}  # owner PCI address -> Provider
        self._used = {}           # NUMA provider uuid -> {rc: used}
        self._mdev_parents = {m.uuid: m.parent for m in facts.mdevs}
        compute = conf.compute
        self.sharing_uuid = compute.shared_storage_provider_uuid
        self._build_root()
        if compute.numa_providers and facts.numa_nodes:
            self._build_numa()
        self._build_devices()

    @property
    def providers(self):
        """Root, NUMA nodes by id, then devices by address."""
        return ([self.root] + [self.numa[n] for n in sorted(self.numa)]
                + [self._device_children[a]
                   for a in sorted(self._device_children)])

    # -- the tree ----------------------------------------------------------

    def _build_root(self):
        facts, compute = self.facts, self.conf.compute
        root = self.root
        root.traits = ({'COMPUTE_NODE'} | set(facts.traits)
                       | cpu_traits.traits_for_flags(facts.cpu_flags, facts.arch))
        numa = compute.numa_providers and facts.numa_nodes
        if not numa:
            _add(root, 'VCPU', len(facts.cpus), compute.reserved_host_cpus,
                 compute.cpu_allocation_ratio)
            _add(root, 'MEMORY_MB', facts.memory_mb, self._reserved_memory(),
                 compute.ram_allocation_ratio)
            _fit_largest(root.inventories.get('MEMORY_MB'))
        if self.sharing_uuid:
            root.aggregates = {compute.shared_storage_aggregate_uuid
                               or self.sharing_uuid}
        elif facts.disk_gb:
            _add(root, 'DISK_GB', facts.disk_gb,
                 facts_mod.ceil_div(compute.reserved_host_disk_mb, 1024),
                 compute.disk_allocation_ratio)

    def _reserved_memory(self):
        reserved = self.conf.compute.reserved_host_memory_mb
        if self._reserve_huge_pages():
            reserved += self.facts.huge_pages_mb
        return reserved

    def _reserve_huge_pages(self):
        return self.conf.host.reserve_huge_pages

    def _build_numa(self):
        compute = self.conf.compute
        cpus = _Pool(compute.reserved_host_cpus)
        memory = _Pool(compute.reserved_host_memory_mb)
        for node in sorted(self.facts.numa_nodes, key=lambda n: n.id):
            child = Provider(uuid=numa_uuid(self.host, node.id),
                             name='%s_NUMA%d' % (self.host, node.id),
                             parent_uuid=self.root.uuid,
                             traits={'HW_NUMA_ROOT'})
            mem_reserved = memory.take(node.memory_mb)
            if self._reserve_huge_pages():
                mem_reserved += node.huge_pages_mb
            _add(child, 'VCPU', len(node.cpus), cpus.take(len(node.cpus)),
                 compute.cpu_allocation_ratio)
            _add(child, 'MEMORY_MB', node.memory_mb, mem_reserved,
                 compute.ram_allocation_ratio)
            self.numa[node.id] = child

    def _device_provider(self, address):
        if address not in self._device_children:
            self._device_children[address] = Provider(
                uuid=device_uuid(self.host, address),
                name='%s_%s' % (self.host, address),
                parent_uuid=self.root.uuid)
        return self._device_children[address]

    def _build_devices(self):
        specs = pci_spec.DeviceSpecList(self.conf.pci.device_spec)
        enabled = list(self.conf.devices.enabled_mdev_types)
        chosen = {}               # address -> (device, spec)
        for device in sorted(self.facts.pci_devices, key=lambda d: d.address):
            mdev_type = next((t for t in enabled if t in device.mdev_types),
                             None)
            if mdev_type:
                self._add_gpu(device, mdev_type)
                continue
            spec = specs.match(device)
            if spec:
                chosen[device.address] = (device, spec)
        vf_parents = {d.physfn for d, _ in chosen.values() if d.is_vf}
        for address, (device, spec) in chosen.items():
            if address in vf_parents:
                continue          # its VFs are offered instead
            if device.is_vf:
                owner = device.physfn
                default_rc = ('SRIOV_NET_VF' if device.class_id.startswith('02')
                              else 'PCI_DEVICE')
            else:
                owner, default_rc = address, 'PCI_DEVICE'
            rc = spec.resource_class or default_rc
            child = self._device_provider(owner)
            record = child.inventories.get(rc)
            _add(child, rc, (record['total'] if record else 0) + 1)
            child.traits |= spec.traits
            if rc == 'SRIOV_NET_VF':
                child.traits.add('HW_NIC_SRIOV')
            self.devices[address] = (child.uuid, rc)

    def _add_gpu(self, device, mdev_type):
        existing = sum(1 for m in self.facts.mdevs
                       if m.parent == device.address and m.type == mdev_type)
        child = self._device_provider(device.address)
        _add(child, 'VGPU', device.mdev_types[mdev_type] + existing)
        child.traits.add(pci_spec.custom_name('MDEV_' + mdev_type))
        self.gpus[device.address] = child.uuid

    # -- claims ------------------------------------------------------------

    def instance(self, inst):
        """The ``Instance`` (with allocations) for ``InstanceFacts``."""
        claims = {}

        def claim(provider_uuid, rc, amount):
            if amount:
                rcs = claims.setdefault(provider_uuid, {})
                rcs[rc] = rcs.get(rc, 0) + amount

        compute_uuid = self._compute_provider(inst)
        claim(compute_uuid, 'VCPU', inst.vcpus)
        claim(compute_uuid, 'MEMORY_MB', inst.memory_mb)
        claim(self.sharing_uuid or self.root.uuid, 'DISK_GB', inst.disk_gb)
        for address in inst.pci_addresses:
            if address in self.devices:
                claim(*self.devices[address], 1)
            else:
                LOG.debug('instance %s uses unreported device %s',
                          inst.uuid, address)
        for mdev in inst.mdev_uuids:
            gpu = self.gpus.get(self._mdev_parents.get(mdev))
            if gpu:
                claim(gpu, 'VGPU', 1)
        if self.numa:
            used = self._used.setdefault(compute_uuid, {})
            used['VCPU'] = used.get('VCPU', 0) + inst.vcpus
            used['MEMORY_MB'] = used.get('MEMORY_MB', 0) + inst.memory_mb
        return base.Instance(uuid=inst.uuid, name=inst.name,
                             project_id=inst.project_id, user_id=inst.user_id,
                             allocations=claims)

    def _compute_provider(self, inst):
        if not self.numa:
            return self.root.uuid
        if inst.numa_node in self.numa:
            return self.numa[inst.numa_node].uuid
        for node_id in sorted(self.numa):
            child = self.numa[node_id]
            used = self._used.setdefault(child.uuid, {})
            if all(self._room(child, rc, used) >= amount for rc, amount in
                   (('VCPU', inst.vcpus), ('MEMORY_MB', inst.memory_mb))):
                return child.uuid
        return self.numa[min(self.numa)].uuid

    @staticmethod
    def _room(provider, rc, used):
        record = provider.inventories.get(rc)
        if not record:
            return 0
        capacity = (record['total'] - record['reserved']) \
            * record['allocation_ratio']
        return capacity - used.get(rc, 0)

    def snapshot(self, instances):
        return base.HostSnapshot(
            hostname=self.host, providers=self.providers,
            instances=[self.instance(i) for i in instances])
