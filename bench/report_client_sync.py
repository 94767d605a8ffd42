"""The report client syncing a big host (issue 3).

Workload: one host of --providers providers (default 200): a compute node,
4 NUMA cells, and under them devices (GPUs with VGPU, NICs with VFs) each
with an inventory and traits. Steps, each timed and its requests counted
on the wire (a requests hook below the client):

  first sync       empty placement -> the whole tree
  steady sync      the same host again (should send nothing)
  one-change sync  one device's inventory total changes
  refresh sync     the same host once the association refresh is due
  fetch tree       read the whole tree back (what the audit does)

Against: ours in process (PlacementDirect), and ours and upstream as real
gunicorn processes (one worker each), all on SQLite files.

    .venv/bin/python bench/report_client_sync.py --providers 200

prints a Markdown table and writes bench/results/report_client_sync.json.
"""
import argparse
import os
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOP)

from bench import harness  # noqa: E402
from placement_server.direct import PlacementDirect  # noqa: E402
from tests.functional.report_client_fixtures import Placement  # noqa: E402
from tests.functional.report_client_fixtures import http_adapter  # noqa: E402
from tracker.providers.provider import Provider  # noqa: E402
from tracker.providers.provider import inventory  # noqa: E402
from tracker.providers.provider import stable_uuid  # noqa: E402

STEPS = ('first sync', 'steady sync', 'one-change sync', 'refresh sync', 'fetch tree')


def big_host(count):
    root = stable_uuid('bench-host')
    providers = [Provider(root, 'bench-host', inventories={
        'VCPU': inventory(128), 'MEMORY_MB': inventory(1048576, reserved=4096),
        'DISK_GB': inventory(4000)}, traits={'HW_CPU_X86_AVX2', 'CUSTOM_BENCH'})]
    cells = [Provider(stable_uuid('bench-host', 'numa', n), 'bench-host_numa%d' % n, root,
                      inventories={'PCPU': inventory(32)}) for n in range(4)]
    providers += cells
    for i in range(count - len(providers)):
        cell = cells[i % len(cells)]
        if i % 2:
            providers.append(Provider(
                stable_uuid('bench-host', 'gpu', i), 'bench-host_gpu%d' % i, cell.uuid,
                inventories={'VGPU': inventory(8)}, traits={'CUSTOM_VGPU_TYPE_A'}))
        else:
            providers.append(Provider(
                stable_uuid('bench-host', 'pf', i), 'bench-host_pf%d' % i, cell.uuid,
                inventories={'SRIOV_NET_VF': inventory(16)},
                traits={'CUSTOM_PHYSNET_DATA', 'HW_NIC_SRIOV'}))
    return providers


def measure(placement, count):
    """{step: {'requests': n, 'seconds': s}} for one placement."""
    client = placement.client()
    client.http.negotiate()      # GET / is once per process, not part of a sync
    desired = big_host(count)
    root = desired[0].uuid
    out = {}

    def step(name, fn):
        marker = placement.count()
        start = time.perf_counter()
        result = fn()
        out[name] = {'requests': len(placement.since(marker)),
                     'seconds': round(time.perf_counter() - start, 4)}
        errors = getattr(result, 'errors', [])
        if errors:
            raise RuntimeError('%s: %s' % (name, errors[0]))
    step('first sync', lambda: client.sync(desired))
    step('steady sync', lambda: client.sync(desired))
    desired[-1].inventories = {rc: inventory(rec['total'] + 1)
                               for rc, rec in desired[-1].inventories.items()}
    step('one-change sync', lambda: client.sync(desired))
    client.known.read_at.clear()      # as if association_refresh_interval passed
    step('refresh sync', lambda: client.sync(desired))
    step('fetch tree', lambda: client.fetch_tree(root))
    return out


def run_direct(count, workdir):
    direct = PlacementDirect('sqlite:///%s/direct.sqlite' % workdir, sync=True)
    with direct:
        return measure(Placement(direct.new_adapter, 'direct'), count)


def run_server(name, count, workdir):
    path = os.path.join(workdir, name)
    os.makedirs(path)
    server = harness.SERVERS[name]('sqlite:///%s/placement.sqlite' % path, path)
    with server:
        return measure(Placement(lambda: http_adapter(server.url), name), count)


def table(results):
    targets = list(results)
    lines = ['| step | ' + ' | '.join('%s requests | %s seconds' % (t, t) for t in targets)
             + ' |', '|---' * (1 + 2 * len(targets)) + '|']
    for step in STEPS:
        cells = []
        for t in targets:
            cells += [str(results[t][step]['requests']), '%.3f' % results[t][step]['seconds']]
        lines.append('| %s | %s |' % (step, ' | '.join(cells)))
    return '\n'.join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--providers', type=int, default=200)
    parser.add_argument('--target', action='append',
                        choices=('direct', 'ours', 'upstream'),
                        help='default: all three')
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        for target in args.target or ('direct', 'ours', 'upstream'):
            if target == 'direct':
                results[target] = run_direct(args.providers, workdir)
            else:
                results[target] = run_server(target, args.providers, workdir)
    print(table(results))
    harness.save(os.path.join(TOP, 'bench', 'results', 'report_client_sync.json'),
                 {'providers': args.providers, 'results': results})


if __name__ == '__main__':
    main()
