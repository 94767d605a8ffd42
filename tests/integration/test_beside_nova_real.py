"""The agent beside nova-compute, against a real libvirtd with QEMU (TCG)
guests and a placement (ours, then upstream 16.0.0) holding what nova would
have written for them: the root named by libvirt's hostname with the uuid
of nova's compute_id file, consumers written as nova 34 writes them
(microversion 1.36, untyped) and one typed MIGRATION (a nova that types).
nova's API is not configured (a development token, no catalog): what only
nova could settle (orphans, leftovers, migrations) is reported, never
written.

Every request the agent sends goes through a recording proxy: the test
fails on any write to a provider (nova's inventories, traits, aggregates)
and counts the allocation writes one by one.
"""
import http.server
import json
import threading
import time
import uuid as uuidlib

import pytest
import requests

from tests.integration import agent_env as env
from tests.integration.libvirtd import hypervisor  # noqa: F401 (fixture)
from tests.integration.test_libvirt_real import PROJECT
from tests.integration.test_libvirt_real import USER
from tests.integration.test_libvirt_real import domain_xml
from tests.integration.test_libvirt_real import file_disk
from tests.integration.test_libvirt_real import guest_uuid
from tests.integration.test_libvirt_real import qcow2

HEADERS = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}
NOVA_ROOT = str(uuidlib.uuid4())
OTHER_ROOT = str(uuidlib.uuid4())
MOVER_PROJECT = 'f00df00df00d4f00a00df00df00df00d'
# the leftovers' owner: without nova's API, a consumer with no domain here
# holds any drifted guest of its owner (it could be a resize on this host)
GONE_PROJECT = '90e90e90e90e4e90a90e90e90e90e90e'
ORPHAN, LEFTOVER, STALE_MIGRATION, MIGRATION = (str(uuidlib.uuid4()) for _ in range(4))
MAX_AGE = 20    # seconds: the first migration ages past it, the second does not


class Recorder(http.server.BaseHTTPRequestHandler):
    """Forwards each request to placement and notes (method, path)."""
    target = None
    seen = None

    def _forward(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else None
        self.seen.append((self.command, self.path.split('?')[0]))
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ('host', 'content-length', 'connection')}
        resp = requests.request(self.command, self.target + self.path, data=body,
                                headers=headers, timeout=30)
        self.send_response(resp.status_code)
        for key, value in resp.headers.items():
            if key.lower() not in ('content-length', 'connection', 'transfer-encoding',
                                   'content-encoding', 'date', 'server'):
                self.send_header(key, value)
        self.send_header('Content-Length', str(len(resp.content)))
        self.send_header('Connection', 'close')
        self.end_headers()
        self.wfile.write(resp.content)

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _forward

    def log_message(self, *args):
        pass


@pytest.fixture
def proxy(placement_url):
    seen = []
    handler = type('Handler', (Recorder,), {'target': placement_url, 'seen': seen})
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % server.server_address[1], seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def conn(hypervisor):
    """A connection; the guests go with the test (the daemon is the module's)."""
    conn = hypervisor.connect()
    yield conn
    for dom in conn.listAllDomains(0):
        if dom.isActive():
            dom.destroy()
        dom.undefine()
    conn.close()


class Nova:
    """What nova writes to placement, as the test plants it."""

    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None):
        resp = requests.request(method, self.url + path, json=body, headers=HEADERS,
                                timeout=10)
        assert resp.status_code < 300, resp.text
        return resp

    def root(self, uuid, name):
        self.call('POST', '/resource_providers', {'uuid': uuid, 'name': name})
        self.call('PUT', '/resource_providers/%s/inventories' % uuid, {
            'resource_provider_generation': 0, 'inventories': {
                'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 4096},
                'DISK_GB': {'total': 100}}})

    def consumer(self, uuid, allocations, consumer_type=None, project=PROJECT):
        body = {'allocations': {rp: {'resources': r} for rp, r in allocations.items()},
                'project_id': project, 'user_id': USER, 'consumer_generation': None}
        headers = dict(HEADERS, **{'OpenStack-API-Version': 'placement 1.36'})
        if consumer_type:
            body['consumer_type'] = consumer_type
            headers = HEADERS
        resp = requests.put(self.url + '/allocations/%s' % uuid, json=body,
                            headers=headers, timeout=10)
        assert resp.status_code < 300, resp.text

    def allocations(self, uuid):
        body = self.call('GET', '/allocations/%s' % uuid).json()
        return {rp: a['resources'] for rp, a in body['allocations'].items()}

    def generation(self, uuid):
        return self.call('GET', '/resource_providers/%s' % uuid).json()['generation']


def write_conf(path, url, hypervisor, instances, nova_state):
    path.write_text('\n'.join([
        '[DEFAULT]', 'host = lv-nova', 'instances_path = %s' % instances,
        'state_path = %s' % nova_state,
        '[tracker]', 'state_path = %s' % path.parent, 'driver = libvirt',
        'rpc = false', 'notifications = false', 'hardware_events = false',
        'orphan_grace = 0', 'migration_max_age = %d' % MAX_AGE,
        '[libvirt]', 'connection_uri = %s' % hypervisor.uri,
        '[placement]', 'auth_type = admin_token', 'token = admin',
        'endpoint = %s' % url, 'connect_retries = 0']) + '\n')
    return str(path)


def audit(conf, *args, expect):
    done = env.run('tracker-audit', conf, '--json', *args)
    assert done.returncode == expect, done.stdout + done.stderr
    return json.loads(done.stdout)


def found(report):
    return sorted((d['kind'], d['uuid']) for d in report['drift'])


def writes(seen, since=0):
    return sorted((m, p) for m, p in seen[since:] if m != 'GET')


def test_planted_drift_is_found_repaired_exactly_and_nova_tree_never_written(
        hypervisor, conn, placement_url, proxy, tmp_path):
    url, seen = proxy
    instances = tmp_path / 'instances'
    instances.mkdir()
    nova_state = tmp_path / 'nova'
    nova_state.mkdir()
    (nova_state / 'compute_id').write_text(NOVA_ROOT + '\n')
    nova = Nova(placement_url)
    nova.root(NOVA_ROOT, conn.getHostname())
    nova.root(OTHER_ROOT, 'other-compute')

    def guest(name, memory, start=False, project=PROJECT):
        xml = domain_xml(name, memory, 1, [file_disk(
            qcow2(instances / (name + '.qcow2'), '1G'), 'vda', 'qcow2')], nova=True)
        xml = xml.replace(PROJECT, project)
        dom = conn.defineXML(xml)
        if start:
            dom.create()
        return guest_uuid(name)

    def size(memory):
        return {'VCPU': 1, 'MEMORY_MB': memory, 'DISK_GB': 1}

    # Cycle 1's host: a steady running guest, a resized one, one nova never
    # allocated, an orphan, an evacuation leftover, a migration nova forgot
    steady = guest('steady', 32, start=True)
    nova.consumer(steady, {NOVA_ROOT: size(32)})
    resized = guest('resized', 64)
    nova.consumer(resized, {NOVA_ROOT: size(32)})
    missing = guest('missing', 48)
    nova.consumer(ORPHAN, {NOVA_ROOT: size(40)}, project=GONE_PROJECT)
    nova.consumer(LEFTOVER, {NOVA_ROOT: size(56), OTHER_ROOT: size(56)},
                  project=GONE_PROJECT)
    nova.consumer(STALE_MIGRATION, {NOVA_ROOT: size(24)}, 'MIGRATION', project=GONE_PROJECT)
    conf = write_conf(tmp_path / 'nova.conf', url, hypervisor, instances, nova_state)

    first = audit(conf, expect=3)
    started = time.monotonic()
    assert found(first) == sorted([
        ('allocation_differs', resized), ('allocation_missing', missing),
        ('allocation_orphan', ORPHAN), ('allocation_evacuation_leftover', LEFTOVER)])
    assert writes(seen) == []

    # A live migration in flight: its guest runs here, its instance holds
    # the other host, its migration consumer holds this one (same owner)
    moving = guest('moving', 32, start=True, project=MOVER_PROJECT)
    nova.consumer(moving, {OTHER_ROOT: size(32)}, project=MOVER_PROJECT)
    nova.consumer(MIGRATION, {NOVA_ROOT: size(32)}, project=MOVER_PROJECT)
    time.sleep(max(0, MAX_AGE - (time.monotonic() - started)))

    second = audit(conf, '--dry-run', expect=3)
    expected = sorted([
        ('allocation_differs', resized), ('allocation_missing', missing),
        ('allocation_orphan', ORPHAN), ('allocation_evacuation_leftover', LEFTOVER),
        ('migration_stale', STALE_MIGRATION)])
    assert found(second) == expected
    assert sorted(d['uuid'] for d in second['held']) == sorted([MIGRATION, moving])
    repairs = sorted([('PUT', '/allocations/' + resized), ('PUT', '/allocations/' + missing)])
    assert sorted((w['method'], w['path']) for w in second['writes']) == repairs
    assert writes(seen) == []

    before = len(seen)
    fixed = audit(conf, '--fix', expect=3)      # what only nova could settle remains
    assert found(fixed) == expected
    assert sorted((d['kind'], d['uuid']) for d in fixed['remaining']) == sorted([
        ('allocation_orphan', ORPHAN), ('allocation_evacuation_leftover', LEFTOVER),
        ('migration_stale', STALE_MIGRATION)])
    assert sorted((w['method'], w['path']) for w in fixed['writes']) == repairs
    assert writes(seen, before) == repairs           # exactly those, nothing else
    assert nova.allocations(resized) == {NOVA_ROOT: size(64)}
    assert nova.allocations(missing) == {NOVA_ROOT: size(48)}
    assert nova.allocations(ORPHAN) == {NOVA_ROOT: size(40)}
    assert nova.allocations(LEFTOVER) == {NOVA_ROOT: size(56), OTHER_ROOT: size(56)}
    assert nova.allocations(STALE_MIGRATION) == {NOVA_ROOT: size(24)}
    assert nova.allocations(steady) == {NOVA_ROOT: size(32)}
    assert nova.allocations(moving) == {OTHER_ROOT: size(32)}
    assert nova.allocations(MIGRATION) == {NOVA_ROOT: size(32)}

    # Unchanged host: no findings, no writes (audit and a daemon cycle)
    generation = nova.generation(NOVA_ROOT)
    before = len(seen)
    clean = audit(conf, expect=3)
    assert found(clean) == found({'drift': fixed['remaining']})
    assert sorted(d['uuid'] for d in clean['held']) == sorted([MIGRATION, moving])
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stdout + once.stderr
    assert writes(seen, before) == []
    assert nova.generation(NOVA_ROOT) == generation
    # nova's providers were never written, by any of the commands
    assert [(m, p) for m, p in seen
            if m != 'GET' and p.startswith('/resource_providers')] == []
