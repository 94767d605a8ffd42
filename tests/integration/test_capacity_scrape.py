"""Capacity on a real placement-server's metrics port, on every engine.

The metrics port is the master's (placement_server.cmd.server), and the
master never builds the API application: the capacity series must be
there all the same, follow writes the workers make, and keep answering
after a worker forked from the master has exited.
"""
import os
import re
import signal
import time
import uuid

import pytest
import requests

from tests import upstream
from tests.integration import servers

pytestmark = pytest.mark.integration

FLAVOR = 'm1.small: VCPU=2, MEMORY_MB=2048'


def _value(text, name, **labels):
    wanted = ','.join('%s="%s"' % item for item in sorted(labels.items()))
    found = re.search(r'^%s\{%s\} (\S+)$' % (re.escape(name), re.escape(wanted)), text, re.M)
    assert found, '%s{%s} not in the scrape:\n%s' % (name, wanted, text)
    return float(found.group(1))


def _workers(master):
    children = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open('/proc/%s/stat' % pid) as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(')', 1)[1].split()[1]) == master:
            children.append(int(pid))
    return children


def _replace_a_worker(master):
    """SIGTERM one worker and wait until gunicorn has forked another."""
    before = _workers(master)
    os.kill(before[0], signal.SIGTERM)
    # a worker finishes its requests in flight first (graceful_timeout,
    # 10 s) and the new one loads the application: slow on a loaded machine
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        now = _workers(master)
        if before[0] not in now and len(now) == len(before):
            return
        time.sleep(0.1)
    raise AssertionError('no worker replaced %d' % before[0])


def test_the_metrics_port_shows_capacity(placement_servers, database, tmp_path):
    conf = tmp_path / 'placement.conf'
    conf.write_text('[capacity]\nflavor = %s\nconsumer_allocations = true\n' % FLAVOR)
    port = upstream.free_port()
    server, = placement_servers(database.url, workers=2,
                                config_file=str(conf),
                                env={'OS_API__METRICS_PORT': str(port)})
    metrics_url = 'http://127.0.0.1:%d/metrics' % port
    rp = servers.make_provider(server.url, {'VCPU': {'total': 8},
                                            'MEMORY_MB': {'total': 4096}})
    name = servers.call('GET', '%s/resource_providers/%s' % (server.url, rp))[1]['name']
    text = requests.get(metrics_url, timeout=30).text
    assert _value(text, 'openstack_placement_resource_total',
                  hostname=name, resourcetype='VCPU') == 8
    assert _value(text, 'openstack_placement_flavor_fits', flavor='m1.small') == 2
    _replace_a_worker(server.proc.pid)
    consumer = str(uuid.uuid4())
    status, body = servers.call('PUT', '%s/allocations/%s' % (server.url, consumer), {
        'allocations': {rp: {'resources': {'VCPU': 2, 'MEMORY_MB': 2048}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    assert status == 204, body
    text = requests.get(metrics_url, timeout=30).text
    assert _value(text, 'openstack_placement_resource_usage',
                  hostname=name, resourcetype='MEMORY_MB') == 2048
    assert _value(text, 'openstack_placement_flavor_fits', flavor='m1.small') == 1
    assert _value(text, 'openstack_placement_flavor_host_fits',
                  flavor='m1.small', hostname=name) == 1
    # the per-consumer series, from the master's own view, of a worker's write
    for rc, amount in (('VCPU', 2), ('MEMORY_MB', 2048)):
        assert _value(text, 'openstack_placement_resource_provider_allocations',
                      hostname=name, resourcetype=rc, uuid=consumer) == amount
