"""Online CPUs and their feature flags."""
import platform

from tracker.drivers import facts
from tracker.drivers.host import sysfs
from tracker.drivers.host.sysfs import HostPaths


def discover(paths: HostPaths, host: facts.HostFacts) -> None:
    host.cpus = facts.parse_cpu_list(
        sysfs.read(paths.sys('devices/system/cpu/online')))
    host.cpu_flags = cpu_flags(sysfs.read(paths.proc('cpuinfo'), ''))
    host.arch = platform.machine() or 'x86_64'


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first CPU ('flags' on x86, 'Features' on arm)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(':')
        if key.strip() in ('flags', 'Features'):
            return set(value.split())
    return set()

