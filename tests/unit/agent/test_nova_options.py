"""Options under nova's names, nova's defaults, and the agent's earlier
option places still read (with a warning)."""
import logging

import pytest

from tracker import conf as tracker_conf
from tracker import nova_opts


def load(tmp_path, text):
    path = tmp_path / 'nova.conf'
    path.write_text(text)
    return tracker_conf.load(['--config-file', str(path)], config_files=[])


def test_nova_defaults(tmp_path):
    conf = load(tmp_path, '')
    assert (conf.state_path, conf.instances_path) == \
        ('/var/lib/nova', '/var/lib/nova/instances')
    assert (conf.reserved_host_cpus, conf.reserved_host_memory_mb,
            conf.reserved_host_disk_mb) == (0, 512, 0)
    assert (conf.cpu_allocation_ratio, conf.ram_allocation_ratio,
            conf.disk_allocation_ratio) == (None, None, None)
    assert (conf.initial_cpu_allocation_ratio,
            conf.initial_ram_allocation_ratio,
            conf.initial_disk_allocation_ratio) == (4.0, 1.0, 1.0)
    assert conf.compute.provider_config_location == \
        '/etc/nova/provider_config/'
    assert (conf.pci.device_spec, conf.pci.report_in_placement) == ([], False)
    assert nova_opts.connection_uri(conf) == 'qemu:///system'
    assert (conf.placement.service_type, conf.placement.valid_interfaces) == \
        ('placement', ['internal', 'public'])
    assert nova_opts.driver_name(conf) == 'host'


def test_instances_path_follows_state_path(tmp_path):
    conf = load(tmp_path, '[DEFAULT]\nstate_path = /srv/nova\n')
    assert conf.instances_path == '/srv/nova/instances'


def test_nova_compute_driver_picks_the_libvirt_driver(tmp_path):
    conf = load(tmp_path, '[DEFAULT]\ncompute_driver = libvirt.LibvirtDriver\n')
    assert nova_opts.driver_name(conf) == 'libvirt'
    conf = load(tmp_path, '[DEFAULT]\ncompute_driver = libvirt.LibvirtDriver\n'
                          '[tracker]\ndriver = fake\n')
    assert nova_opts.driver_name(conf) == 'fake'


@pytest.mark.parametrize('configured, initial, expected', [
    (None, 16.0, (16.0, True)),     # unset: initial, placement's kept
    (0.0, 16.0, (16.0, True)),      # nova: 0.0 means unset too
    (2.0, 16.0, (2.0, False)),      # set: always written
])
def test_allocation_ratio_precedence(tmp_path, configured, initial, expected):
    conf = load(tmp_path, '')
    conf.set_override('cpu_allocation_ratio', configured)
    conf.set_override('initial_cpu_allocation_ratio', initial)
    assert nova_opts.allocation_ratio(conf, 'VCPU') == expected


def test_earlier_places_are_read_with_a_warning(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger='oslo_config.cfg')
    conf = load(tmp_path, '\n'.join([
        '[compute]', 'host = old-name', 'ram_allocation_ratio = 1.5',
        'instances_path = /srv/instances', 'numa_providers = true',
        'shared_storage_provider_uuid = 5a1e7c0c-0000-4000-8000-5ba4ed5707a9',
        '[tracker]', 'provider_config_location = /srv/pc',
        '[host]', 'sysfs_root = /srv/sys',
        '[libvirt]', 'images_pool = instances',
        '[devices]', 'enabled_vgpu_types = nvidia-35',
        '[pci]', 'passthrough_whitelist = {"vendor_id": "8086"}']) + '\n')

    assert conf.host == 'old-name'
    assert conf.ram_allocation_ratio == 1.5
    assert conf.instances_path == '/srv/instances'
    assert conf.compute.provider_config_location == '/srv/pc'
    assert conf.tracker.numa_providers is True
    assert conf.tracker.shared_storage_provider_uuid.startswith('5a1e7c0c')
    assert conf.tracker.sysfs_root == '/srv/sys'
    assert conf.tracker.images_pool == 'instances'
    assert conf.devices.enabled_mdev_types == ['nvidia-35']
    assert conf.pci.device_spec == ['{"vendor_id": "8086"}']
    warned = caplog.text
    for old, new in (('"host" from group "compute"', '"host" from group '
                      '"DEFAULT"'),
                     ('"provider_config_location" from group "tracker"',
                      '"provider_config_location" from group "compute"'),
                     ('"sysfs_root" from group "host"', '"sysfs_root" from '
                      'group "tracker"')):
        assert 'Option %s is deprecated. Use option %s' % (old, new) in warned


def test_mdev_groups_are_read_once_the_types_are_known(tmp_path):
    conf = load(tmp_path, '\n'.join([
        '[devices]', 'enabled_mdev_types = nvidia-35, nvidia-36',
        '[mdev_nvidia-35]', 'device_addresses = 0000:84:00.0,0000:85:00.0',
        # nova's earlier group name, still read
        '[vgpu_nvidia-36]', 'device_addresses = 0000:86:00.0']) + '\n')
    by_address, every_device = nova_opts.mdev_types(conf)
    assert every_device is None
    assert by_address == {'0000:84:00.0': ('nvidia-35', 'VGPU'),
                          '0000:85:00.0': ('nvidia-35', 'VGPU'),
                          '0000:86:00.0': ('nvidia-36', 'VGPU')}
