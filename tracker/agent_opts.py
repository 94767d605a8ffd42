"""Options of the agent itself ([tracker] group).

Options marked ``mutable`` are re-read on SIGHUP without a restart.
"""
from oslo_config import cfg

GROUP = 'tracker'

tracker_opts = [
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
                     'device or disk change (host and libvirt drivers).'),
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
    cfg.StrOpt('aggregates_file',
               help='YAML description of the host aggregates (see '
                    'etc/aggregates.yaml) used by "tracker-manage '
                    'aggregates sync" when --file is not given.'),
]


def host(conf):
    """This agent's name: the RPC server and the notification publisher.

    The same as the compute node's: nova's [DEFAULT] host.
    """
    return conf.host


def register_opts(conf):
    for group, opts in list_opts():
        conf.register_opts(opts, group=group)


def list_opts():
    return [(GROUP, list(tracker_opts))]
