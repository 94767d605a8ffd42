"""DISK_GB: the filesystem holding instance disks ([DEFAULT] instances_path).

With shared storage the compute node reports no disk of its own, so the
path is not even looked at.
"""
import os

from oslo_config import cfg
import psutil

from tracker.drivers import facts
from tracker.drivers.errors import DiscoveryError


def discover(conf: cfg.ConfigOpts, host: facts.HostFacts) -> None:
    if conf.tracker.shared_storage_provider_uuid:
        host.disk_gb = None
        return
    host.disk_gb = disk_gb(conf.instances_path)


def disk_gb(path: str) -> int:
    """Whole GiB of the filesystem holding ``path`` (or its nearest parent
    that exists: the instances directory may not be created yet)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    try:
        total: int = psutil.disk_usage(probe).total
        return total // facts.GiB
    except OSError as exc:
        raise DiscoveryError('cannot size instance storage %s: %s'
                             % (path, exc.strerror)) from None
