"""The host driver: the bare machine through sysfs, procfs and psutil.

Discovery is a list of small plugins, each reading one source into the
shared ``HostFacts`` (cpu, memory, disk, numa, pci); ``layout`` then builds
the provider tree. The host driver sees no hypervisor, so it reports no
instances unless [tracker] instances_file lists them (a YAML list of
instances: uuid, name, project_id, user_id, vcpus, memory_mb, root_gb,
ephemeral_gb, swap_mb, pci_devices, mdevs, numa_node).
"""
import logging
from typing import Protocol

from oslo_config import cfg

from tracker.drivers import base
from tracker.drivers import drains
from tracker.drivers import facts
from tracker.drivers import layout
from tracker.drivers import yaml_file
from tracker.drivers.errors import DiscoveryError
from tracker.drivers.host import aer
from tracker.drivers.host import binding
from tracker.drivers.host import cpu
from tracker.drivers.host import disk
from tracker.drivers.host import health
from tracker.drivers.host import memory
from tracker.drivers.host import numa
from tracker.drivers.host import pci
from tracker.drivers.host import sysfs

LOG = logging.getLogger(__name__)


class PathPlugin(Protocol):
    """A module reading sysfs/procfs into its part of the HostFacts."""

    def discover(self, paths: sysfs.HostPaths, host: facts.HostFacts) -> None: ...


# Plugins reading sysfs/procfs: each fills its part of the HostFacts.
PATH_PLUGINS: tuple[PathPlugin, ...] = (cpu, memory, numa, pci, aer, binding)


class HostDriver(base.Driver):
    name = 'host'

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self.paths = sysfs.HostPaths(conf.tracker.sysfs_root, conf.tracker.proc_root)
        self.health = health.Health()

    def host_facts(self) -> facts.HostFacts:
        host = facts.HostFacts(
            hostname=self.conf.host,
            cpus=[], memory_mb=0, disk_gb=None)
        for plugin in PATH_PLUGINS:
            plugin.discover(self.paths, host)
        disk.discover(self.conf, host)
        return host

    def discover(self) -> base.HostSnapshot:
        host, instances = self.host_facts(), self.instances()
        self.drain_failing(host, instances)
        tree = layout.Layout(host, self.conf)
        return tree.snapshot(instances)

    def drain_failing(self, host: facts.HostFacts,
                      instances: list[facts.InstanceFacts]) -> None:
        """Drain the devices the host says are failing (host/health.py):
        added to the drains file, which the layout reads."""
        failing = self.health.failing(
            host.pci_devices, {a for i in instances for a in i.pci_addresses})
        drains.add(self.conf.tracker.state_path, self.conf.host, failing)

    def instances(self) -> list[facts.InstanceFacts]:
        path = self.conf.tracker.instances_file
        if not path:
            return []
        data = yaml_file.load(path)
        if data is None:
            return []
        if isinstance(data, dict) and 'instances' in data:
            data = data['instances'] or []
        if not isinstance(data, list):
            raise DiscoveryError('%s: expected a list of instances' % path)
        return [facts.instance_from_dict(item) for item in data]

