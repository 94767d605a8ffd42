"""Online CPUs and their feature flags."""
import platform

import os_traits

from tracker.drivers import facts
from tracker.drivers.host import sysfs
from tracker.drivers.host.sysfs import HostPaths


def discover(paths: HostPaths, host: facts.HostFacts) -> None:
    host.cpus = facts.parse_cpu_list(
        sysfs.read(paths.sys('devices/system/cpu/online')))
    host.cpu_flags = cpu_flags(sysfs.read(paths.proc('cpuinfo'), ''))
    host.arch = platform.machine() or 'x86_64'
    # what nova's libvirt driver says of the host's architecture
    arch_trait = 'HW_ARCH_' + host.arch.upper()
    if arch_trait in os_traits.get_traits('HW_ARCH_'):
        host.traits.add(arch_trait)


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first CPU ('flags' on x86, 'Features' on arm)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(':')
        if key.strip() in ('flags', 'Features'):
            return set(value.split())
    return set()

