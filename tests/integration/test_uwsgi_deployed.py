"""placement served by uWSGI as Kolla-Ansible and OpenStack-Helm serve it
(tests/integration/uwsgi.py renders their inis): probed as they probe it,
several processes seeing each other's writes at once, and metrics whole
across processes. Upstream's gabbi suite under both inis is
tests/conformance/test_upstream_gabbi.py's."""
import glob
import os
import re
import uuid

import pytest
import requests

from placement_server import under_uwsgi
from tests import databases
from tests.integration import servers
from tests.integration import uwsgi

pytestmark = pytest.mark.integration


@pytest.fixture
def mysql_url(tmp_path):
    test_db = databases.TestDatabase('mysql', str(tmp_path))
    yield test_db.url
    test_db.drop()


@pytest.mark.parametrize('flavour', ['kolla', 'helm'])
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
        if flavour == 'helm':   # its probes read uWSGI's stats port
            stats = requests.get('http://127.0.0.1:%d' % server.stats_port, timeout=30)
            assert len(stats.json()['workers']) == 1
    finally:
        assert server.stop() == 0, server.log()[-3000:]


def _samples(text, name):
    """{labels: value} of one metric in a scrape."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^%s\{(.*)\} (\S+)$' % re.escape(name), text, re.M)}


def test_processes_share_writes_and_metrics(mysql_url, tmp_path):
    server = uwsgi.UwsgiServer(mysql_url, str(tmp_path / 'kolla'), processes=3).start()
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
        for i in range(12):
            rp = call('POST', '/resource_providers', {'name': 'cn%d' % i,
                                                      'uuid': str(uuid.uuid4())})['uuid']
            call('PUT', '/resource_providers/%s/inventories' % rp, {
                'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8 + i}}})
            made.append(rp)
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
        # Served by several processes, each counting into the shared directory.
        shared = os.path.join('/tmp', 'placement-metrics.' + under_uwsgi.process_key(
            server.proc.pid))
        pids = {re.sub(r'\D', '', os.path.basename(p))
                for p in glob.glob(os.path.join(shared, 'counter_*.db'))}
        assert len(pids) >= 2, pids
    finally:
        assert server.stop() == 0, server.log()[-3000:]
