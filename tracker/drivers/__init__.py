"""Discovery drivers: load the one [tracker] driver names.

'host' (sysfs, procfs, psutil), 'libvirt' (libvirt-python) or 'fake' (a
YAML file). Each returns a ``HostSnapshot`` from ``discover()``.

A new kind of device passes through four rooms, in this order (HACKING.md,
"A new device type on the agent"):

1. ``facts``: the plain value both drivers fill (a field of ``HostFacts``
   or ``PciDevice``; of ``InstanceFacts`` when instances consume it);
2. ``host``: the plugin reading that sysfs/procfs source fills it (a new
   source is a new plugin, listed in ``host.PATH_PLUGINS``);
3. ``libvirt.parse``: the same fact from libvirt's XML (a node device, or
   ``Domain`` for what an instance uses), fetched in ``libvirt``;
4. ``layout``: the providers, inventories, traits and the instances'
   claims, one rule for both drivers.

The fake driver describes providers directly: it needs nothing.
"""
from collections.abc import Callable

from oslo_config import cfg

from tracker.drivers.base import Driver
from tracker.drivers.errors import DiscoveryError


def _host(conf: cfg.ConfigOpts) -> Driver:
    from tracker.drivers.host import HostDriver
    return HostDriver(conf)


def _libvirt(conf: cfg.ConfigOpts) -> Driver:
    from tracker.drivers.libvirt import LibvirtDriver
    return LibvirtDriver(conf)


def _fake(conf: cfg.ConfigOpts) -> Driver:
    from tracker.drivers.fake import FakeDriver
    return FakeDriver(conf)


DRIVERS: dict[str, Callable[[cfg.ConfigOpts], Driver]] = {
    'host': _host, 'libvirt': _libvirt, 'fake': _fake}


def load_driver(conf: cfg.ConfigOpts, name: str | None = None) -> Driver:
    """The driver named by ``name``, [tracker] driver or nova's
    compute_driver, configured by ``conf`` (driver options are registered
    on it if they are not yet)."""
    from tracker import nova_opts
    from tracker.drivers import options
    options.register(conf)
    name = name or nova_opts.driver_name(conf)
    try:
        factory = DRIVERS[name]
    except KeyError:
        raise DiscoveryError('unknown driver %r (choose from %s)'
                             % (name, ', '.join(sorted(DRIVERS)))) from None
    return factory(conf)
