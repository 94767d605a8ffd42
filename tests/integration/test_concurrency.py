"""Concurrent writers against real placement-server processes.

Two servers with two worker processes each share one PostgreSQL or
MariaDB database; many client threads start their writes at the same
instant. Generations and provider locks must make exactly the right
number of them win.
"""
import collections
import threading
import uuid

import pytest

from placement_server import errors
from tests.integration.servers import call
from tests.integration.servers import make_provider

pytestmark = pytest.mark.integration

CLIENTS = 50
CAPACITY = 20


@pytest.fixture(params=['postgresql', 'mysql'])
def urls(request, _databases, placement_servers):
    """Base URLs of 2 servers x 2 workers on a fresh database."""
    test_db = _databases(request.param)
    test_db.reset()
    return [s.url for s in placement_servers(test_db.url, count=2, workers=2)]


def all_at_once(count, work):
    """Run ``work(i)`` in ``count`` threads released together; the results."""
    barrier = threading.Barrier(count)
    results = [None] * count

    def run(i):
        barrier.wait()
        results[i] = work(i)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_concurrent_claims_never_overcommit(urls):
    rp = make_provider(urls[0], {'VCPU': {'total': CAPACITY}})

    def claim(i):
        return call('PUT', '%s/allocations/%s' % (urls[i % len(urls)], uuid.uuid4()), {
            'allocations': {rp: {'resources': {'VCPU': 1}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})

    results = all_at_once(CLIENTS, claim)
    statuses = collections.Counter(status for status, _ in results)
    assert statuses == {204: CAPACITY, 409: CLIENTS - CAPACITY}, results
    for status, body in results:
        if status == 409:
            assert body['errors'][0]['code'] in (errors.UNDEFINED,
                                                 errors.CONCURRENT_UPDATE), body
    status, body = call('GET', '%s/resource_providers/%s/usages' % (urls[1], rp))
    assert body['usages'] == {'VCPU': CAPACITY}
    # One generation step per successful claim, after the inventory write.
    assert body['resource_provider_generation'] == 1 + CAPACITY
    status, body = call('GET', '%s/resource_providers/%s/allocations' % (urls[1], rp))
    assert len(body['allocations']) == CAPACITY


def test_concurrent_multi_provider_claims_are_all_or_nothing(urls):
    # Each claim takes 1 VCPU from a and 1 from b; b is the scarce one.
    a = make_provider(urls[0], {'VCPU': {'total': 100}})
    b = make_provider(urls[0], {'VCPU': {'total': 10}})

    def claim(i):
        first, second = (a, b) if i % 2 else (b, a)   # both lock orders
        return call('POST', '%s/allocations' % urls[i % len(urls)], {
            str(uuid.uuid4()): {
                'allocations': {first: {'resources': {'VCPU': 1}},
                                second: {'resources': {'VCPU': 1}}},
                'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
                'consumer_type': 'INSTANCE'}})

    results = all_at_once(30, claim)
    statuses = collections.Counter(status for status, _ in results)
    assert statuses == {204: 10, 409: 20}, results
    for rp in (a, b):
        status, body = call('GET', '%s/resource_providers/%s/usages' % (urls[1], rp))
        assert body['usages'] == {'VCPU': 10}


@pytest.mark.parametrize('new_class', [False, True], ids=['change', 'add'])
def test_concurrent_inventory_writers_one_wins(urls, new_class):
    rp = make_provider(urls[0], {'VCPU': {'total': 1}})
    writers = 20

    def update(i):
        inventories = {'VCPU': {'total': 100 + i}}
        if new_class:
            inventories['DISK_GB'] = {'total': 100 + i}
        return call('PUT', '%s/resource_providers/%s/inventories' % (urls[i % len(urls)], rp),
                    {'resource_provider_generation': 1, 'inventories': inventories})

    results = all_at_once(writers, update)
    winners = [body for status, body in results if status == 200]
    losers = [body for status, body in results if status != 200]
    assert len(winners) == 1, results
    assert len(losers) == writers - 1
    for status, body in results:
        if status != 200:
            assert status == 409
            assert body['errors'][0]['code'] == 'placement.concurrent_update'
    status, body = call('GET', '%s/resource_providers/%s/inventories' % (urls[1], rp))
    assert body == winners[0]
    assert body['resource_provider_generation'] == 2


def test_concurrent_writers_of_one_consumer_one_wins(urls):
    rp = make_provider(urls[0], {'VCPU': {'total': 100}})
    consumer = '%s/allocations/%s' % ('%s', uuid.uuid4())

    def write(i, generation):
        return call('PUT', consumer % urls[i % len(urls)], {
            'allocations': {rp: {'resources': {'VCPU': 1 + i}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': generation,
            'consumer_type': 'INSTANCE'})

    # Creating it (null: "I expect a new consumer"), then updating it from
    # generation 1: each time exactly one writer can go first.
    for generation in (None, 1):
        results = all_at_once(20, lambda i: write(i, generation))
        assert sorted(status for status, _ in results) == [204] + [409] * 19, results
        for status, body in results:
            if status == 409:
                assert body['errors'][0]['code'] == 'placement.concurrent_update'
    status, body = call('GET', consumer % urls[1])
    assert body['consumer_generation'] == 2
    status, usage = call('GET', '%s/resource_providers/%s/usages' % (urls[1], rp))
    assert usage['usages']['VCPU'] == body['allocations'][rp]['resources']['VCPU']
