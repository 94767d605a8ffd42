"""Scale-out: two placement-server processes, one shared database.

The workers keep no state of their own, so whatever one server writes the
other serves at once, a generation read from one server is checked by the
other, and stopping one server loses nothing while clients move to the
other. (Concurrent claims through both servers: test_concurrency.py.)
"""
import threading
import time
import uuid

import pytest
import requests

from tests.integration import servers

pytestmark = pytest.mark.integration

HEADERS = dict(servers.ADMIN, **{'OpenStack-API-Version': 'placement 1.39'})


@pytest.fixture(scope='module', params=['postgresql', 'mysql'])
def shared_pair(request, _databases, tmp_path_factory):
    """Two servers x two workers on one PostgreSQL or MariaDB database,
    for the tests that leave them running (their names never clash)."""
    test_db = _databases(request.param)
    test_db.reset()
    started = servers.start_servers(test_db.url, str(tmp_path_factory.mktemp('pair')),
                                    count=2, workers=2)
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def pair(shared_pair):
    return shared_pair


@pytest.fixture(params=['postgresql', 'mysql'])
def own_pair(request, _databases, placement_servers):
    """A pair of servers this test alone uses (and may stop)."""
    test_db = _databases(request.param)
    test_db.reset()
    return placement_servers(test_db.url, count=2, workers=2)


def call(method, url, body=None):
    resp = requests.request(method, url, json=body, headers=HEADERS, timeout=60)
    return resp.status_code, (resp.json() if resp.content else None)


def provider(base, name=None):
    status, body = call('POST', base + '/resource_providers',
                        {'name': name or 'cn-%s' % uuid.uuid4()})
    assert status == 200, body
    return body['uuid']


def test_what_one_server_writes_the_other_serves_at_once(pair):
    a, b = (s.url for s in pair)
    assert call('PUT', a + '/resource_classes/CUSTOM_FPGA')[0] == 201
    rp = provider(b)
    status, body = call('PUT', '%s/resource_providers/%s/inventories' % (b, rp), {
        'resource_provider_generation': 0,
        'inventories': {'CUSTOM_FPGA': {'total': 2}}})
    assert status == 200, body
    assert call('PUT', b + '/traits/CUSTOM_SHARED_TRAIT')[0] == 201
    status, body = call('PUT', '%s/resource_providers/%s/traits' % (a, rp), {
        'resource_provider_generation': 1, 'traits': ['CUSTOM_SHARED_TRAIT']})
    assert status == 200, body
    status, body = call('GET', '%s/resource_providers?required=CUSTOM_SHARED_TRAIT' % b)
    assert [p['uuid'] for p in body['resource_providers']] == [rp]
    # A deletion on one server is a 404 on the other: no per-worker cache.
    assert call('DELETE', '%s/resource_providers/%s/traits' % (b, rp))[0] == 204
    assert call('DELETE', a + '/traits/CUSTOM_SHARED_TRAIT')[0] == 204
    assert call('GET', b + '/traits/CUSTOM_SHARED_TRAIT')[0] == 404


def test_a_generation_read_on_one_server_is_checked_by_the_other(pair):
    a, b = (s.url for s in pair)
    rp = provider(a)
    status, body = call('GET', '%s/resource_providers/%s' % (a, rp))
    seen = body['generation']
    status, body = call('PUT', '%s/resource_providers/%s/inventories' % (b, rp), {
        'resource_provider_generation': seen, 'inventories': {'VCPU': {'total': 8}}})
    assert status == 200, body
    status, body = call('PUT', '%s/resource_providers/%s/inventories' % (a, rp), {
        'resource_provider_generation': seen, 'inventories': {'VCPU': {'total': 16}}})
    assert status == 409
    assert body['errors'][0]['code'] == 'placement.concurrent_update'
    status, body = call('GET', '%s/resource_providers/%s/inventories' % (a, rp))
    assert body['inventories']['VCPU']['total'] == 8


def test_consumer_generations_hold_across_servers(pair):
    a, b = (s.url for s in pair)
    rp = provider(a)
    call('PUT', '%s/resource_providers/%s/inventories' % (a, rp), {
        'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8}}})
    consumer = str(uuid.uuid4())

    def claim(base, vcpus, generation):
        return call('PUT', '%s/allocations/%s' % (base, consumer), {
            'allocations': {rp: {'resources': {'VCPU': vcpus}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': generation,
            'consumer_type': 'INSTANCE'})

    assert claim(a, 1, None)[0] == 204
    status, body = call('GET', '%s/allocations/%s' % (b, consumer))
    assert body['consumer_generation'] == 1
    status, body = claim(b, 2, None)         # "new consumer": it is not
    assert status == 409
    assert body['errors'][0]['code'] == 'placement.concurrent_update'
    assert claim(b, 2, 1)[0] == 204
    status, body = claim(a, 3, 1)            # stale after b's write
    assert status == 409
    status, body = call('GET', '%s/resource_providers/%s/usages' % (a, rp))
    assert body['usages'] == {'VCPU': 2}


def test_stopping_one_server_loses_no_claim(own_pair):
    # Clients spread over both servers and move to the other one when a
    # connection is refused; one server is stopped (SIGTERM) mid-stream.
    # In the end every acknowledged claim is stored, nothing else is, and
    # no request failed with a server error.
    a, b = own_pair
    rp = provider(a.url)
    call('PUT', '%s/resource_providers/%s/inventories' % (a.url, rp), {
        'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 10000}}})
    acknowledged, attempted, failures = set(), set(), []
    stop = threading.Event()
    lock = threading.Lock()

    def client(i):
        bases = [a.url, b.url] if i % 2 else [b.url, a.url]
        while not stop.is_set():
            consumer = str(uuid.uuid4())
            with lock:
                attempted.add(consumer)
            body = {'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'p',
                    'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'}
            for base in bases:
                try:
                    status, reply = call('PUT', '%s/allocations/%s' % (base, consumer), body)
                except requests.ConnectionError:
                    continue        # that server is gone: try the other
                if status == 204:
                    with lock:
                        acknowledged.add(consumer)
                elif status != 409:  # a retry of a claim that did land
                    failures.append((status, reply))
                break

    threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(2)
    assert a.stop() == 0
    with lock:
        before = len(acknowledged)
    time.sleep(2)
    stop.set()
    for t in threads:
        t.join()
    assert not failures, failures[:5]
    assert before > 0 and len(acknowledged) > before   # claims went on through b
    status, body = call('GET', '%s/resource_providers/%s/allocations' % (b.url, rp))
    stored = set(body['allocations'])
    assert acknowledged <= stored <= attempted
    status, body = call('GET', '%s/resource_providers/%s/usages' % (b.url, rp))
    assert body['usages'] == {'VCPU': len(stored)}
