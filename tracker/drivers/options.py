"""Options of the discovery drivers. Owner: drivers.

Groups: [compute] (what every driver reports the same way: reservations,
allocation ratios, instance storage), [host] (the sysfs/psutil driver),
[libvirt], [fake], [pci] (which devices are reported) and [devices]
(mediated device types).
"""
from oslo_config import cfg

compute_opts = [
    cfg.StrOpt('host',
               help='Name of this compute node (its root provider). '
                    'Default: what the driver sees (the machine hostname, '
                    'or libvirt getHostname()).'),
    cfg.IntOpt('reserved_host_cpus', default=0, min=0,
               help='VCPUs kept for the host, reported as reserved.'),
    cfg.IntOpt('reserved_host_memory_mb', default=512, min=0,
               help='MEMORY_MB kept for the host, reported as reserved.'),
    cfg.IntOpt('reserved_host_disk_mb', default=0, min=0,
               help='Disk kept for the host, reported as reserved DISK_GB '
                    '(rounded up to whole GiB).'),
    cfg.FloatOpt('cpu_allocation_ratio', default=4.0, min=0.0,
                 help='VCPU allocation ratio.'),
    cfg.FloatOpt('ram_allocation_ratio', default=1.0, min=0.0,
                 help='MEMORY_MB allocation ratio.'),
    cfg.FloatOpt('disk_allocation_ratio', default=1.0, min=0.0,
                 help='DISK_GB allocation ratio.'),
    cfg.StrOpt('instances_path', default='/var/lib/nova/instances',
               help='Where instance disks live; DISK_GB is the size of the '
                    'filesystem holding it.'),
    cfg.StrOpt('shared_storage_provider_uuid',
               help='Instance disks live on shared storage represented by '
                    'this sharing provider (created by the operator with '
                    'DISK_GB and MISC_SHARES_VIA_AGGREGATE). The compute '
                    'node then reports no DISK_GB, joins the storage '
                    'aggregate, and instances take DISK_GB from it.'),
    cfg.StrOpt('shared_storage_aggregate_uuid',
               help='Aggregate shared with the sharing provider. Default: '
                    'the sharing provider uuid itself.'),
    cfg.BoolOpt('numa_providers', default=False,
                help='Report each NUMA node as a child provider holding its '
                     'own VCPU and MEMORY_MB (the root then holds none).'),
]

host_opts = [
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Root of the sysfs tree the host driver reads.'),
    cfg.StrOpt('proc_root', default='/proc',
               help='Root of the procfs tree (cpuinfo, meminfo).'),
    cfg.BoolOpt('reserve_huge_pages', default=False,
                help='Count memory held in huge pages as reserved MEMORY_MB '
                     '(for hosts whose huge pages serve the host, e.g. '
                     'DPDK, and not guests).'),
    cfg.StrOpt('instances_file',
               help='Optional YAML file listing the instances running on '
                    'this host (the host driver sees no hypervisor).'),
]

libvirt_opts = [
    cfg.StrOpt('connection_uri', default='qemu:///system',
               help='libvirt connection URI.'),
    cfg.StrOpt('images_pool',
               help='Storage pool holding instance disks. Default: none; '
                    'DISK_GB then comes from [compute] instances_path.'),
]

fake_opts = [
    cfg.StrOpt('host_file',
               help='YAML file describing the fake host (providers and '
                    'instances); re-read on every discovery.'),
]

pci_opts = [
    cfg.MultiStrOpt('device_spec', default=[],
                    help='A JSON object (or list of objects) selecting PCI '
                         'devices to report, like nova\'s [pci] '
                         'device_spec: vendor_id, product_id, address (glob '
                         'or {domain,bus,slot,function}), and optionally '
                         'resource_class, traits and physical_network '
                         '(adds the trait CUSTOM_PHYSNET_<NAME>).'),
]

devices_opts = [
    cfg.ListOpt('enabled_mdev_types', default=[],
                help='Mediated device types to offer as VGPU, in order of '
                     'preference: each GPU offers the first one it supports.'),
]

GROUPS = [
    ('compute', compute_opts),
    ('host', host_opts),
    ('libvirt', libvirt_opts),
    ('fake', fake_opts),
    ('pci', pci_opts),
    ('devices', devices_opts),
]


def list_opts():
    return [(group, list(opts)) for group, opts in GROUPS]


def register(conf):
    """Register the driver options on ``conf`` (idempotent)."""
    for group, opts in GROUPS:
        conf.register_opts(opts, group=group)
    return conf
