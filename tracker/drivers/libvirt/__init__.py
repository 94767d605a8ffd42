"""The libvirt driver: host facts, devices and instances from libvirt.

Host: getInfo (CPUs, memory), getCapabilities (arch, CPU features, NUMA
cells; when libvirt shows no cells, e.g. its test driver, the NUMA nodes
come from sysfs at [tracker] sysfs_root), the versions and domain
capabilities behind nova's COMPUTE_* traits (``capabilities``) and
memory-encryption contexts (``mem_encryption``). Devices: the node device API (PCI
devices with their SR-IOV links and mdev types, existing mdevs). DISK_GB:
the [tracker] images_pool capacity, else the filesystem of [DEFAULT]
instances_path. Instances: every defined domain (a stopped instance still
holds its resources): vcpus and their pinning, memory, local disks, PCI and
mdev host devices, the memory-encryption model (<launchSecurity>), and
project/user and hw:cpu_policy from nova's metadata when present.

A disk is local, and counts toward DISK_GB, when it lives in the images
pool or under instances_path, or (with [libvirt] images_type = rbd) in the
Ceph pool images_rbd_pool; volumes (block devices elsewhere, other network
disks) count 0. Its size is the capacity the guest sees, running or not:
the pool volume's, else libvirt's block info, else the image header (a
sparse qcow2 file is much smaller than its disk). Each disk is rounded up
to whole GiB, as nova sizes flavor disks.

Devices libvirt shows failing (removed or unbound while allocated) are
drained (``health``). When the connection drops (libvirtd restarted) a
discovery reconnects once and starts again.
"""
from collections.abc import Callable
import logging
import os

import libvirt
from oslo_config import cfg

from tracker import nova_opts
from tracker.drivers import base
from tracker.drivers import cpu_traits
from tracker.drivers import drains
from tracker.drivers import facts
from tracker.drivers import image
from tracker.drivers import layout
from tracker.drivers import pci_spec
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.host import disk as host_disk
from tracker.drivers.host import numa as host_numa
from tracker.drivers.host import sysfs
from tracker.drivers.libvirt import capabilities
from tracker.drivers.libvirt import events
from tracker.drivers.libvirt import health
from tracker.drivers.libvirt import mem_encryption
from tracker.drivers.libvirt import parse

LOG = logging.getLogger(__name__)


# libvirt-python has no type information: its connection, domain, device,
# pool and volume objects are Any here (annotated with libvirt's class names
# for the reader).


def _quiet(_ctx: object, _err: object) -> None:
    """libvirt prints every error to stderr by default; we raise them."""


libvirt.registerErrorHandler(_quiet, None)


class LibvirtDriver(base.Driver):
    name = 'libvirt'

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self.uri = nova_opts.connection_uri(conf)
        self.connection: libvirt.virConnect | None = None
        self._warned_read_only = False
        self.health = health.NodeDeviceHealth()
        self.events: events.NodeDeviceEvents | None = None

    def _connect(self) -> libvirt.virConnect:
        if self.connection is None:
            try:
                # Discovery only reads (capabilities, devices, domains,
                # pools): a read-only connection, which also works where
                # the agent may not write (libvirtd's read-only socket).
                self.connection = libvirt.openReadOnly(self.uri)
            except libvirt.libvirtError as exc:
                raise DiscoveryError('cannot connect to libvirt at %s: %s'
                                     % (self.uri, exc)) from None
        return self.connection

    def _alive(self) -> bool:
        if self.connection is None:
            return False
        try:
            return bool(self.connection.isAlive())
        except libvirt.libvirtError:
            return False

    def watch(self, trigger: Callable[[str], None]) -> None:
        """Node-device removals: the device noted for the health judge (an
        allocated one is drained), and a cycle now."""
        def removed(name: str) -> None:
            address = events.pci_address(name)
            if address is not None:
                self.health.device_removed(address)
                trigger('libvirt node device %s removed' % name)
        self.events = events.NodeDeviceEvents(self.uri, removed)
        if not self.events.start():
            self.events = None

    def close(self) -> None:
        if self.events is not None:
            self.events.stop()
            self.events = None
        if self.connection is not None:
            try:
                self.connection.close()
            except libvirt.libvirtError:
                pass                 # already gone
            self.connection = None

    def discover(self) -> base.HostSnapshot:
        for attempt in (1, 2):
            conn = self._connect()
            try:
                return self._discover(conn)
            except libvirt.libvirtError as exc:
                if attempt == 1 and not self._alive():
                    LOG.warning('libvirt connection to %s lost (%s); '
                                'reconnecting', self.uri, exc)
                    self.connection = None
                    continue
                raise DiscoveryError('libvirt discovery failed: %s' % exc) \
                    from None
        raise AssertionError('the second attempt returns or raises')

    def _discover(self, conn: libvirt.virConnect) -> base.HostSnapshot:
        host = self.host_facts(conn)
        instances = [i for i in (self.instance(conn, dom)
                                 for dom in conn.listAllDomains(0)) if i is not None]
        # a failing device is drained before the layout reads the drains
        drains.add(self.conf.tracker.state_path, self.conf.host, self.health.failing(
            host.pci_devices, {a for i in instances for a in i.pci_addresses}))
        return layout.Layout(host, self.conf).snapshot(instances)

    # -- host --------------------------------------------------------------

    def host_facts(self, conn: libvirt.virConnect) -> facts.HostFacts:
        info = conn.getInfo()
        caps_xml = conn.getCapabilities()
        caps = parse.Capabilities(caps_xml)
        nodes = caps.numa_nodes
        if not nodes:
            nodes = host_numa.read_nodes(self._paths())
        # The root reports getInfo's memory, as nova does; NUMA providers
        # their cells' (which can differ: libvirt's test:///default says
        # 3 GiB over cells of 2 + 4 GiB).
        memory_mb: int = info[1]
        host = facts.HostFacts(
            hostname=self.conf.host,
            cpus=list(range(info[2])), memory_mb=memory_mb,
            disk_gb=self.disk_gb(conn),
            cpu_flags=self.cpu_features(conn, caps) & cpu_traits.NOVA_LIBVIRT_FEATURES,
            arch=caps.arch,
            huge_pages_mb=sum(n.huge_pages_mb for n in nodes),
            numa_nodes=nodes)
        self._devices(conn, host)
        specs = pci_spec.DeviceSpecList(self.conf.pci.device_spec)
        remote_managed = any(
            spec.remote_managed for spec in map(specs.match, host.pci_devices)
            if spec is not None)
        domain_conn = self._read_write()
        try:
            libvirt_host = capabilities.Host(
                conn, caps_xml, self.conf.libvirt.virt_type, domain_conn)
        finally:
            if domain_conn is not None:
                domain_conn.close()
        host.traits |= capabilities.traits(libvirt_host, self.conf, remote_managed)
        host.mem_encryption = mem_encryption.contexts(
            [m.encryption for m in libvirt_host.host_machines()],
            libvirt_host.arch, libvirt_host.qemu, self._paths(), self.conf)
        return host

    def _read_write(self) -> libvirt.virConnect | None:
        """A read-write connection for the domain capabilities (libvirt
        refuses them on a read-only one); None where the agent may only
        read: the traits they give are then left out, once warned."""
        try:
            return libvirt.open(self.uri)
        except libvirt.libvirtError as exc:
            if not self._warned_read_only:
                LOG.warning('libvirt at %s refuses a read-write connection '
                            '(%s): no disk bus, video model, Secure Boot, TPM '
                            'or emulated-architecture traits, and no memory '
                            'encryption contexts', self.uri, exc)
                self._warned_read_only = True
            return None

    @staticmethod
    def cpu_features(conn: libvirt.virConnect, caps: parse.Capabilities) -> set[str]:
        """Every feature of the host CPU: its model's, expanded by libvirt,
        plus the extra ones capabilities list."""
        if caps.cpu_xml is None:
            return caps.cpu_features
        try:
            expanded = conn.baselineCPU(
                [caps.cpu_xml], libvirt.VIR_CONNECT_BASELINE_CPU_EXPAND_FEATURES)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() != libvirt.VIR_ERR_NO_SUPPORT:
                raise
            LOG.warning('libvirt cannot expand the CPU model; CPU traits '
                        'come from the extra features only')
            return caps.cpu_features
        return parse.cpu_features(expanded) | caps.cpu_features

    def _paths(self) -> sysfs.HostPaths:
        return sysfs.HostPaths(self.conf.tracker.sysfs_root,
                               self.conf.tracker.proc_root)

    def disk_gb(self, conn: libvirt.virConnect) -> int | None:
        if self.conf.tracker.shared_storage_provider_uuid:
            return None
        pool_name = self.conf.tracker.images_pool
        images_type = self.conf.libvirt.images_type
        if not pool_name and images_type in ('rbd', 'lvm'):
            # nova asks Ceph or LVM for the size; the agent asks libvirt
            raise DiscoveryError(
                '[libvirt] images_type = %s: instance disks are not on the '
                'filesystem of instances_path; set [tracker] images_pool to '
                'the libvirt storage pool holding them, or [tracker] '
                'shared_storage_provider_uuid' % images_type)
        if not pool_name:
            return host_disk.disk_gb(self.conf.instances_path)
        try:
            pool = conn.storagePoolLookupByName(pool_name)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_STORAGE_POOL:
                raise DiscoveryError('[tracker] images_pool %r does not '
                                     'exist' % pool_name) from None
            raise
        capacity: int = pool.info()[1]
        return capacity // facts.GiB

    def _devices(self, conn: libvirt.virConnect, host: facts.HostFacts) -> None:
        parents: dict[str, str] = {}
        for dev in conn.listAllDevices(
                libvirt.VIR_CONNECT_LIST_NODE_DEVICES_CAP_PCI_DEV):
            device = parse.pci_device(dev.XMLDesc(0))
            if device is not None:
                parents[dev.name()] = device.address
                host.pci_devices.append(device)
        host.mdevs = [parse.mdev(dev.XMLDesc(0), parents) for dev in
                      conn.listAllDevices(
                          libvirt.VIR_CONNECT_LIST_NODE_DEVICES_CAP_MDEV)]

    # -- instances ---------------------------------------------------------

    def instance(self, conn: libvirt.virConnect,
                 dom: libvirt.virDomain) -> facts.InstanceFacts | None:
        """The InstanceFacts of a domain; None if it was just deleted."""
        try:
            domain = parse.Domain(dom.XMLDesc(0))
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise
        return facts.InstanceFacts(
            uuid=domain.uuid, name=domain.name,
            project_id=domain.project_id, user_id=domain.user_id,
            vcpus=domain.vcpus, memory_mb=domain.memory_mb,
            disk_gb=sum(facts.ceil_div(self._local_disk_bytes(conn, dom, d),
                                       facts.GiB) for d in domain.disks),
            pci_addresses=domain.pci_addresses,
            mdev_uuids=domain.mdev_uuids, numa_node=domain.numa_node,
            vcpu_pins=domain.vcpu_pins, cpu_policy=domain.cpu_policy,
            mem_encryption=domain.mem_encryption)

    def _local_disk_bytes(self, conn: libvirt.virConnect, dom: libvirt.virDomain,
                          disk: parse.Disk) -> int:
        """What one disk takes from DISK_GB: 0 unless it is local."""
        pool_name = self.conf.tracker.images_pool
        if disk.kind == 'volume' and isinstance(disk.source, tuple):
            pool, name = disk.source
            if pool != pool_name:
                return 0
            return self._capacity(lambda: conn.storagePoolLookupByName(
                pool).storageVolLookupByName(name))
        if disk.kind == 'network':
            if self._in_rbd_pool(disk):
                return self._block_capacity(dom, disk)
            return 0                 # a volume (cinder, nbd, iscsi...)
        if disk.kind not in ('file', 'block') or not isinstance(disk.source, str) \
                or not disk.source:
            return 0
        volume = self._volume_by_path(conn, disk.source)
        size: int
        if volume is not None and pool_name and \
                volume.storagePoolLookupByVolume().name() == pool_name:
            size = volume.info()[1]
            return size
        if not _under(disk.source, self.conf.instances_path):
            return 0                 # a volume attached from elsewhere
        if volume is not None:
            size = volume.info()[1]
            return size
        return self._block_capacity(dom, disk)

    def _in_rbd_pool(self, disk: parse.Disk) -> bool:
        return (self.conf.libvirt.images_type == 'rbd'
                and disk.protocol == 'rbd' and isinstance(disk.source, str)
                and disk.source.startswith(
                    self.conf.libvirt.images_rbd_pool + '/'))

    @staticmethod
    def _block_capacity(dom: libvirt.virDomain, disk: parse.Disk) -> int:
        """The disk's virtual capacity: libvirt's block info (running or
        not), else the image header."""
        try:
            capacity: int = dom.blockInfo(disk.target or disk.source)[0]
            return capacity
        except libvirt.libvirtError as exc:
            LOG.debug('no block info for %s (%s); reading the image',
                      disk.source, exc)
        if disk.kind == 'network' or not isinstance(disk.source, str):
            LOG.warning('cannot size disk %s; counting 0', disk.source)
            return 0
        try:
            return image.virtual_size(disk.source)
        except OSError as exc:
            LOG.warning('cannot size local disk %s (%s); counting 0',
                        disk.source, exc.strerror)
            return 0

    @staticmethod
    def _volume_by_path(conn: libvirt.virConnect,
                        path: str) -> libvirt.virStorageVol | None:
        try:
            return conn.storageVolLookupByPath(path)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_STORAGE_VOL:
                return None
            raise

    @staticmethod
    def _capacity(lookup: Callable[[], libvirt.virStorageVol]) -> int:
        try:
            capacity: int = lookup().info()[1]
            return capacity
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in (libvirt.VIR_ERR_NO_STORAGE_VOL,
                                        libvirt.VIR_ERR_NO_STORAGE_POOL):
                return 0
            raise


def _under(path: str, directory: str) -> bool:
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return os.path.commonpath([path, directory]) == directory
