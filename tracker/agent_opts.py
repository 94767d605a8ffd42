"""Options of the agent itself ([tracker] group).

Options marked ``mutable`` are re-read on SIGHUP without a restart.
"""
from oslo_config import cfg

GROUP = 'tracker'

tracker_opts: list[cfg.Opt] = [
    cfg.StrOpt('driver', choices=['libvirt', 'host', 'fake'],
               help='Discovery driver. Default: libvirt when nova\'s '
                    '[DEFAULT] compute_driver is libvirt.LibvirtDriver, '
                    'else host (sysfs, procfs, psutil).'),
    cfg.IntOpt('interval', default=60, min=1, mutable=True,
               help='Seconds between two cycles (discover, then sync).'),
    cfg.IntOpt('jitter', default=10, min=0, mutable=True,
               help='Up to this many seconds are added at random to each '
                    'wait, so that hosts do not all sync at the same time.'),
    cfg.IntOpt('backoff_max', default=300, min=1, mutable=True,
               help='Longest wait, in seconds, between retries while '
                    'placement is unreachable (the wait doubles from '
                    'interval/4 up to this).'),
    cfg.BoolOpt('authoritative_allocations', default=True, mutable=True,
                help='The agent owns the allocations of the providers of '
                     'its host: allocations of consumers no longer running '
                     'here are deleted.'),
    cfg.BoolOpt('notifications', default=True,
                help='Send versioned notifications (oslo.messaging) when '
                     'providers or allocations change. The transport is '
                     '[oslo_messaging_notifications] transport_url or '
                     '[DEFAULT] transport_url.'),
    cfg.BoolOpt('rpc', default=True,
                help='Listen on the RPC topic "tracker" (server = host) for '
                     'refresh and audit requests.'),
    cfg.BoolOpt('hardware_events', default=True,
                help='Run a cycle as soon as udev reports a PCI, mediated '
                     'device or disk change (host and libvirt drivers), or '
                     'libvirt a node device removed (libvirt driver: an '
                     'allocated one is drained).'),
    cfg.PortOpt('metrics_port', default=0,
                help='Serve Prometheus metrics on this port; 0 disables.'),
    cfg.HostAddressOpt('metrics_host', default='127.0.0.1',
                       help='Address the metrics endpoint listens on.'),
    cfg.StrOpt('state_path', default='/var/lib/tracker',
               help='Directory of the agent\'s own state: which traits and '
                    'aggregates it wrote (ownership-<host>.json), so that '
                    'after a restart it still removes those the host no '
                    'longer reports and never those others wrote. Empty: '
                    'in memory only. (nova\'s [DEFAULT] state_path is '
                    'nova\'s.)'),
    cfg.StrOpt('nova_compute', default='auto',
               choices=[('auto', 'beside when nova\'s compute_id file is in '
                                 '[DEFAULT] state_path, else absent'),
                        ('beside', 'nova-compute runs on this host: adopt its '
                                   'compute node provider, check allocations only'),
                        ('absent', 'no nova-compute here: the agent reports the '
                                   'host itself')],
               help='Whether nova-compute runs beside the agent. Beside it, '
                    'the agent takes nova\'s root provider (the uuid in '
                    '$state_path/compute_id) and its children as nova\'s, '
                    'writes none of their inventories, traits or aggregates, '
                    'and only compares the guests\' allocations with the '
                    'hypervisor\'s domains.'),
    cfg.BoolOpt('repair_allocations', default=False, mutable=True,
                help='Beside nova-compute: the daemon repairs the allocation '
                     'findings of each cycle that it may repair (missing or '
                     'wrong sizes and device parts; leftovers nova\'s API '
                     'says nova knows nothing of). Never what nova may hold '
                     'for a move (docs/agent.md). Off: it reports them only '
                     '(metrics, notifications, log); tracker-audit --fix '
                     'repairs on demand.'),
    cfg.IntOpt('migration_max_age', default=86400, min=0, mutable=True,
               help='Beside nova-compute, when nova\'s API cannot be asked: '
                    'seconds after which a consumer typed MIGRATION on this '
                    'host\'s providers is reported stale (age from the first '
                    'time the agent saw it; placement keeps no creation time). '
                    'It is never removed by the agent.'),
    cfg.IntOpt('orphan_grace', default=300, min=0, mutable=True,
               help='Beside nova-compute: seconds a consumer may hold '
                    'resources here without a domain before it is reported '
                    '(the scheduler allocates before nova-compute defines the '
                    'guest). What nova holds for a move is never written, '
                    'whatever the grace.'),
    cfg.StrOpt('aggregates_file',
               help='YAML description of the host aggregates (see '
                    'etc/aggregates.yaml) used by "tracker-manage '
                    'aggregates sync" when --file is not given.'),
]


def host(conf: cfg.ConfigOpts) -> str:
    """This agent's name: the RPC server and the notification publisher.

    The same as the compute node's: nova's [DEFAULT] host.
    """
    name: str = conf.host
    return name


def register_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in list_opts():
        conf.register_opts(opts, group=group)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    return [(GROUP, list(tracker_opts))]
