"""Discovery time and peak memory of the host and libvirt drivers (issue 4).

The host driver reads a large fake sysfs tree (tests/fixtures/sysfs.py):
CPUs, NUMA nodes, SR-IOV NICs full of VFs, GPUs with mdev types and
existing mdevs, and an instances file; the libvirt driver reads
tests/libvirt/host-devices.xml through libvirt's test driver.

    .venv/bin/python bench/discovery.py --cpus 256 --numa 8 --nics 8 \\
        --vfs 128 --gpus 8 --mdevs 16 --instances 500 --repeats 20

prints a Markdown table (first run, median and p90 of the rest, peak
traced memory of one discovery) and writes bench/results/discovery.json.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import tracemalloc
import uuid

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TOP not in sys.path:
    sys.path.insert(0, TOP)

from oslo_config import cfg  # noqa: E402
import yaml  # noqa: E402

from tests.fixtures.sysfs import FakeHost  # noqa: E402
from tracker.drivers import load_driver  # noqa: E402
from tracker.drivers import options  # noqa: E402

MDEV_TYPES = {'nvidia-222': 16, 'nvidia-223': 8}


def build_host(args):
    """A FakeHost (set up) with the requested hardware; returns it and the
    PCI addresses instances may use."""
    host = FakeHost(cpus='0-%d' % (args.cpus - 1),
                    memory_mb=args.numa * 131072)
    host.setUp()
    per_node = args.cpus // args.numa
    for node in range(args.numa):
        host.numa_node(node, '%d-%d' % (node * per_node,
                                        (node + 1) * per_node - 1), 131072)
    vfs = []
    for nic in range(args.nics):
        vfs += host.sriov_nic('0000:%02x:00.0' % (0x10 + 2 * nic), '8086',
                              '1528', '1515', args.vfs,
                              numa_node=nic % args.numa)
    mdevs = []
    for gpu in range(args.gpus):
        address = '0000:%02x:00.0' % (0xa0 + gpu)
        host.gpu(address, MDEV_TYPES, numa_node=gpu % args.numa)
        for _ in range(args.mdevs):
            mdev = str(uuid.uuid4())
            host.mdev(mdev, address, 'nvidia-222')
            mdevs.append(mdev)
    instances = []
    for n in range(args.instances):
        instance = {'uuid': str(uuid.uuid4()), 'vcpus': 2, 'memory_mb': 4096,
                    'root_gb': 20, 'swap_mb': 1024}
        if n < len(vfs):
            instance['pci_devices'] = [vfs[n]]
        if n < len(mdevs):
            instance['mdevs'] = [mdevs[n]]
        instances.append(instance)
    path = os.path.join(host.root, 'instances.yaml')
    with open(path, 'w') as f:
        yaml.safe_dump(instances, f)
    return host, path


def host_conf(host, instances_file):
    conf = options.register(cfg.ConfigOpts())
    conf([], default_config_files=[])
    for name, value, group in (
            ('sysfs_root', host.sys_root, 'tracker'),
            ('proc_root', host.proc_root, 'tracker'),
            ('instances_file', instances_file, 'tracker'),
            ('instances_path', host.instances_path, None),
            ('host', 'bench-node', None),
            ('numa_providers', True, 'tracker'),
            ('device_spec', ['{"vendor_id": "8086", "product_id": "1515"}'],
             'pci'),
            ('report_in_placement', True, 'pci'),
            ('enabled_mdev_types', ['nvidia-222'], 'devices')):
        conf.set_override(name, value, group)
    return conf


def libvirt_conf():
    conf = options.register(cfg.ConfigOpts())
    conf([], default_config_files=[])
    xml = os.path.join(TOP, 'tests', 'libvirt', 'host-devices.xml')
    conf.set_override('connection_uri', 'test://' + xml, 'libvirt')
    conf.set_override('images_pool', 'instances', 'tracker')
    conf.set_override('device_spec', ['{"vendor_id": "8086", '
                                      '"product_id": "1515"}'], 'pci')
    conf.set_override('report_in_placement', True, 'pci')
    conf.set_override('enabled_mdev_types', ['nvidia-222'], 'devices')
    return conf


def measure(driver, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        snapshot = driver.discover()
        times.append(time.perf_counter() - start)
    tracemalloc.start()
    driver.discover()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rest = sorted(times[1:]) or times
    return {
        'providers': len(snapshot.providers),
        'instances': len(snapshot.instances),
        'first_ms': round(times[0] * 1000, 1),
        'median_ms': round(statistics.median(rest) * 1000, 1),
        'p90_ms': round(rest[math.ceil(0.9 * len(rest)) - 1] * 1000, 1),
        'peak_mib': round(peak / 2 ** 20, 2),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--cpus', type=int, default=256)
    parser.add_argument('--numa', type=int, default=8)
    parser.add_argument('--nics', type=int, default=8)
    parser.add_argument('--vfs', type=int, default=128)
    parser.add_argument('--gpus', type=int, default=8)
    parser.add_argument('--mdevs', type=int, default=16)
    parser.add_argument('--instances', type=int, default=500)
    parser.add_argument('--repeats', type=int, default=20)
    args = parser.parse_args(argv)
    if args.cpus % args.numa or not 0 < args.vfs <= 256 or args.nics > 48:
        parser.error('--cpus must divide by --numa, --vfs be 1-256, '
                     '--nics at most 48')

    host, instances_file = build_host(args)
    try:
        results = {'host driver (fake sysfs)': measure(
            load_driver(host_conf(host, instances_file), 'host'),
            args.repeats)}
    finally:
        host.cleanUp()
    driver = load_driver(libvirt_conf(), 'libvirt')
    results['libvirt driver (test:///host-devices.xml)'] = measure(
        driver, args.repeats)
    driver.close()

    print('| driver | providers | instances | first ms | median ms | p90 ms '
          '| peak MiB |')
    print('|---|---|---|---|---|---|---|')
    for name, r in results.items():
        print('| %s | %d | %d | %.1f | %.1f | %.1f | %.2f |' % (
            name, r['providers'], r['instances'], r['first_ms'],
            r['median_ms'], r['p90_ms'], r['peak_mib']))
    os.makedirs(os.path.join(TOP, 'bench', 'results'), exist_ok=True)
    with open(os.path.join(TOP, 'bench', 'results', 'discovery.json'),
              'w') as f:
        json.dump({'args': vars(args), 'results': results}, f, indent=2)


if __name__ == '__main__':
    main()
