"""Catching up while idle, in placement-server as docs/install.md starts it
(``--workers 2``): one worker's write is heard by the other, and each
worker whose view was read brings it up to date before the next request;
what the next request answers is the write's outcome."""
import glob
import os
import re
import tempfile
import time
import uuid

import pytest
import requests

from tests.integration import servers

pytestmark = pytest.mark.integration

HEADERS = dict(servers.ADMIN_1_39, Connection='close')
QUERY = '/allocation_candidates?resources=VCPU:1'


def _catch_ups(server):
    text = requests.get(server.metrics_url, timeout=10).text
    found = re.search(r'(?m)^placement_view_catch_ups_total (\S+)$', text)
    assert found, text
    return float(found.group(1))


def _answering_workers(server):
    """The pids of the workers that have logged an answer to QUERY."""
    return set(re.findall(r'(?m)^\S+ \S+ (\d+) INFO placement_server.requests .*"GET %s"'
                          % re.escape(QUERY), server.log()))


def test_both_workers_catch_up_on_one_workers_write(tmp_path):
    server, = servers.start_servers('sqlite:///%s' % (tmp_path / 'p.sqlite'), str(tmp_path),
                                    workers=2)
    try:
        master = server.proc.pid
        rp = servers.make_provider(server.url, {'VCPU': {'total': 8}})
        inboxes = glob.glob(os.path.join(tempfile.gettempdir(),
                                         'placement-workers.%d.*' % master, '*'))
        assert len(inboxes) == 2, inboxes
        for _ in range(200):   # until each worker has answered (and read its view)
            resp = requests.get(server.url + QUERY, headers=HEADERS, timeout=10)
            assert resp.status_code == 200
            if len(_answering_workers(server)) == 2:
                break
        assert len(_answering_workers(server)) == 2
        before = _catch_ups(server)
        resp = requests.put(server.url + '/allocations/%s' % uuid.uuid4(), json={
            'allocations': {rp: {'resources': {'VCPU': 3}}}, 'consumer_generation': None,
            'project_id': str(uuid.uuid4()), 'user_id': str(uuid.uuid4()),
            'consumer_type': 'INSTANCE'}, headers=HEADERS, timeout=10)
        assert resp.status_code == 204, resp.text
        deadline = time.monotonic() + 10
        while _catch_ups(server) < before + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _catch_ups(server) == before + 2
        for _ in range(4):   # whichever worker answers
            summary = requests.get(server.url + QUERY, headers=HEADERS, timeout=10).json()[
                'provider_summaries'][rp]['resources']['VCPU']
            assert summary == {'capacity': 8, 'used': 3}
    finally:
        server.stop()
    assert not glob.glob(os.path.join(tempfile.gettempdir(), 'placement-workers.%d.*' % master))
