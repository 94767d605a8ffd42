"""The libvirt driver against libvirt's own test driver (no mocks).

tests/libvirt/host-devices.xml describes the host: an SR-IOV NIC (PF +
4 VFs), an NVMe drive, an ISA bridge, two T4 GPUs with mdev types, one
existing mdev, the 'instances' pool and four domains (local disks,
volume-backed, PCI passthrough, vGPU). test:///default has NUMA cells.
"""
import json
import os

import libvirt
import pytest

from tracker.drivers import cpu_traits
from tracker.drivers import load_driver
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.host import disk
from tracker.drivers.layout import device_uuid
from tracker.drivers.layout import numa_uuid
from tracker.drivers.layout import root_uuid
from tracker.drivers.libvirt import LibvirtDriver
from tracker.drivers.libvirt import parse
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory

HOST_XML = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                        'libvirt', 'host-devices.xml')
HOST_URI = 'test://' + os.path.abspath(HOST_XML)
ROOT = root_uuid('node1')
NIC = device_uuid('node1', '0000:81:00.0')
NVME = device_uuid('node1', '0000:05:00.0')
GPU1 = device_uuid('node1', '0000:41:00.0')
GPU2 = device_uuid('node1', '0000:42:00.0')
SHARED = '5a1e7c0c-0000-4000-8000-5ba4ed5707a9'
PROJECT = '7e9f1a2b3c4d4e5f8a9b0c1d2e3f4a5b'
USER = 'a0e4d2c4f3b84f5c9a5e0d1f2b3c4d5e'
LOCAL, VOLUME, PCI, MDEV, STOPPED = (
    'a1b2c3d4-0000-4000-8000-00000000000%d' % n for n in (1, 2, 3, 4, 5))


# nova's libvirt driver's capability traits on libvirt's test driver (no
# domain capabilities there: no disk bus, video or COMPUTE_ARCH_ traits;
# its version, 9.0.0 for QEMU's 0.0.2, passes the libvirt-only minimums)
TEST_DRIVER_TRAITS = {
    'COMPUTE_NODE', 'OWNER_NOVA', 'HW_ARCH_I686',
    'COMPUTE_ACCELERATORS', 'COMPUTE_ADDRESS_SPACE_EMULATED',
    'COMPUTE_ADDRESS_SPACE_PASSTHROUGH', 'COMPUTE_DEVICE_TAGGING',
    'COMPUTE_IMAGE_TYPE_AKI', 'COMPUTE_IMAGE_TYPE_AMI',
    'COMPUTE_IMAGE_TYPE_ARI', 'COMPUTE_IMAGE_TYPE_ISO',
    'COMPUTE_IMAGE_TYPE_QCOW2', 'COMPUTE_IMAGE_TYPE_RAW',
    'COMPUTE_NET_ATTACH_INTERFACE', 'COMPUTE_NET_ATTACH_INTERFACE_WITH_TAG',
    'COMPUTE_NET_VIF_MODEL_E1000', 'COMPUTE_NET_VIF_MODEL_E1000E',
    'COMPUTE_NET_VIF_MODEL_NE2K_PCI', 'COMPUTE_NET_VIF_MODEL_PCNET',
    'COMPUTE_NET_VIF_MODEL_RTL8139', 'COMPUTE_NET_VIF_MODEL_SPAPR_VLAN',
    'COMPUTE_NET_VIF_MODEL_VIRTIO', 'COMPUTE_NET_VIF_MODEL_VMXNET3',
    'COMPUTE_NET_VIRTIO_PACKED', 'COMPUTE_RESCUE_BFV',
    'COMPUTE_SECURITY_STATELESS_FIRMWARE', 'COMPUTE_SOCKET_PCI_NUMA_AFFINITY',
    'COMPUTE_SOUND_MODEL_AC97', 'COMPUTE_SOUND_MODEL_ES1370',
    'COMPUTE_SOUND_MODEL_ICH6', 'COMPUTE_SOUND_MODEL_ICH9',
    'COMPUTE_SOUND_MODEL_PCSPK', 'COMPUTE_SOUND_MODEL_SB16',
    'COMPUTE_SOUND_MODEL_USB', 'COMPUTE_TRUSTED_CERTS',
    'COMPUTE_VIOMMU_MODEL_AUTO', 'COMPUTE_VIOMMU_MODEL_VIRTIO',
    'COMPUTE_VOLUME_ATTACH_WITH_TAG', 'COMPUTE_VOLUME_EXTEND',
    'COMPUTE_VOLUME_MULTI_ATTACH'}


@pytest.fixture
def devices_host(conf):
    conf.set_override('connection_uri', HOST_URI, 'libvirt')
    conf.set_override('images_pool', 'instances', 'tracker')
    conf.set_override('host', 'node1')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [
        json.dumps({'vendor_id': '8086', 'product_id': '1515'}),
        json.dumps({'vendor_id': '144d'})], 'pci')
    conf.set_override('enabled_mdev_types', ['nvidia-222'], 'devices')
    return conf


def child(name, uuid, inventories, traits=()):
    """A device's provider (nova's, OWNER_NOVA); NUMA nodes are the
    agent's own."""
    owner = set() if 'HW_NUMA_ROOT' in traits else {'OWNER_NOVA'}
    return Provider(uuid=uuid, name=name, parent_uuid=ROOT,
                    inventories=inventories, traits=owner | set(traits))


DEVICE_PROVIDERS = [
    child('node1_0000:05:00.0', NVME, {'CUSTOM_PCI_144D_A808': inventory(1)},
          {'COMPUTE_MANAGED_PCI_DEVICE'}),
    child('node1_pci_0000_41_00_0', GPU1, {'VGPU': inventory(16)},
          {'CUSTOM_MDEV_NVIDIA_222'}),
    child('node1_pci_0000_42_00_0', GPU2, {'VGPU': inventory(16)},
          {'CUSTOM_MDEV_NVIDIA_222'}),
    child('node1_0000:81:00.0', NIC, {'CUSTOM_PCI_8086_1515': inventory(4)},
          {'COMPUTE_MANAGED_PCI_DEVICE'}),
]


def by_uuid(snapshot):
    return {i.uuid: i for i in snapshot.instances}


def allocations(snapshot):
    return {i.uuid: i.allocations for i in snapshot.instances}


def test_devices_host_tree_and_allocations(devices_host):
    snapshot = load_driver(devices_host, 'libvirt').discover()

    assert snapshot.hostname == 'node1'
    assert snapshot.providers == [
        Provider(uuid=ROOT, name='node1', traits=TEST_DRIVER_TRAITS,
                 inventories={
                     'VCPU': inventory(16, allocation_ratio=4.0),
                     'MEMORY_MB': inventory(32768, 512),
                     'DISK_GB': inventory(100)}),
    ] + DEVICE_PROVIDERS
    assert allocations(snapshot) == {
        LOCAL: {ROOT: {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 26}},
        VOLUME: {ROOT: {'VCPU': 4, 'MEMORY_MB': 4096}},
        PCI: {ROOT: {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 10},
              NIC: {'CUSTOM_PCI_8086_1515': 2}, NVME: {'CUSTOM_PCI_144D_A808': 1}},
        MDEV: {ROOT: {'VCPU': 4, 'MEMORY_MB': 8192, 'DISK_GB': 11},
               GPU1: {'VGPU': 1}},
    }
    local = by_uuid(snapshot)[LOCAL]
    assert (local.name, local.project_id, local.user_id) == \
        ('local', PROJECT, USER)
    pci = by_uuid(snapshot)[PCI]
    assert (pci.name, pci.project_id, pci.user_id) == ('pci', None, None)


def test_disks_under_instances_path_without_a_pool(devices_host):
    devices_host.set_override('images_pool', None, 'tracker')
    devices_host.set_override('instances_path', '/var/lib/nova/instances')

    snapshot = load_driver(devices_host, 'libvirt').discover()

    assert snapshot.root.inventories['DISK_GB'] == inventory(
        disk.disk_gb('/var/lib/nova/instances'))
    assert {uuid: a[ROOT].get('DISK_GB') for uuid, a in
            allocations(snapshot).items()} == {
        LOCAL: 26, VOLUME: None, PCI: 10, MDEV: 11}


def test_disks_elsewhere_count_nothing(devices_host):
    devices_host.set_override('images_pool', None, 'tracker')
    devices_host.set_override('instances_path', '/srv/other')

    snapshot = load_driver(devices_host, 'libvirt').discover()

    assert all('DISK_GB' not in a[ROOT]
               for a in allocations(snapshot).values())


def test_numa_nodes_from_sysfs_when_libvirt_shows_none(devices_host,
                                                       fake_host):
    host = fake_host(cpus='0-15', memory_mb=32768)
    host.numa_node(0, '0-7', 16384)
    host.numa_node(1, '8-15', 16384)
    devices_host.set_override('numa_providers', True, 'tracker')

    snapshot = load_driver(devices_host, 'libvirt').discover()

    numa0, numa1 = numa_uuid('node1', 0), numa_uuid('node1', 1)
    assert snapshot.providers == [
        Provider(uuid=ROOT, name='node1', traits=TEST_DRIVER_TRAITS,
                 inventories={'DISK_GB': inventory(100)}),
        child('node1_NUMA0', numa0, {
            'VCPU': inventory(8, allocation_ratio=4.0),
            'MEMORY_MB': inventory(16384, 512)}, {'HW_NUMA_ROOT'}),
        child('node1_NUMA1', numa1, {
            'VCPU': inventory(8, allocation_ratio=4.0),
            'MEMORY_MB': inventory(16384)}, {'HW_NUMA_ROOT'}),
    ] + DEVICE_PROVIDERS
    assert allocations(snapshot) == {
        LOCAL: {numa0: {'VCPU': 2, 'MEMORY_MB': 2048}, ROOT: {'DISK_GB': 26}},
        VOLUME: {numa0: {'VCPU': 4, 'MEMORY_MB': 4096}},
        PCI: {numa0: {'VCPU': 2, 'MEMORY_MB': 1024}, ROOT: {'DISK_GB': 10},
              NIC: {'CUSTOM_PCI_8086_1515': 2}, NVME: {'CUSTOM_PCI_144D_A808': 1}},
        # bound to node 1 by <numatune>
        MDEV: {numa1: {'VCPU': 4, 'MEMORY_MB': 8192}, ROOT: {'DISK_GB': 11},
               GPU1: {'VGPU': 1}},
    }


def test_shared_storage(devices_host):
    devices_host.set_override('shared_storage_provider_uuid', SHARED, 'tracker')

    snapshot = load_driver(devices_host, 'libvirt').discover()

    assert snapshot.root.inventories.keys() == {'VCPU', 'MEMORY_MB'}
    assert snapshot.root.aggregates == {SHARED}
    assert allocations(snapshot)[LOCAL] == {
        ROOT: {'VCPU': 2, 'MEMORY_MB': 2048}, SHARED: {'DISK_GB': 26}}


def test_numa_cells_from_capabilities(conf):
    conf.set_override('connection_uri', 'test:///default', 'libvirt')
    conf.set_override('numa_providers', True, 'tracker')
    conf.set_override('reserved_host_memory_mb', 0)
    conf.set_override('ram_allocation_ratio', 2.0)
    conf.set_override('shared_storage_provider_uuid', SHARED, 'tracker')

    snapshot = load_driver(conf, 'libvirt').discover()

    hostname = libvirt.open('test:///default').getHostname()
    root = root_uuid(hostname)
    numa0, numa1 = numa_uuid(hostname, 0), numa_uuid(hostname, 1)

    def cell(n, uuid, memory):
        return Provider(uuid=uuid, name='%s_NUMA%d' % (hostname, n),
                        parent_uuid=root, traits={'HW_NUMA_ROOT'},
                        inventories={
                            'VCPU': inventory(8, allocation_ratio=4.0),
                            'MEMORY_MB': inventory(memory,
                                                   allocation_ratio=2.0)})
    assert snapshot.providers == [
        Provider(uuid=root, name=hostname, traits=TEST_DRIVER_TRAITS,
                 aggregates={SHARED}),
        cell(0, numa0, 2048), cell(1, numa1, 4096)]
    # 8 GiB fits node 1 only (4096 MiB x 2.0); its disk is not local.
    [test_domain] = snapshot.instances
    assert test_domain.allocations == {numa1: {'VCPU': 2, 'MEMORY_MB': 8192}}


def test_dropped_connection_is_survived(devices_host):
    driver = load_driver(devices_host, 'libvirt')
    before = driver.discover()
    first = driver.connection

    first.close()        # libvirtd went away under the driver
    after = driver.discover()

    assert driver.connection is not first
    assert driver.connection.isAlive()
    assert after == before
    driver.close()
    assert driver.connection is None


def test_unreachable_libvirt_is_a_clear_error(conf, tmp_path):
    conf.set_override('connection_uri',
                      'test://%s/missing.xml' % tmp_path, 'libvirt')

    with pytest.raises(DiscoveryError, match='cannot connect to libvirt at '
                                             'test:///.*missing.xml'):
        load_driver(conf, 'libvirt').discover()


def test_unknown_images_pool_is_a_clear_error(devices_host):
    devices_host.set_override('images_pool', 'nope', 'tracker')

    with pytest.raises(DiscoveryError,
                       match=r"\[tracker\] images_pool 'nope' does not exist"):
        load_driver(devices_host, 'libvirt').discover()


def test_stopped_instance_keeps_its_claims_and_pool_volumes_count(
        devices_host):
    """A defined but shut-off domain still holds its resources (as in
    nova); a type='volume' disk counts when its pool is the images pool."""
    driver = load_driver(devices_host, 'libvirt')
    # The driver reads only; this test changes the host (the test driver's
    # state is per connection) through a writable connection lent to it.
    driver.connection = libvirt.open(HOST_URI)
    driver.discover()
    domain = driver.connection.defineXML("""
      <domain type='test'>
        <name>stopped</name><uuid>%s</uuid>
        <memory unit='MiB'>512</memory><vcpu>1</vcpu>
        <os><type>hvm</type></os>
        <devices>
          <disk type='volume' device='disk'>
            <source pool='instances' volume='pci-disk'/>
            <target dev='vda' bus='virtio'/></disk>
          <disk type='volume' device='disk'>
            <source pool='cinder-volumes' volume='volume-1'/>
            <target dev='vdb' bus='virtio'/></disk>
        </devices>
      </domain>""" % STOPPED)
    assert not domain.isActive()

    snapshot = driver.discover()

    assert allocations(snapshot)[STOPPED] == {
        ROOT: {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}}


# A capabilities <cpu> as a real host reports it: a named model plus the
# features beyond it.
CAPABILITIES = """<capabilities><host>
  <cpu>
    <arch>x86_64</arch>
    <model>Skylake-Client</model>
    <vendor>Intel</vendor>
    <feature name='vmx'/>
    <feature name='pdpe1gb'/>
  </cpu>
</host></capabilities>"""


def test_cpu_model_is_expanded_into_traits():
    conn = libvirt.open('test:///default')
    caps = parse.Capabilities(CAPABILITIES)

    features = LibvirtDriver.cpu_features(conn, caps)

    assert {'avx2', 'aes', 'sse4.2', 'vmx', 'pdpe1gb'} <= features
    assert {'HW_CPU_X86_AVX2', 'HW_CPU_X86_AESNI', 'HW_CPU_X86_SSE42',
            'HW_CPU_X86_VMX', 'HW_CPU_X86_PDPE1GB', 'HW_CPU_X86_FMA3'} <= \
        cpu_traits.traits_for_flags(features)
    assert 'HW_CPU_X86_AVX512F' not in cpu_traits.traits_for_flags(features)


def test_base_pages_are_not_huge_pages(conf):
    """test:///default's cell 1 has 8 KiB base pages and no huge pages."""
    conf.set_override('connection_uri', 'test:///default', 'libvirt')
    conf.set_override('numa_providers', True, 'tracker')
    conf.set_override('reserve_huge_pages', True, 'tracker')
    conf.set_override('reserved_host_memory_mb', 0)

    snapshot = load_driver(conf, 'libvirt').discover()

    assert [p.inventories['MEMORY_MB']['reserved']
            for p in snapshot.providers[1:]] == [0, 0]


def test_a_domain_deleted_during_discovery_is_left_out(devices_host):
    driver = load_driver(devices_host, 'libvirt')
    driver.connection = libvirt.open(HOST_URI)    # writable, lent: see above
    driver.discover()
    conn = driver.connection
    domain = conn.lookupByUUIDString(VOLUME)
    domain.destroy()
    domain.undefine()

    assert driver.instance(conn, domain) is None
    assert VOLUME not in allocations(driver.discover())


@pytest.mark.parametrize('images_type', ['rbd', 'lvm'])
def test_ceph_or_lvm_images_need_a_pool(devices_host, images_type):
    devices_host.set_override('images_pool', None, 'tracker')
    devices_host.set_override('images_type', images_type, 'libvirt')

    with pytest.raises(DiscoveryError, match=r'\[libvirt\] images_type = %s: '
                       r'instance disks are not on the filesystem of '
                       r'instances_path; set \[tracker\] images_pool'
                       % images_type):
        load_driver(devices_host, 'libvirt').discover()


def test_rbd_images_in_the_images_rbd_pool_are_local_disks(devices_host):
    """The 'volume' domain's second disk is rbd volumes/volume-2: a cinder
    volume (0) unless [libvirt] images_rbd_pool is 'volumes' with
    images_type rbd (then it is sized like any local disk)."""
    devices_host.set_override('images_type', 'rbd', 'libvirt')
    devices_host.set_override('images_rbd_pool', 'volumes', 'libvirt')

    snapshot = load_driver(devices_host, 'libvirt').discover()

    # the test driver's block info says 1 TiB for every disk
    assert allocations(snapshot)[VOLUME][ROOT]['DISK_GB'] == 1024
    devices_host.set_override('images_rbd_pool', 'vms', 'libvirt')
    snapshot = load_driver(devices_host, 'libvirt').discover()
    assert 'DISK_GB' not in allocations(snapshot)[VOLUME][ROOT]
