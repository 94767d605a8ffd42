"""Discovery drivers: load the one [tracker] driver names.

'host' (sysfs, procfs, psutil), 'libvirt' (libvirt-python) or 'fake' (a
YAML file). Each returns a ``HostSnapshot`` from ``discover()``.
"""
from tracker.drivers.errors import DiscoveryError


def _host(conf):
    from tracker.drivers.host import HostDriver
    return HostDriver(conf)


def _libvirt(conf):
    from tracker.drivers.libvirt import LibvirtDriver
    return LibvirtDriver(conf)


def _fake(conf):
    from tracker.drivers.fake import FakeDriver
    return FakeDriver(conf)


DRIVERS = {'host': _host, 'libvirt': _libvirt, 'fake': _fake}


def load_driver(conf, name=None):
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
