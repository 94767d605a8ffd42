"""A fake host, a tracker.conf and tracker-agent processes for the agent's
integration tests, plus what placement holds, read over plain HTTP."""
import json
import os
import signal
import subprocess
import sys
import time
import uuid as uuidlib

import requests
import yaml

from tracker.drivers.layout import root_uuid  # noqa: F401 (tests use it)

BIN = os.path.dirname(sys.executable)
RABBIT = 'rabbit://guest:guest@127.0.0.1:5672/'
HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}


def instance(name, **allocations):
    """An instance of the fake host: allocations by provider name."""
    return {'uuid': str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, name)), 'name': name,
            'project_id': 'proj', 'user_id': 'user', 'allocations': allocations}


def describe_host(hostname, gpus=0, vfs=0, instances=()):
    """The fake driver's YAML for a host with GPUs (VGPU) and SR-IOV VFs."""
    providers = [{'name': hostname, 'traits': ['HW_CPU_X86_AVX2'],
                  'inventories': {'VCPU': 16, 'DISK_GB': 500,
                                  'MEMORY_MB': {'total': 65536, 'reserved': 512}}}]
    providers += [{'name': '%s_gpu%d' % (hostname, i), 'inventories': {'VGPU': 4},
                   'traits': ['CUSTOM_GPU_T4']} for i in range(gpus)]
    providers += [{'name': '%s_vf%d' % (hostname, i),
                   'inventories': {'SRIOV_NET_VF': 1}} for i in range(vfs)]
    return {'hostname': hostname, 'providers': providers,
            'instances': list(instances)}


def write_host(path, description):
    tmp = str(path) + '.tmp'
    with open(tmp, 'w') as f:
        yaml.safe_dump(description, f)
    os.replace(tmp, str(path))     # the agent never reads half a file


def write_conf(path, placement_url, host_file, hostname, rpc=False,
               notifications=False, interval=1, compute=None, **tracker):
    """A config for the fake driver: ``tracker`` and ``compute`` add
    options to those groups."""
    lines = ['[DEFAULT]', 'transport_url = %s' % RABBIT,
             'host = %s' % hostname,
             '[tracker]', 'driver = fake', 'interval = %d' % interval,
             'jitter = 0', 'rpc = %s' % rpc, 'notifications = %s' % notifications,
             # each test's own: ownership files of the same host name in
             # other tests' placements must not mix
             'state_path = %s' % os.path.dirname(os.path.abspath(str(path)))]
    lines += ['%s = %s' % item for item in tracker.items()]
    lines += ['[compute]'] + ['%s = %s' % item for item in (compute or {}).items()]
    lines += ['[fake]', 'host_file = %s' % host_file,
              '[placement]', 'auth_type = admin_token', 'token = admin',
              'endpoint = %s' % placement_url,
              'connect_retries = 0']
    with open(str(path), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return str(path)


def run(command, conf_path, *args, timeout=60):
    return subprocess.run([os.path.join(BIN, command), '--config-file', conf_path]
                          + list(args), capture_output=True, text=True,
                          timeout=timeout)



def _only_host_memory_moved(report):
    return bool(report and report['drift']) and all(
        d['kind'] == 'inventory_differs' and d['detail']['resource_class'] == 'MEMORY_MB'
        for d in report['drift'])


def cycle_then_audit(*conf_paths, attempts=3):
    """One ``tracker-agent --once``, then ``tracker-audit`` must find
    placement in step with the host.

    Some machines hot-plug memory under a running host (here NUMA node 0
    grows and shrinks in 128 MiB blocks, and libvirt reports it): when the
    host's memory moved between the cycle and the audit, the daemon would
    write it at its next cycle, so one more cycle runs."""
    args = []
    for path in conf_paths[1:]:
        args += ['--config-file', path]
    for _ in range(attempts):
        once = run('tracker-agent', conf_paths[0], '--once', *args)
        assert once.returncode == 0, once.stdout + once.stderr
        audit = run('tracker-audit', conf_paths[0], '--json', *args)
        report = json.loads(audit.stdout or 'null')
        if not _only_host_memory_moved(report):
            break
    assert audit.returncode == 0, audit.stdout + audit.stderr
    assert report['in_sync'] is True and report['drift'] == [], report

class AgentProcess:
    """``tracker-agent`` as systemd would run it."""

    def __init__(self, conf_path, log_path, env=None):
        self.conf_path = conf_path
        self.log_path = str(log_path)
        self.env = env
        self.proc = None

    def start(self):
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(
                [os.path.join(BIN, 'tracker-agent'), '--config-file', self.conf_path],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                env=dict(os.environ, **(self.env or {})))
        return self

    def log(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def kill(self):
        """kill -9 the launcher and its worker (the one running cycles)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout=60):
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def wait_for(predicate, timeout=60, interval=0.2, what='condition'):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
        except requests.RequestException as exc:
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise AssertionError('timed out waiting for %s (last: %r)' % (what, last))


class Placement:
    """What placement holds, read over HTTP (the test's own eyes)."""

    def __init__(self, url):
        self.url = url

    def get(self, path):
        resp = requests.get(self.url + path, headers=HEADERS, timeout=10)
        resp.raise_for_status()
        return resp.json()

    def providers(self):
        return self.get('/resource_providers')['resource_providers']

    def tree(self, hostname):
        """{name: {parent, inventories, traits}} under the host's root."""
        root = root_uuid(hostname)
        listing = self.get('/resource_providers?in_tree=%s' % root)['resource_providers']
        names = {p['uuid']: p['name'] for p in listing}
        tree = {}
        for p in listing:
            inv = self.get('/resource_providers/%s/inventories' % p['uuid'])['inventories']
            traits = self.get('/resource_providers/%s/traits' % p['uuid'])['traits']
            tree[p['name']] = {'parent': names.get(p['parent_provider_uuid']),
                               'inventories': {rc: i['total'] for rc, i in inv.items()},
                               'traits': sorted(traits)}
        return tree

    def allocations(self, hostname):
        """{consumer: {provider name: {rc: n}}} over the host's tree."""
        root = root_uuid(hostname)
        listing = self.get('/resource_providers?in_tree=%s' % root)['resource_providers']
        names = {p['uuid']: p['name'] for p in listing}
        result = {}
        for rp_uuid, name in names.items():
            body = self.get('/resource_providers/%s/allocations' % rp_uuid)
            for consumer, record in body['allocations'].items():
                result.setdefault(consumer, {})[name] = record['resources']
        return result


def expected_tree(description):
    root = description['providers'][0]['name']
    tree = {}
    for p in description['providers']:
        inventories = {rc: (v['total'] if isinstance(v, dict) else v)
                       for rc, v in p['inventories'].items()}
        tree[p['name']] = {'parent': None if p['name'] == root else root,
                           'inventories': inventories,
                           'traits': sorted(p.get('traits', []))}
    return tree


def expected_allocations(description):
    return {i['uuid']: i['allocations'] for i in description['instances']}


def converged(placement, description):
    """A predicate: placement holds exactly the described host."""
    hostname = description['hostname']

    def check():
        return (placement.tree(hostname) == expected_tree(description)
                and placement.allocations(hostname) == expected_allocations(description))
    return check


def drift_kinds(report):
    """An audit --json report's drift as sorted (kind, name or uuid)."""
    return sorted((d['kind'], d['name'] or d['uuid']) for d in report['drift'])
