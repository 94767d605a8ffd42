"""NUMA nodes: their online CPUs, memory and huge pages."""
import os

from tracker.drivers import facts
from tracker.drivers.host import memory
from tracker.drivers.host import sysfs


def discover(paths: sysfs.HostPaths, host: facts.HostFacts) -> None:
    host.numa_nodes = read_nodes(paths)


def read_nodes(paths: sysfs.HostPaths) -> list[facts.NumaNode]:
    """Every NUMA node with memory or CPUs, from sysfs."""
    base = paths.sys('devices/system/node')
    online = set(host_cpus(paths))
    nodes: list[facts.NumaNode] = []
    for name in sysfs.listdir(base):
        if not (name.startswith('node') and name[4:].isdigit()):
            continue
        node_dir = os.path.join(base, name)
        cpus = [c for c in facts.parse_cpu_list(
            sysfs.read(os.path.join(node_dir, 'cpulist'), ''))
            if c in online]
        memory_kib = sysfs.meminfo_kib(
            sysfs.read(os.path.join(node_dir, 'meminfo')), 'MemTotal')
        if not cpus and not memory_kib:
            continue
        nodes.append(facts.NumaNode(
            id=int(name[4:]), cpus=cpus, memory_mb=memory_kib // 1024,
            huge_pages_mb=memory.huge_pages_mb(
                os.path.join(node_dir, 'hugepages'))))
    return nodes


def host_cpus(paths: sysfs.HostPaths) -> list[int]:
    return facts.parse_cpu_list(
        sysfs.read(paths.sys('devices/system/cpu/online')))
