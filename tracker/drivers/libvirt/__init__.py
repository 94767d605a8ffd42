"""The libvirt driver: host facts, devices and instances from libvirt.

Host: getInfo (CPUs, memory) and getCapabilities (arch, CPU features, NUMA
cells; when libvirt shows no cells, e.g. its test driver, the NUMA nodes
come from sysfs at [host] sysfs_root). Devices: the node device API (PCI
devices with their SR-IOV links and mdev types, existing mdevs). DISK_GB:
the [libvirt] images_pool capacity, else the filesystem of [compute]
instances_path. Instances: every defined domain (a stopped instance still
holds its resources): vcpus, memory, local disks, PCI and mdev host devices,
and project/user from nova's metadata when present.

A disk is local, and counts toward DISK_GB, when it lives in the images
pool or under instances_path; volumes (block devices elsewhere, network
disks) count 0. Its size is the libvirt volume capacity, else the file size.

When the connection drops (libvirtd restarted) a discovery reconnects once
and starts again.
"""
import logging
import os

import libvirt

from tracker.drivers import base
from tracker.drivers import facts
from tracker.drivers import layout
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.host import disk as host_disk
from tracker.drivers.host import numa as host_numa
from tracker.drivers.host import sysfs
from tracker.drivers.libvirt import parse

LOG = logging.getLogger(__name__)


def _quiet(_ctx, _err):
    """libvirt prints every error to stderr by default; we raise them."""


libvirt.registerErrorHandler(_quiet, None)


class LibvirtDriver(base.Driver):
    name = 'libvirt'

    def __init__(self, conf):
        self.conf = conf
        self.uri = conf.libvirt.connection_uri
        self.connection = None

    def _connect(self):
        if self.connection is None:
            try:
                self.connection = libvirt.open(self.uri)
            except libvirt.libvirtError as exc:
                raise DiscoveryError('cannot connect to libvirt at %s: %s'
                                     % (self.uri, exc)) from None
        return self.connection

    def _alive(self):
        try:
            return bool(self.connection.isAlive())
        except libvirt.libvirtError:
            return False

    def close(self):
        if self.connection is not None:
            try:
                self.connection.close()
            except libvirt.libvirtError:
                pass                 # already gone
            self.connection = None

    def discover(self):
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

    def _discover(self, conn):
        host = self.host_facts(conn)
        tree = layout.Layout(host, self.conf)
        instances = [self.instance(conn, dom)
                     for dom in conn.listAllDomains(0)]
        return tree.snapshot([i for i in instances if i is not None])

    # -- host --------------------------------------------------------------

    def host_facts(self, conn):
        info = conn.getInfo()
        caps = parse.Capabilities(conn.getCapabilities())
        nodes = caps.numa_nodes
        if not nodes:
            nodes = host_numa.read_nodes(self._paths())
        # The cells are what NUMA providers report; the root reports their
        # sum too, so both layouts agree (getInfo can say less: libvirt's
        # test:///default says 3 GiB over cells of 2 + 4 GiB).
        memory_mb = sum(n.memory_mb for n in caps.numa_nodes) or info[1]
        host = facts.HostFacts(
            hostname=self.conf.compute.host or conn.getHostname(),
            cpus=list(range(info[2])), memory_mb=memory_mb,
            disk_gb=self.disk_gb(conn), cpu_flags=self.cpu_features(conn, caps),
            arch=caps.arch,
            huge_pages_mb=sum(n.huge_pages_mb for n in nodes),
            numa_nodes=nodes)
        self._devices(conn, host)
        return host

    @staticmethod
    def cpu_features(conn, caps):
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

    def _paths(self):
        return sysfs.HostPaths(self.conf.host.sysfs_root,
                               self.conf.host.proc_root)

    def disk_gb(self, conn):
        compute = self.conf.compute
        if compute.shared_storage_provider_uuid:
            return None
        pool_name = self.conf.libvirt.images_pool
        if not pool_name:
            return host_disk.disk_gb(compute.instances_path)
        try:
            pool = conn.storagePoolLookupByName(pool_name)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_STORAGE_POOL:
                raise DiscoveryError('[libvirt] images_pool %r does not '
                                     'exist' % pool_name) from None
            raise
        return pool.info()[1] // facts.GiB

    def _devices(self, conn, host):
        parents = {}
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

    def instance(self, conn, dom):
        """The InstanceFacts of a domain; None if it was just deleted."""
        try:
            domain = parse.Domain(dom.XMLDesc(0))
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_DOMAIN:
                return None
            raise
        disk_bytes = sum(self._local_disk_bytes(conn, kind, where)
                         for kind, where in domain.disks)
        return facts.InstanceFacts(
            uuid=domain.uuid, name=domain.name,
            project_id=domain.project_id, user_id=domain.user_id,
            vcpus=domain.vcpus, memory_mb=domain.memory_mb,
            disk_gb=facts.ceil_div(disk_bytes, facts.GiB),
            pci_addresses=domain.pci_addresses,
            mdev_uuids=domain.mdev_uuids, numa_node=domain.numa_node)

    def _local_disk_bytes(self, conn, kind, where):
        pool_name = self.conf.libvirt.images_pool
        if kind == 'volume' and where:
            if where[0] != pool_name:
                return 0
            return self._capacity(lambda: conn.storagePoolLookupByName(
                where[0]).storageVolLookupByName(where[1]))
        if kind not in ('file', 'block') or not where:
            return 0                 # network disks are volumes: 0
        volume = self._volume_by_path(conn, where)
        if volume is not None and pool_name and \
                volume.storagePoolLookupByVolume().name() == pool_name:
            return volume.info()[1]
        if not _under(where, self.conf.compute.instances_path):
            return 0                 # a volume attached from elsewhere
        if volume is not None:
            return volume.info()[1]
        try:
            return os.path.getsize(where)
        except OSError:
            LOG.warning('cannot size local disk %s; counting 0', where)
            return 0

    @staticmethod
    def _volume_by_path(conn, path):
        try:
            return conn.storageVolLookupByPath(path)
        except libvirt.libvirtError as exc:
            if exc.get_error_code() == libvirt.VIR_ERR_NO_STORAGE_VOL:
                return None
            raise

    @staticmethod
    def _capacity(lookup):
        try:
            return lookup().info()[1]
        except libvirt.libvirtError as exc:
            if exc.get_error_code() in (libvirt.VIR_ERR_NO_STORAGE_VOL,
                                        libvirt.VIR_ERR_NO_STORAGE_POOL):
                return 0
            raise


def _under(path, directory):
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return os.path.commonpath([path, directory]) == directory
