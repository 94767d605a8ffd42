"""placement served by uWSGI as Kolla-Ansible and OpenStack-Helm serve it
(tests/integration/uwsgi.py renders their inis): probed as they probe it,
several processes (Kolla) or pods of one process (Helm) seeing each
other's writes at once, and metrics whole and alike across them.
Upstream's gabbi suite under both inis is
tests/conformance/test_upstream_gabbi.py's."""
import glob
import os
import re
import signal
import time
import uuid

import pytest
import requests

from placement_server import under_uwsgi
from tests import databases
from tests.integration import servers
from tests.integration import uwsgi

pytestmark = pytest.mark.integration

ALLOCATIONS = 'openstack_placement_resource_provider_allocations'


@pytest.fixture
def mysql_url(tmp_path):
    test_db = databases.TestDatabase('mysql', str(tmp_path))
    yield test_db.url
    test_db.drop()


@pytest.mark.parametrize('flavour', uwsgi.TOOLS)
def test_probed_as_the_tools_probe(flavour, tmp_path):
    server = uwsgi.UwsgiServer('sqlite:///%s' % (tmp_path / 'p.sqlite'),
                               str(tmp_path / flavour), flavour=flavour).start()
    try:
        root = requests.get(server.url + '/', timeout=30)   # HAProxy's httpchk, blackbox
        assert root.status_code == 200
        assert 'versions' in root.json() and re.search('versions', root.text)
        assert root.headers['Connection'] == 'close'
        health = requests.get(server.url + '/healthcheck', timeout=30)
        assert (health.status_code, health.text) == (200, 'OK')
        if flavour == 'helm':
            # readiness: GET / on the API port, as kubelet sends it
            probe = requests.get(server.url + '/', headers={'User-Agent': 'kube-probe/1.33'},
                                 timeout=30)
            assert probe.status_code == 200
            # liveness: GET / on uWSGI's stats port
            stats = requests.get('http://127.0.0.1:%d/' % server.stats_port, timeout=30).json()
            assert len(stats['workers']) == 1
            # the chart's procname-prefix-spaced: ps names the pod's processes
            with open('/proc/%d/cmdline' % stats['workers'][0]['pid'], 'rb') as f:
                assert f.read().startswith(b'placement-api: '), 'no process name prefix'
        # the per-consumer series only with [capacity] consumer_allocations
        scrape = requests.get(server.metrics_url, timeout=60).text
        assert 'openstack_placement_resource_total' in scrape
        assert ALLOCATIONS not in scrape
        if flavour == 'kolla':
            # Kolla's ini serves through uWSGI's HTTP router (``http``), its
            # log in the file logto2 names
            assert 'spawned uWSGI http 1' in server.log()
            assert 'GET /healthcheck' in server.log()
    finally:
        assert server.stop() == 0, server.log()[-3000:]


def _samples(text, name):
    """{labels: value} of one metric in a scrape."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^%s\{(.*)\} (\S+)$' % re.escape(name), text, re.M)}


def _capacity(scrape):
    """The capacity series of a scrape (request counters left out)."""
    return sorted(line for line in scrape.splitlines()
                  if line.startswith('openstack_placement_'))


def _replace_worker_1(server):
    """SIGTERM worker 1, which serves /metrics; uWSGI respawns it."""
    spawned = re.compile(r'spawned uWSGI worker 1 \((?:new )?pid: (\d+)', re.I)
    before = spawned.findall(server.log())
    ready = server.log().count(uwsgi.READY)
    os.kill(int(before[-1]), signal.SIGTERM)
    deadline = time.monotonic() + 120
    while (len(spawned.findall(server.log())) == len(before)
           or server.log().count(uwsgi.READY) == ready):
        assert time.monotonic() < deadline, server.log()[-3000:]
        time.sleep(0.2)
    return int(spawned.findall(server.log())[-1])


def test_processes_share_writes_and_metrics(mysql_url, tmp_path):
    server = uwsgi.UwsgiServer(mysql_url, str(tmp_path / 'kolla'), processes=3, options={
        ('capacity', 'consumer_allocations'): 'true'}).start()
    try:
        session = requests.Session()   # each request on its own connection (Connection: close)
        calls = 0

        def call(method, path, body=None):
            nonlocal calls
            calls += 1
            resp = session.request(method, server.url + path, json=body,
                                   headers=servers.ADMIN_1_39, timeout=60)
            assert resp.status_code < 300, (method, path, resp.status_code, resp.text)
            return resp.json() if resp.content else None

        made = []
        held = {}   # {(hostname, resourcetype, consumer): amount} written
        for i in range(12):
            rp = call('POST', '/resource_providers', {'name': 'cn%d' % i,
                                                      'uuid': str(uuid.uuid4())})['uuid']
            call('PUT', '/resource_providers/%s/inventories' % rp, {
                'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8 + i}}})
            made.append(rp)
            for n in range(i % 3):
                consumer = str(uuid.uuid4())
                call('PUT', '/allocations/%s' % consumer, {
                    'allocations': {rp: {'resources': {'VCPU': 1 + n}}},
                    'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
                    'consumer_type': 'INSTANCE'})
                held[('cn%d' % i, 'VCPU', consumer)] = 1.0 + n
            # Whichever process answers, its view has every write already.
            for _ in range(3):
                found = call('GET', '/allocation_candidates?resources=VCPU:1')
                assert sorted(found['provider_summaries']) == sorted(made)
        scrape = requests.get(server.metrics_url, timeout=60).text
        served = _samples(scrape, 'placement_http_requests_total')
        assert sum(v for k, v in served.items() if 'route="/"' not in k) == calls, served
        totals = _samples(scrape, 'openstack_placement_resource_total')
        assert totals == {'hostname="cn%d",resourcetype="VCPU"' % i: 8.0 + i
                          for i in range(12)}
        assert _samples(scrape, ALLOCATIONS) == {
            'hostname="%s",resourcetype="%s",uuid="%s"' % key: v for key, v in held.items()}
        # Served by several processes, each counting into the shared directory.
        shared = os.path.join('/tmp', 'placement-metrics.' + under_uwsgi.process_key(
            server.proc.pid))
        pids = {re.sub(r'\D', '', os.path.basename(p))
                for p in glob.glob(os.path.join(shared, 'counter_*.db'))}
        assert len(pids) >= 2, pids
        # Another process serving /metrics shows the same capacity, to the
        # per-consumer series.
        _replace_worker_1(server)
        deadline = time.monotonic() + 60
        while True:
            try:
                again = requests.get(server.metrics_url, timeout=60).text
                break
            except requests.ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert _capacity(again) == _capacity(scrape)
    finally:
        assert server.stop() == 0, server.log()[-3000:]


def test_helm_pods_share_writes_and_metrics(tmp_path):
    """OpenStack-Helm scales by pods of one process each: two of them on
    one database see each other's writes at once and scrape alike."""
    test_db = databases.TestDatabase('postgresql', str(tmp_path))
    options = {('capacity', 'consumer_allocations'): 'true'}
    pods = []
    try:
        for n in range(2):
            pods.append(uwsgi.UwsgiServer(test_db.url, str(tmp_path / ('pod%d' % n)),
                                          flavour='helm', options=options,
                                          sync_db=n == 0).start())

        def call(pod, method, path, body=None):
            resp = requests.request(method, pod.url + path, json=body,
                                    headers=servers.ADMIN_1_39, timeout=60)
            assert resp.status_code < 300, (method, path, resp.status_code, resp.text)
            return resp.json() if resp.content else None

        made = []
        for i in range(6):
            writer, reader = pods[i % 2], pods[1 - i % 2]
            rp = call(writer, 'POST', '/resource_providers', {
                'name': 'cn%d' % i, 'uuid': str(uuid.uuid4())})['uuid']
            call(writer, 'PUT', '/resource_providers/%s/inventories' % rp, {
                'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8}}})
            call(writer, 'PUT', '/allocations/%s' % uuid.uuid4(), {
                'allocations': {rp: {'resources': {'VCPU': 1 + i}}}, 'project_id': 'p',
                'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'})
            made.append(rp)
            found = call(reader, 'GET', '/allocation_candidates?resources=VCPU:1')
            assert sorted(found['provider_summaries']) == sorted(made)
        scrapes = [_capacity(requests.get(pod.metrics_url, timeout=60).text) for pod in pods]
        assert scrapes[0] == scrapes[1]
        assert len([line for line in scrapes[0] if line.startswith(ALLOCATIONS)]) == 6
    finally:
        for pod in pods:
            assert pod.stop() == 0, pod.log()[-3000:]
        test_db.drop()
