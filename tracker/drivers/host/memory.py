"""Memory: the total the kernel sees and what huge pages hold."""
import os

from tracker.drivers.facts import HostFacts
from tracker.drivers.host import sysfs


def discover(paths: sysfs.HostPaths, host: HostFacts) -> None:
    meminfo = sysfs.read(paths.proc('meminfo'))
    host.memory_mb = sysfs.meminfo_kib(meminfo, 'MemTotal') // 1024
    host.huge_pages_mb = huge_pages_mb(paths.sys('kernel/mm/hugepages'))


def huge_pages_mb(directory: str) -> int:
    """MiB held by huge pages of every size under a hugepages directory."""
    total_kib = 0
    for name in sysfs.listdir(directory):
        # hugepages-2048kB/nr_hugepages
        size_kib = int(name.split('-', 1)[1].rstrip('kB'))
        count = sysfs.read_int(os.path.join(directory, name, 'nr_hugepages'), 0)
        total_kib += size_kib * count
    return total_kib // 1024
