"""The agent in steady state (issue 5): HTTP per cycle and memory over time.

Workload: the largest fake host the tests use, scaled: one compute node,
4 NUMA cells, and under them --providers devices in all (GPUs with VGPU,
NICs with SR-IOV VFs), with --instances running instances holding VCPU,
MEMORY_MB and, one in four, a VGPU. The fake driver re-reads the YAML every
cycle, as it would rediscover a real host.

Against: our placement-server as a real process (gunicorn, one worker) on
a SQLite file. The agent runs in this process (tracker.agent.Agent, the
daemon's own cycle: discover, overlay, sync providers, sync allocations)
--cycles times back to back, without the interval's sleep.

Measured:
  requests per cycle, on the report client's wire counter: the first cycle
  writes the host; every later one should send none (the client re-reads
  the tree only every [placement] association_refresh_interval, 300 s by
  default);
  resident memory (RSS) of the process after --warmup cycles and then every
  100 cycles: it should not grow.

    .venv/bin/python bench/agent_steady_state.py --cycles 1000

prints the figures and writes bench/results/agent_steady_state.json.
"""
import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
import uuid as uuidlib

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TOP)

from oslo_config import cfg  # noqa: E402
import psutil  # noqa: E402

from bench import harness  # noqa: E402
from tests.integration import agent_env  # noqa: E402
from tests.integration.servers import Server  # noqa: E402
from tracker import agent as agent_mod  # noqa: E402
from tracker import conf as tracker_conf  # noqa: E402

HOST = 'bench-agent-host'


def describe(devices, instances):
    """The fake driver's YAML: root, 4 NUMA cells, ``devices`` devices."""
    cells = ['%s_numa%d' % (HOST, n) for n in range(4)]
    providers = [{'name': HOST, 'traits': ['HW_CPU_X86_AVX2'],
                  'inventories': {'VCPU': 512, 'DISK_GB': 20000,
                                  'MEMORY_MB': {'total': 2097152, 'reserved': 4096}}}]
    providers += [{'name': c, 'parent': HOST, 'inventories': {'PCPU': 32}} for c in cells]
    gpus = []
    for i in range(devices):
        if i % 2:
            name = '%s_gpu%d' % (HOST, i)
            gpus.append(name)
            providers.append({'name': name, 'parent': cells[i % 4],
                              'inventories': {'VGPU': 8}, 'traits': ['CUSTOM_VGPU_A']})
        else:
            providers.append({'name': '%s_pf%d' % (HOST, i), 'parent': cells[i % 4],
                              'inventories': {'SRIOV_NET_VF': 16},
                              'traits': ['HW_NIC_SRIOV']})
    servers = []
    for i in range(instances):
        allocations = {HOST: {'VCPU': 2, 'MEMORY_MB': 4096}}
        if i % 4 == 0 and gpus:
            allocations[gpus[(i // 4) % len(gpus)]] = {'VGPU': 1}
        servers.append({'uuid': str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, 'bench-vm%d' % i)),
                        'name': 'bench-vm%d' % i, 'project_id': 'p', 'user_id': 'u',
                        'allocations': allocations})
    return {'hostname': HOST, 'providers': providers, 'instances': servers}


def rss_mib():
    return psutil.Process().memory_info().rss / 2**20


def run(workdir, devices, instances, cycles, warmup):
    server = Server('sqlite:///%s/placement.sqlite' % workdir, workdir, sync_db=True).start()
    try:
        host_file = os.path.join(workdir, 'host.yaml')
        agent_env.write_host(host_file, describe(devices, instances))
        conf_path = agent_env.write_conf(os.path.join(workdir, 'tracker.conf'), server.url,
                                         host_file, HOST)
        conf = tracker_conf.load(['--config-file', conf_path], conf=cfg.ConfigOpts())
        agent = agent_mod.Agent(conf)
        first = agent.run_cycle()
        assert first.ok, first.error
        requests, seconds, rss = [], [], {}
        for n in range(1, cycles + 1):
            result = agent.run_cycle()
            assert result.ok, result.error
            requests.append(result.requests)
            seconds.append(result.duration)
            if n == warmup or (n > warmup and n % 100 == 0):
                gc.collect()
                rss[n] = round(rss_mib(), 1)
        return {
            'providers': 5 + devices, 'instances': instances, 'cycles': cycles,
            'first_cycle': {'requests': first.requests, 'writes': first.writes,
                            'seconds': round(first.duration, 3)},
            'steady': {
                'requests_total': sum(requests),
                'cycles_with_requests': sum(1 for r in requests if r),
                'cycle_ms_p50': round(statistics.median(seconds) * 1000, 1),
                'cycle_ms_max': round(max(seconds) * 1000, 1),
            },
            'rss_mib': rss,
            'rss_growth_mib': round(rss[max(rss)] - rss[warmup], 1),
            'server_rss_mib': round(psutil.Process(server.proc.pid).memory_info().rss
                                    / 2**20, 1),
        }
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--devices', type=int, default=195,
                        help='devices under the NUMA cells (default 195: 200 providers)')
    parser.add_argument('--instances', type=int, default=100)
    parser.add_argument('--cycles', type=int, default=1000)
    parser.add_argument('--warmup', type=int, default=100)
    args = parser.parse_args()
    started = time.time()
    with tempfile.TemporaryDirectory() as workdir:
        result = run(workdir, args.devices, args.instances, args.cycles, args.warmup)
    result['wall_seconds'] = round(time.time() - started, 1)
    harness.save(os.path.join(TOP, 'bench', 'results', 'agent_steady_state.json'), result)
    steady = result['steady']
    print('host: %(providers)d providers, %(instances)d instances; %(cycles)d cycles' % result)
    print('first cycle: %(requests)d requests, %(writes)d writes, %(seconds)ss'
          % result['first_cycle'])
    print('steady cycles: %d requests in all (%d cycles sent any); cycle p50 %s ms, '
          'max %s ms' % (steady['requests_total'], steady['cycles_with_requests'],
                         steady['cycle_ms_p50'], steady['cycle_ms_max']))
    print('RSS MiB by cycle: %s; growth after warm-up: %s MiB'
          % (result['rss_mib'], result['rss_growth_mib']))


if __name__ == '__main__':
    main()
