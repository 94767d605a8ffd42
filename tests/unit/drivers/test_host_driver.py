"""The host driver against fake sysfs trees (and once against the real one).

Each hardware case asserts the whole provider tree and every instance's
allocations.
"""
import json
import os
import shutil

import psutil
import pytest
import yaml

from tracker import nova_opts
from tracker.drivers import load_driver
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.layout import device_uuid
from tracker.drivers.layout import numa_uuid
from tracker.drivers.layout import root_uuid
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory

CPU_TRAITS = {
    'HW_CPU_X86_AESNI', 'HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_BMI',
    'HW_CPU_X86_BMI2', 'HW_CPU_X86_CLMUL', 'HW_CPU_X86_F16C',
    'HW_CPU_X86_FMA3', 'HW_CPU_X86_INTEL_PCID', 'HW_CPU_X86_MMX',
    'HW_CPU_X86_PDPE1GB', 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2',
    'HW_CPU_X86_SSE3', 'HW_CPU_X86_SSE41', 'HW_CPU_X86_SSE42',
    'HW_CPU_X86_SSSE3', 'HW_CPU_X86_VMX', 'HW_CPU_X86_INTEL_VMX'}
ROOT = root_uuid('node1')
SHARED = '5a1e7c0c-0000-4000-8000-5ba4ed5707a9'


# what every host-driver root says besides its CPU flags (this machine is
# an x86_64, as the fake CPU flags are)
ROOT_TRAITS = {'COMPUTE_NODE', 'OWNER_NOVA', 'HW_ARCH_X86_64'}


def disk_gb(path):
    return psutil.disk_usage(path).total // 1024 ** 3


def root(host, vcpu=8, vcpu_reserved=0, memory=16384, memory_reserved=512,
         disk=True, **extra):
    inventories = {}
    if vcpu:
        inventories['VCPU'] = inventory(vcpu, vcpu_reserved,
                                        allocation_ratio=4.0)
    if memory:
        inventories['MEMORY_MB'] = inventory(memory, memory_reserved)
    if disk:
        inventories['DISK_GB'] = inventory(disk_gb(host.instances_path))
    return Provider(uuid=ROOT, name='node1', inventories=inventories,
                    traits=ROOT_TRAITS | CPU_TRAITS, **extra)


def child(name, uuid, inventories, traits=()):
    """A device's provider (nova's, OWNER_NOVA); NUMA nodes are the
    agent's own."""
    owner = set() if 'HW_NUMA_ROOT' in traits else {'OWNER_NOVA'}
    return Provider(uuid=uuid, name=name, parent_uuid=ROOT,
                    inventories=inventories, traits=owner | set(traits))


def instances_file(host, conf, instances):
    path = os.path.join(host.root, 'instances.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump(instances, f)
    conf.set_override('instances_file', path, 'tracker')


def allocations(snapshot):
    return {i.uuid: i.allocations for i in snapshot.instances}


def test_plain_host(conf, fake_host):
    host = fake_host(cpus='0-7', memory_mb=16384)
    conf.set_override('reserved_host_cpus', 1)
    conf.set_override('reserved_host_disk_mb', 1025)
    instances_file(host, conf, [
        {'uuid': 'a1', 'name': 'web', 'project_id': 'p', 'user_id': 'u',
         'vcpus': 2, 'memory_mb': 2048, 'root_gb': 20, 'ephemeral_gb': 5,
         'swap_mb': 1024},
        {'uuid': 'a2', 'vcpus': 1, 'memory_mb': 512}])

    snapshot = load_driver(conf, 'host').discover()

    expected = root(host, vcpu_reserved=1)
    expected.inventories['DISK_GB'] = inventory(
        disk_gb(host.instances_path), reserved=2)
    assert snapshot.hostname == 'node1'
    assert snapshot.providers == [expected]
    assert allocations(snapshot) == {
        'a1': {ROOT: {'VCPU': 2, 'MEMORY_MB': 2048, 'DISK_GB': 26}},
        'a2': {ROOT: {'VCPU': 1, 'MEMORY_MB': 512}}}
    web = snapshot.instances[0]
    assert (web.name, web.project_id, web.user_id) == ('web', 'p', 'u')


def test_two_socket_numa_host(conf, fake_host):
    host = fake_host(cpus='0-15', memory_mb=32768)
    host.numa_node(0, '0-7', 16384)
    host.numa_node(1, '8-15', 16384)
    host.huge_pages(2048, 1024, node=1)
    conf.set_override('numa_providers', True, 'tracker')
    conf.set_override('reserve_huge_pages', True, 'tracker')
    conf.set_override('reserved_host_cpus', 2)
    instances_file(host, conf, {'instances': [
        {'uuid': 'bound', 'vcpus': 4, 'memory_mb': 4096, 'root_gb': 10,
         'numa_node': 1},
        {'uuid': 'free', 'vcpus': 2, 'memory_mb': 1024}]})

    snapshot = load_driver(conf, 'host').discover()

    numa0, numa1 = numa_uuid('node1', 0), numa_uuid('node1', 1)
    assert snapshot.providers == [
        root(host, vcpu=0, memory=0),
        child('node1_NUMA0', numa0, {
            'VCPU': inventory(8, 2, allocation_ratio=4.0),
            'MEMORY_MB': inventory(16384, 512)}, {'HW_NUMA_ROOT'}),
        child('node1_NUMA1', numa1, {
            'VCPU': inventory(8, 0, allocation_ratio=4.0),
            'MEMORY_MB': inventory(16384, 2048)}, {'HW_NUMA_ROOT'}),
    ]
    assert allocations(snapshot) == {
        'bound': {numa1: {'VCPU': 4, 'MEMORY_MB': 4096},
                  ROOT: {'DISK_GB': 10}},
        'free': {numa0: {'VCPU': 2, 'MEMORY_MB': 1024}}}


def test_numa_nodes_without_providers_stay_on_the_root(conf, fake_host):
    host = fake_host(cpus='0-15', memory_mb=32768)
    host.numa_node(0, '0-7', 16384)
    host.numa_node(1, '8-15', 16384)

    snapshot = load_driver(conf, 'host').discover()

    assert snapshot.providers == [root(host, vcpu=16, memory=32768)]


def test_two_sriov_nics_with_64_vfs(conf, fake_host):
    host = fake_host()
    nic1_vfs = host.sriov_nic('0000:81:00.0', '8086', '1528', '1515', 64,
                              numa_node=0)
    nic2_vfs = host.sriov_nic('0000:84:00.0', '8086', '1528', '1515', 64,
                              numa_node=1)
    host.pci_device('0000:05:00.0', '144d', 'a808', '0x010802')   # NVMe
    host.pci_device('0000:00:1f.0', '8086', 'a1c8', '0x060100')   # bridge
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [
        json.dumps({'vendor_id': '8086', 'product_id': '1515',
                    'address': '0000:82:*.*', 'traits': 'physnet_a'}),
        json.dumps([{'vendor_id': '8086', 'product_id': '1515',
                     'address': {'bus': '85'},
                     'resource_class': 'fast_vf'},
                    {'vendor_id': '144d'}]),
    ], 'pci')
    instances_file(host, conf, [
        {'uuid': 'nfv', 'vcpus': 4, 'memory_mb': 4096,
         'pci_devices': [nic1_vfs[0], nic1_vfs[63], nic2_vfs[5],
                         '0000:05:00.0', '0000:00:1f.0']}])

    snapshot = load_driver(conf, 'host').discover()

    nic1 = device_uuid('node1', '0000:81:00.0')
    nic2 = device_uuid('node1', '0000:84:00.0')
    nvme = device_uuid('node1', '0000:05:00.0')
    assert snapshot.providers == [
        root(host),
        child('node1_0000:05:00.0', nvme, {'CUSTOM_PCI_144D_A808': inventory(1)},
              {'COMPUTE_MANAGED_PCI_DEVICE'}),
        child('node1_0000:81:00.0', nic1, {'CUSTOM_PCI_8086_1515': inventory(64)},
              {'CUSTOM_PHYSNET_A', 'COMPUTE_MANAGED_PCI_DEVICE'}),
        child('node1_0000:84:00.0', nic2, {'CUSTOM_FAST_VF': inventory(64)},
              {'COMPUTE_MANAGED_PCI_DEVICE'}),
    ]
    assert allocations(snapshot) == {
        'nfv': {ROOT: {'VCPU': 4, 'MEMORY_MB': 4096},
                nic1: {'CUSTOM_PCI_8086_1515': 2}, nic2: {'CUSTOM_FAST_VF': 1},
                nvme: {'CUSTOM_PCI_144D_A808': 1}}}


def test_pf_offered_whole_when_its_vfs_are_not_chosen(conf, fake_host):
    host = fake_host()
    host.sriov_nic('0000:81:00.0', '8086', '1528', '1515', 4)
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', ['{"product_id": "1528"}'], 'pci')

    snapshot = load_driver(conf, 'host').discover()

    pf = device_uuid('node1', '0000:81:00.0')
    assert snapshot.providers == [
        root(host),
        child('node1_0000:81:00.0', pf, {'CUSTOM_PCI_8086_1528': inventory(1)},
              {'COMPUTE_MANAGED_PCI_DEVICE'})]


def test_two_mdev_types_without_their_groups_use_the_first(conf, fake_host):
    """nova: with several types, a type whose [mdev_<type>] group is
    missing means only the first type is used."""
    host = fake_host()
    both = {'nvidia-222': 14, 'nvidia-223': 8}
    for bus in ('41', '42', '43'):
        host.gpu('0000:%s:00.0' % bus, both, numa_node=0)
    host.gpu('0000:44:00.0', {'nvidia-223': 8}, numa_node=1)
    host.mdev('4b20d080-1b54-4048-85b3-a6a62d165c01', '0000:41:00.0',
              'nvidia-222')
    host.mdev('4b20d080-1b54-4048-85b3-a6a62d165c02', '0000:41:00.0',
              'nvidia-222')
    conf.set_override('enabled_mdev_types', ['nvidia-222', 'nvidia-223'],
                      'devices')
    instances_file(host, conf, [
        {'uuid': 'vdi', 'vcpus': 2, 'memory_mb': 2048,
         'mdevs': ['4B20D080-1B54-4048-85B3-A6A62D165C01']},
        {'uuid': 'vdi2', 'vcpus': 2, 'memory_mb': 2048,
         'mdevs': ['4b20d080-1b54-4048-85b3-a6a62d165c02']}])

    snapshot = load_driver(conf, 'host').discover()

    gpus = [device_uuid('node1', '0000:%s:00.0' % bus)
            for bus in ('41', '42', '43', '44')]
    assert snapshot.providers == [
        root(host),
        child('node1_pci_0000_41_00_0', gpus[0], {'VGPU': inventory(16)},
              {'CUSTOM_MDEV_NVIDIA_222'}),
        child('node1_pci_0000_42_00_0', gpus[1], {'VGPU': inventory(14)},
              {'CUSTOM_MDEV_NVIDIA_222'}),
        child('node1_pci_0000_43_00_0', gpus[2], {'VGPU': inventory(14)},
              {'CUSTOM_MDEV_NVIDIA_222'}),
    ]
    assert allocations(snapshot) == {
        'vdi': {ROOT: {'VCPU': 2, 'MEMORY_MB': 2048}, gpus[0]: {'VGPU': 1}},
        'vdi2': {ROOT: {'VCPU': 2, 'MEMORY_MB': 2048}, gpus[0]: {'VGPU': 1}}}


def test_each_mdev_type_on_the_devices_its_group_names(conf, fake_host):
    host = fake_host()
    both = {'nvidia-222': 14, 'nvidia-223': 8}
    for bus in ('41', '42'):
        host.gpu('0000:%s:00.0' % bus, both)
    host.mdev('4b20d080-1b54-4048-85b3-a6a62d165c03', '0000:42:00.0',
              'nvidia-223')
    conf.set_override('enabled_mdev_types', ['nvidia-222', 'nvidia-223'],
                      'devices')
    nova_opts.register_dynamic_opts(conf)
    conf.set_override('device_addresses', ['0000:41:00.0'], 'mdev_nvidia-222')
    conf.set_override('device_addresses', ['0000:42:00.0'], 'mdev_nvidia-223')
    conf.set_override('mdev_class', 'CUSTOM_T4_SMALL', 'mdev_nvidia-223')
    instances_file(host, conf, [
        {'uuid': 'vdi', 'vcpus': 1, 'memory_mb': 512,
         'mdevs': ['4b20d080-1b54-4048-85b3-a6a62d165c03']}])

    snapshot = load_driver(conf, 'host').discover()

    gpus = [device_uuid('node1', '0000:%s:00.0' % bus) for bus in ('41', '42')]
    assert snapshot.providers == [
        root(host),
        child('node1_pci_0000_41_00_0', gpus[0], {'VGPU': inventory(14)},
              {'CUSTOM_MDEV_NVIDIA_222'}),
        child('node1_pci_0000_42_00_0', gpus[1],
              {'CUSTOM_T4_SMALL': inventory(9)}, {'CUSTOM_MDEV_NVIDIA_223'}),
    ]
    assert allocations(snapshot) == {
        'vdi': {ROOT: {'VCPU': 1, 'MEMORY_MB': 512},
                gpus[1]: {'CUSTOM_T4_SMALL': 1}}}


def test_one_device_given_to_two_mdev_types_is_a_clear_error(conf, fake_host):
    host = fake_host()
    host.gpu('0000:41:00.0', {'nvidia-222': 14, 'nvidia-223': 8})
    conf.set_override('enabled_mdev_types', ['nvidia-222', 'nvidia-223'],
                      'devices')
    nova_opts.register_dynamic_opts(conf)
    conf.set_override('device_addresses', ['0000:41:00.0'], 'mdev_nvidia-222')
    conf.set_override('device_addresses', ['0000:41:00.0'], 'mdev_nvidia-223')

    with pytest.raises(DiscoveryError, match=r'\[mdev_nvidia-223\] '
                       r'device_addresses: 0000:41:00.0 is already given to '
                       r'mdev type nvidia-222'):
        load_driver(conf, 'host').discover()


def test_gpus_are_not_offered_unless_a_type_is_enabled(conf, fake_host):
    host = fake_host()
    host.gpu('0000:41:00.0', {'nvidia-222': 16})

    assert load_driver(conf, 'host').discover().providers == [root(host)]


@pytest.mark.parametrize('aggregate', [None, 'a99b4f2e-7ad3-4c4a-9d5c-1d2e3f4a5b6c'])
def test_shared_storage_host(conf, fake_host, aggregate):
    host = fake_host()
    conf.set_override('shared_storage_provider_uuid', SHARED, 'tracker')
    conf.set_override('shared_storage_aggregate_uuid', aggregate, 'tracker')
    conf.set_override('instances_path', '/nonexistent/nfs')
    instances_file(host, conf, [
        {'uuid': 'db', 'vcpus': 4, 'memory_mb': 8192, 'root_gb': 40,
         'ephemeral_gb': 10}])

    snapshot = load_driver(conf, 'host').discover()

    assert snapshot.providers == [
        root(host, disk=False, aggregates={aggregate or SHARED})]
    assert allocations(snapshot) == {
        'db': {ROOT: {'VCPU': 4, 'MEMORY_MB': 8192},
               SHARED: {'DISK_GB': 50}}}


def test_a_device_unplugged_while_read_is_left_out(conf, fake_host):
    host = fake_host()
    host.pci_device('0000:05:00.0', '144d', 'a808', '0x010802')
    gone = host.pci_device('0000:06:00.0', '144d', 'a808', '0x010802')
    shutil.rmtree(host.path(gone))      # its bus/pci/devices link dangles
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', ['{"vendor_id": "144d"}'], 'pci')

    snapshot = load_driver(conf, 'host').discover()

    assert [p.name for p in snapshot.providers] == [
        'node1', 'node1_0000:05:00.0']


def test_discovery_is_stable_across_runs(conf, fake_host):
    host = fake_host()
    host.sriov_nic('0000:81:00.0', '8086', '1528', '1515', 8)
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', ['{"product_id": "1515"}'], 'pci')
    driver = load_driver(conf, 'host')

    assert driver.discover().providers == driver.discover().providers


def test_real_sys(conf):
    conf.set_override('instances_path', '/')

    snapshot = load_driver(conf, 'host').discover()

    inventories = snapshot.root.inventories
    assert inventories['VCPU']['total'] == psutil.cpu_count()
    assert inventories['MEMORY_MB']['total'] == \
        psutil.virtual_memory().total // 1024 ** 2
    assert inventories['DISK_GB']['total'] == disk_gb('/')
    assert 'COMPUTE_NODE' in snapshot.root.traits
    assert snapshot.instances == []


def test_real_sys_devices_and_numa_nodes(conf):
    """Every real PCI function chosen, real NUMA nodes as providers."""
    conf.set_override('instances_path', '/')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', ['{}'], 'pci')
    conf.set_override('numa_providers', True, 'tracker')

    snapshot = load_driver(conf, 'host').discover()

    nodes = sorted(n for n in os.listdir('/sys/devices/system/node')
                   if n.startswith('node') and n[4:].isdigit())
    numa = snapshot.providers[1:1 + len(nodes)]
    assert [p.name.rsplit('_', 1)[1] for p in numa] == \
        ['NUMA' + n[4:] for n in nodes]
    assert sum(p.inventories['VCPU']['total'] for p in numa) == \
        psutil.cpu_count()
    # every function gets a provider, except VFs (counted on their PF)
    pci = '/sys/bus/pci/devices'
    vfs = {a for a in os.listdir(pci)
           if os.path.exists(os.path.join(pci, a, 'physfn'))}
    devices = snapshot.providers[1 + len(nodes):]
    assert [p.name for p in devices] == [
        '%s_%s' % (snapshot.hostname, a)
        for a in sorted(set(os.listdir(pci)) - vfs)]
    assert len(devices) > 0
    assert {p.parent_uuid for p in devices} == {snapshot.root.uuid}


@pytest.mark.parametrize('spec, message', [
    ('{"vendor_id": ', 'not valid JSON'),
    ('{"vendor": "8086"}', 'unknown keys vendor'),
    ('{"vendor_id": "xyz"}', 'vendor_id must be up to 4 hex digits'),
    ('"8086"', 'must be JSON objects'),
    ('{"address": 5}', 'address must be a string or an object'),
])
def test_bad_device_spec_is_a_clear_error(conf, fake_host, spec, message):
    fake_host()
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('device_spec', [spec], 'pci')

    with pytest.raises(DiscoveryError, match=message):
        load_driver(conf, 'host').discover()


def test_missing_sysfs_is_a_clear_error(conf, tmp_path):
    conf.set_override('sysfs_root', str(tmp_path / 'nosys'), 'tracker')

    with pytest.raises(DiscoveryError, match='nosys/devices/system/cpu/online'
                                             ': it does not exist'):
        load_driver(conf, 'host').discover()


@pytest.mark.parametrize('text, message', [
    ('[{uuid: a', 'is not valid YAML'),
    ('{uuid: a}', 'expected a list of instances'),
    ('[{name: a}]', 'needs at least a uuid'),
    ('[{uuid: a, vcpus: many}]', 'instance a: invalid literal'),
])
def test_bad_instances_file_is_a_clear_error(conf, fake_host, text, message):
    host = fake_host()
    path = os.path.join(host.root, 'instances.yaml')
    with open(path, 'w') as f:
        f.write(text)
    conf.set_override('instances_file', path, 'tracker')

    with pytest.raises(DiscoveryError, match=message):
        load_driver(conf, 'host').discover()


def test_unknown_driver_name(conf):
    with pytest.raises(DiscoveryError, match="unknown driver 'vmware'"):
        load_driver(conf, 'vmware')
