"""The options the agent shares with nova-compute, under nova's names.

An operator points the agent at the nova.conf the host already has: every
option here has nova's group, name, default and meaning, so that file
means the same to both. Options only the agent has live in [tracker] (see
``agent_opts`` and ``drivers.options``). The places these options had
before they took nova's names still work, with a deprecation warning.

Two things nova reads that are not plain options:

- [mdev_<type>] groups, one per [devices] enabled_mdev_types entry, exist
  only once that list is known: ``register_dynamic_opts`` adds them after
  the files are parsed (as nova does).
- the allocation ratios: see ``allocation_ratio``.
"""
from collections.abc import Iterable
import socket

from oslo_config import cfg

from tracker.drivers.errors import DiscoveryError


def formerly(group: str, name: str) -> list[cfg.DeprecatedOpt]:
    """The place an option had before (still read, with a warning)."""
    return [cfg.DeprecatedOpt(name, group=group)]


default_opts: list[cfg.Opt] = [
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<current_hostname>',
               deprecated_opts=formerly('compute', 'host'),
               help='Name of this compute host: the name of its compute '
                    'node (root) provider, the RPC server and the '
                    'notification publisher.'),
    cfg.StrOpt('state_path', default='/var/lib/nova',
               help='Top-level directory of nova\'s state (instances_path '
                    'is under it by default). The agent keeps its own state '
                    'in [tracker] state_path.'),
    cfg.StrOpt('instances_path', default='$state_path/instances',
               deprecated_opts=formerly('compute', 'instances_path'),
               help='Where instances are stored on the hypervisor\'s disk. '
                    'DISK_GB is the size of the filesystem holding it, and '
                    'only disks under it (or in [tracker] images_pool) '
                    'count as an instance\'s local disks.'),
    cfg.IntOpt('reserved_host_cpus', default=0, min=0,
               deprecated_opts=formerly('compute', 'reserved_host_cpus'),
               help='Host CPUs kept for host processes: the reserved VCPU. '
                    'Cannot be set with [compute] cpu_shared_set or '
                    'cpu_dedicated_set (CPUs outside those sets are the '
                    'host\'s).'),
    cfg.IntOpt('reserved_host_memory_mb', default=512, min=0,
               deprecated_opts=formerly('compute', 'reserved_host_memory_mb'),
               help='Memory in MB kept for the host: the reserved '
                    'MEMORY_MB.'),
    cfg.IntOpt('reserved_host_disk_mb', default=0, min=0,
               deprecated_opts=formerly('compute', 'reserved_host_disk_mb'),
               help='Disk in MB kept for the host: the reserved DISK_GB '
                    '(rounded up to whole GiB).'),
    cfg.BoolOpt('force_raw_images', default=True,
                help='Images converted to raw: with images_type rbd or lvm, '
                     'false takes COMPUTE_IMAGE_TYPE_QCOW2 away.'),
    cfg.StrOpt('compute_driver',
               help='nova\'s virt driver. libvirt.LibvirtDriver: the agent '
                    'discovers through libvirt unless [tracker] driver '
                    'says otherwise.'),
    cfg.StrOpt('vcpu_pin_set', deprecated_for_removal=True,
               deprecated_reason='Superseded by [compute] cpu_shared_set '
                                 'and cpu_dedicated_set, as in nova.',
               help='Host CPUs that give VCPU (e.g. "4-12,^8,15"). Cannot be '
                    'set with [compute] cpu_dedicated_set; wins over '
                    '[compute] cpu_shared_set.'),
]

# nova's precedence: a ratio set here (not 0.0) is written; otherwise the
# ratio placement already has is kept (an operator may have set it through
# the API); a new inventory gets the initial ratio.
RATIOS = {'VCPU': 'cpu', 'MEMORY_MB': 'ram', 'DISK_GB': 'disk'}
_INITIAL = {'cpu': 4.0, 'ram': 1.0, 'disk': 1.0}

ratio_opts: list[cfg.Opt] = []
for _kind, _rc in (('cpu', 'VCPU'), ('ram', 'MEMORY_MB'), ('disk', 'DISK_GB')):
    ratio_opts += [
        cfg.FloatOpt('%s_allocation_ratio' % _kind, min=0.0,
                     deprecated_opts=formerly(
                         'compute', '%s_allocation_ratio' % _kind),
                     help='%s allocation ratio. Unset or 0.0: the ratio '
                          'placement has is kept, and a new inventory gets '
                          'initial_%s_allocation_ratio.' % (_rc, _kind)),
        cfg.FloatOpt('initial_%s_allocation_ratio' % _kind,
                     default=_INITIAL[_kind], min=0.0,
                     help='%s allocation ratio of a new inventory when '
                          '%s_allocation_ratio is unset.' % (_rc, _kind)),
    ]

compute_opts: list[cfg.Opt] = [
    cfg.StrOpt('cpu_shared_set',
               help='Host CPUs that give VCPU (e.g. "4-12,^8,15"). Unset: '
                    'every online CPU, or none when cpu_dedicated_set is '
                    'set.'),
    cfg.StrOpt('cpu_dedicated_set',
               help='Host CPUs that give PCPU, for guests with pinned CPUs '
                    '(reserved 0, allocation ratio 1.0).'),
    cfg.ListOpt('image_type_exclude_list', default=[],
                help='Image formats not advertised as COMPUTE_IMAGE_TYPE_* '
                     'traits.'),
    cfg.StrOpt('provider_config_location',
               default='/etc/nova/provider_config/',
               deprecated_opts=formerly('tracker', 'provider_config_location'),
               help='Directory of provider configuration files (*.yaml) '
                    'that add inventories and traits to the providers the '
                    'driver discovers.'),
]

libvirt_opts: list[cfg.Opt] = [
    cfg.StrOpt('connection_uri', default='',
               help='libvirt connection URI. Empty: qemu:///system.'),
    cfg.StrOpt('images_type', default='default',
               choices=['raw', 'flat', 'qcow2', 'lvm', 'rbd', 'ploop',
                        'default'],
               help='Image type of instance disks. With rbd, network disks '
                    'in images_rbd_pool are the instances\' local disks.'),
    cfg.StrOpt('images_rbd_pool', default='rbd',
               help='Ceph pool holding instance disks when images_type is '
                    'rbd.'),
    cfg.StrOpt('virt_type', default='kvm',
               choices=['kvm', 'lxc', 'qemu', 'parallels'],
               help='libvirt domain type: which domain capabilities, VIF '
                    'models and disk buses the COMPUTE_* traits describe.'),
    cfg.BoolOpt('swtpm_enabled', default=False,
                help='Emulated TPM offered to guests: the '
                     'COMPUTE_SECURITY_TPM_* traits.'),
    cfg.ListOpt('supported_tpm_secret_security',
                default=['user', 'host', 'deployment'],
                help='TPM secret security policies offered (with '
                     'swtpm_enabled): COMPUTE_SECURITY_TPM_SECRET_SECURITY_*.'),
    cfg.IntOpt('file_backed_memory', default=0, min=0,
               help='MiB of file-backed guest memory; above 0 the trait '
                    'COMPUTE_MEM_BACKING_FILE.'),
    cfg.StrOpt('cpu_mode',
               choices=['host-model', 'host-passthrough', 'custom', 'none'],
               help='Guest CPU mode. Intel TDX guests need '
                    'host-passthrough: only then is TDX offered '
                    '(MEM_ENCRYPTION_CONTEXT on a <host>_intel_tdx child).'),
    cfg.IntOpt('num_intel_tdx_guests', min=0,
               help='How many Intel TDX guests the host runs at once; when '
                    'unset, the tdx line of the misc cgroup\'s '
                    'misc.capacity (none there: no TDX).'),
]

pci_opts: list[cfg.Opt] = [
    cfg.MultiStrOpt('device_spec', default=[],
                    deprecated_name='passthrough_whitelist',
                    help='A JSON object (or list of objects) selecting PCI '
                         'devices: vendor_id, product_id, address (glob or '
                         '{domain,bus,slot,function}), and optionally '
                         'resource_class, traits and physical_network '
                         '(adds the trait CUSTOM_PHYSNET_<NAME>).'),
    cfg.BoolOpt('report_in_placement', default=False,
                help='Report the devices device_spec selects as child '
                     'providers of the compute node, and claim them for '
                     'the instances using them.'),
]

devices_opts: list[cfg.Opt] = [
    cfg.ListOpt('enabled_mdev_types', default=[],
                deprecated_name='enabled_vgpu_types',
                help='Mediated device types to offer. With more than one, '
                     'each needs a [mdev_<type>] group whose '
                     'device_addresses lists the devices offering it; '
                     'otherwise only the first type is used.'),
]

GROUPS: list[tuple[str, list[cfg.Opt]]] = [
    ('DEFAULT', default_opts + ratio_opts),
    ('compute', compute_opts),
    ('libvirt', libvirt_opts),
    ('pci', pci_opts),
    ('devices', devices_opts),
]


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [(group, list(opts)) for group, opts in GROUPS]


def register(conf: cfg.ConfigOpts) -> cfg.ConfigOpts:
    """Register nova's options on ``conf`` (idempotent)."""
    for group, opts in GROUPS:
        conf.register_opts(opts, group=None if group == 'DEFAULT' else group)
    return conf


# -- [mdev_<type>] -----------------------------------------------------------

def _mdev_opts(mdev_type: str) -> list[cfg.Opt]:
    return [
        cfg.ListOpt('device_addresses', default=[],
                    deprecated_group='vgpu_%s' % mdev_type,
                    help='PCI addresses of the devices offering this type.'),
        cfg.StrOpt('mdev_class', default='VGPU',
                   regex=r'^(VGPU|CUSTOM_[A-Z0-9_]+)$', max_length=255,
                   help='Resource class of this type: VGPU or CUSTOM_*.'),
    ]


def register_dynamic_opts(conf: cfg.ConfigOpts) -> None:
    """Register the [mdev_<type>] group of each enabled mdev type (after
    the files are parsed: the types come from them)."""
    for mdev_type in conf.devices.enabled_mdev_types:
        conf.register_opts(_mdev_opts(mdev_type), group='mdev_%s' % mdev_type)


def mdev_types(conf: cfg.ConfigOpts) -> tuple[dict[str, tuple[str, str]], tuple[str, str] | None]:
    """{device address: (type, resource class)} and the (type, class)
    every other device offers (None when each type names its devices),
    from [devices] enabled_mdev_types and its [mdev_<type>] groups."""
    register_dynamic_opts(conf)
    enabled = list(conf.devices.enabled_mdev_types)
    by_address: dict[str, tuple[str, str]] = {}
    classes: dict[str, str] = {}
    named = True
    for mdev_type in enabled:
        group = 'mdev_%s' % mdev_type
        classes[mdev_type] = conf[group].mdev_class
        if not conf[group].device_addresses:
            named = False
        for address in conf[group].device_addresses:
            address = address.strip().lower()
            if address in by_address:
                raise DiscoveryError(
                    '[%s] device_addresses: %s is already given to mdev '
                    'type %s' % (group, address, by_address[address][0]))
            by_address[address] = (mdev_type, classes[mdev_type])
    if len(enabled) == 1 or (enabled and not named):
        # nova: one type, or a type without addresses: the first type only
        first = enabled[0]
        return {}, (first, classes[first])
    return by_address, None


# -- CPU sets and ratios -------------------------------------------------------

def parse_cpu_set(text: str, option: str) -> set[int]:
    """'4-12,^8,15' -> {4, 5, 6, 7, 9, 10, 11, 12, 15} (nova's syntax)."""
    wanted: set[int] = set()
    excluded: set[int] = set()
    for part in text.split(','):
        part = part.strip()
        if not part:
            continue
        target = excluded if part.startswith('^') else wanted
        low, _, high = part.lstrip('^').partition('-')
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise DiscoveryError('%s: %r is not a CPU number or range'
                                 % (option, part)) from None
        if last < first:
            raise DiscoveryError('%s: invalid range %r' % (option, part))
        target.update(range(first, last + 1))
    cpus = wanted - excluded
    if not cpus:
        raise DiscoveryError('%s = %r leaves no CPU' % (option, text))
    return cpus


class CpuSets:
    """Which online CPUs give VCPU and which give PCPU, nova's way."""

    def __init__(self, conf: cfg.ConfigOpts, online: Iterable[int]) -> None:
        online = set(online)
        pin = conf.vcpu_pin_set
        shared = conf.compute.cpu_shared_set
        dedicated = conf.compute.cpu_dedicated_set
        if pin and dedicated:
            raise DiscoveryError('vcpu_pin_set cannot be set with [compute] '
                                 'cpu_dedicated_set; use cpu_shared_set')
        if conf.reserved_host_cpus and (shared or dedicated):
            raise DiscoveryError(
                'reserved_host_cpus cannot be set with [compute] '
                'cpu_shared_set or cpu_dedicated_set: the CPUs outside '
                'those sets are the host\'s')
        self.dedicated = (parse_cpu_set(dedicated, '[compute] '
                                        'cpu_dedicated_set')
                          if dedicated else set())
        if pin:
            self.shared = parse_cpu_set(pin, 'vcpu_pin_set')
        elif shared:
            self.shared = parse_cpu_set(shared, '[compute] cpu_shared_set')
        else:
            self.shared = set() if dedicated else set(online)
        overlap = self.shared & self.dedicated
        if overlap:
            raise DiscoveryError(
                '[compute] cpu_shared_set and cpu_dedicated_set overlap '
                'on CPUs %s' % ','.join(map(str, sorted(overlap))))
        offline = (self.shared | self.dedicated) - online
        if offline:
            raise DiscoveryError(
                'CPU sets name CPUs that are not online: %s (online: %s)'
                % (','.join(map(str, sorted(offline))),
                   ','.join(map(str, sorted(online)))))


def allocation_ratio(conf: cfg.ConfigOpts, rc: str) -> tuple[float, bool]:
    """(ratio to write for a new inventory, whether placement's wins).

    nova's rule: a configured ratio (not 0.0) is written; without one, the
    ratio placement already has is kept, and a new inventory gets the
    initial ratio.
    """
    kind = RATIOS[rc]
    configured: float | None = conf['%s_allocation_ratio' % kind]
    if configured:
        return configured, False
    initial: float = conf['initial_%s_allocation_ratio' % kind]
    return initial, True


def driver_name(conf: cfg.ConfigOpts) -> str:
    """The agent's discovery driver: [tracker] driver, else the one nova's
    compute_driver implies (libvirt), else the bare host."""
    named: str | None = conf.tracker.driver
    if named:
        return named
    if (conf.compute_driver or '').split('.')[0] == 'libvirt':
        return 'libvirt'
    return 'host'


def connection_uri(conf: cfg.ConfigOpts) -> str:
    uri: str = conf.libvirt.connection_uri or 'qemu:///system'
    return uri
