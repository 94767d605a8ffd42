"""Options only the agent's discovery drivers have. Owner: drivers.

Groups: [tracker] (shared storage, NUMA providers, the libvirt images
pool, where the host driver reads) and [fake]. What the drivers share
with nova-compute (host, reservations, allocation ratios, CPU sets,
instance storage, [libvirt], [pci], [devices]) is in ``tracker.nova_opts``
under nova's names.
"""
from oslo_config import cfg

from tracker import nova_opts
from tracker.drivers import drains
from tracker.nova_opts import formerly

# Agent-only options of the drivers, in [tracker]. They once lived in
# nova's groups; those places are still read, with a warning.
tracker_opts: list[cfg.Opt] = [
    cfg.StrOpt('shared_storage_provider_uuid',
               deprecated_opts=formerly('compute', 'shared_storage_provider_uuid'),
               help='Instance disks live on shared storage represented by '
                    'this sharing provider (created by the operator with '
                    'DISK_GB and MISC_SHARES_VIA_AGGREGATE). The compute '
                    'node then reports no DISK_GB, joins the storage '
                    'aggregate, and instances take DISK_GB from it.'),
    cfg.StrOpt('shared_storage_aggregate_uuid',
               deprecated_opts=formerly('compute', 'shared_storage_aggregate_uuid'),
               help='Aggregate shared with the sharing provider. Default: '
                    'the sharing provider uuid itself.'),
    cfg.BoolOpt('numa_providers', default=False,
                deprecated_opts=formerly('compute', 'numa_providers'),
                help='Report each NUMA node as a child provider holding its '
                     'own VCPU, PCPU and MEMORY_MB (the root then holds '
                     'none).'),
    cfg.StrOpt('images_pool',
               deprecated_opts=formerly('libvirt', 'images_pool'),
               help='libvirt storage pool holding instance disks (libvirt '
                    'driver). Default: none; DISK_GB then comes from '
                    '[DEFAULT] instances_path.'),
]

# The host driver's sources (a [host] group would hide nova's [DEFAULT]
# host: oslo.config resolves conf.host to the group).
host_opts: list[cfg.Opt] = [
    cfg.StrOpt('sysfs_root', default='/sys',
               deprecated_opts=formerly('host', 'sysfs_root'),
               help='Root of the sysfs tree the host driver reads.'),
    cfg.StrOpt('proc_root', default='/proc',
               deprecated_opts=formerly('host', 'proc_root'),
               help='Root of the procfs tree (cpuinfo, meminfo).'),
    cfg.BoolOpt('reserve_huge_pages', default=False,
                deprecated_opts=formerly('host', 'reserve_huge_pages'),
                help='Count memory held in huge pages as reserved MEMORY_MB '
                     '(for hosts whose huge pages serve the host, e.g. '
                     'DPDK, and not guests).'),
    cfg.StrOpt('instances_file',
               deprecated_opts=formerly('host', 'instances_file'),
               help='Optional YAML file listing the instances running on '
                    'this host (the host driver sees no hypervisor).'),
]

fake_opts: list[cfg.Opt] = [
    cfg.StrOpt('host_file',
               help='YAML file describing the fake host (providers and '
                    'instances); re-read on every discovery.'),
]

GROUPS: list[tuple[str, list[cfg.Opt]]] = [
    ('tracker', tracker_opts + host_opts),
    ('fake', fake_opts),
]


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [(group, list(opts)) for group, opts in GROUPS]


def register(conf: cfg.ConfigOpts) -> cfg.ConfigOpts:
    """Register every option a driver reads on ``conf``, nova's included
    (idempotent)."""
    nova_opts.register(conf)
    for group, opts in GROUPS:
        conf.register_opts(opts, group=group)
    drains.register(conf)
    return conf
