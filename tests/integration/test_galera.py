"""Placement on a three-node MariaDB Galera cluster behind several servers.

One placement-server process (two workers) per Galera node, as operators
run API hosts behind a load balancer. Writes through different nodes meet
only at COMMIT, where Galera's certification refuses the later one as a
deadlock: the server must replay it, so clients see exactly the answers a
single database gives. A node that dies makes its server answer 503 (JSON,
at once) until the node is back, while the others keep serving, and no
acknowledged write is lost or doubled. What a worker keeps in memory (the
candidates summaries) must follow writes made through another node.
"""
import collections
import concurrent.futures
import os
import threading
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from tests import galera
from tests.integration import servers
from tests.integration.servers import call
from tests.integration.servers import make_provider

pytestmark = pytest.mark.integration


# Reads wait until the node has applied every write the cluster committed
# before them (wsrep_sync_wait=1): what one API host wrote, another reads.
CONF = """\
[placement_database]
mysql_wsrep_sync_wait = 1
"""


@pytest.fixture(scope='module')
def cluster(tmp_path_factory):
    """Three Galera nodes, a placement database, a server on each node."""
    started = galera.Cluster().start()
    workdir = str(tmp_path_factory.mktemp('galera-servers'))
    conf_path = os.path.join(workdir, 'placement.conf')
    with open(conf_path, 'w') as f:
        f.write(CONF)
    name = 'placement_%s' % uuid.uuid4().hex[:8]
    started.create_database(name)
    started.db_name = name
    started.servers = []
    try:
        for i, node in enumerate(started.nodes):
            started.servers.append(servers.Server(
                node.url(name), workdir, workers=2, sync_db=(i == 0),
                config_file=conf_path).start())
        yield started
    finally:
        for server in started.servers:
            server.stop()
        started.stop()


def claim_body(rp):
    return {'allocations': {rp: {'resources': {'VCPU': 1}}}, 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'}


def stored_claims(node, db_name, providers):
    """{provider uuid: Counter(consumer uuid: VCPU rows)} as node holds them."""
    engine = sa.create_engine(node.url(db_name), poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT rp.uuid, a.consumer_id FROM allocations a '
                'JOIN resource_providers rp ON rp.id = a.resource_provider_id '
                'WHERE rp.uuid IN :rps').bindparams(sa.bindparam('rps', expanding=True)),
                {'rps': list(providers)}).all()
    finally:
        engine.dispose()
    found = {rp: collections.Counter() for rp in providers}
    for rp, consumer in rows:
        found[rp][consumer] += 1
    return found


def run_all(count, work, threads=40):
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, range(count)))


def test_claims_through_two_nodes_never_overcommit(cluster):
    a_url, b_url = cluster.servers[0].url, cluster.servers[1].url
    providers = [make_provider(a_url, {'VCPU': {'total': 10}}) for _ in range(2)]

    def claim(i):
        consumer = str(uuid.uuid4())
        status, body = call('PUT', '%s/allocations/%s' % ((a_url, b_url)[i % 2], consumer),
                            claim_body(providers[(i // 2) % 2]))
        return status, consumer, providers[(i // 2) % 2], body

    results = run_all(120, claim)
    statuses = collections.Counter(status for status, *_ in results)
    assert statuses == {204: 20, 409: 100}, [r for r in results if r[0] not in (204, 409)]
    acknowledged = {(rp, consumer) for status, consumer, rp, _ in results if status == 204}
    for node in cluster.nodes:   # each node holds every acknowledged claim, once
        stored = stored_claims(node, cluster.db_name, providers)
        assert {(rp, c) for rp in providers for c in stored[rp]} == acknowledged
        assert all(n == 1 for rp in providers for n in stored[rp].values())
    for rp in providers:
        status, body = call('GET', '%s/resource_providers/%s/usages' % (b_url, rp))
        assert body['usages'] == {'VCPU': 10}
        assert body['resource_provider_generation'] == 1 + 10


def test_a_dead_node_gives_503_and_its_server_recovers(cluster):
    urls = [s.url for s in cluster.servers]
    dead_url = urls[2]
    providers = [make_provider(urls[0], {'VCPU': {'total': 10}}) for _ in range(2)]
    sent = threading.Semaphore(0)
    killed = threading.Event()
    outcomes = []   # (server index, status, elapsed) of every attempt

    def claim(i):
        """Claim like a client behind a load balancer: on a 503 the same
        claim goes to the next server."""
        consumer, rp = str(uuid.uuid4()), providers[i % 2]
        first = i % 3
        seen = []
        for attempt in range(3):
            server = (first + attempt) % 3
            started = time.monotonic()
            status, body = call('PUT', '%s/allocations/%s' % (urls[server], consumer),
                                claim_body(rp))
            outcomes.append((server, status, time.monotonic() - started, body))
            seen.append(status)
            sent.release()
            if status != 503:
                break
        return consumer, rp, seen

    def killer():
        for _ in range(40):
            sent.acquire()
        cluster.nodes[2].kill()
        killed.set()

    kill_thread = threading.Thread(target=killer)
    kill_thread.start()
    results = run_all(120, claim, threads=12)
    kill_thread.join()
    assert killed.is_set()

    # Only the server on the dead node refused, with 503, quickly, in JSON.
    refusals = [(server, status, elapsed, body) for server, status, elapsed, body
                in outcomes if status not in (204, 409)]
    assert refusals, 'no request met the dead node'
    for server, status, elapsed, body in refusals:
        assert (server, status) == (2, 503), refusals
        assert elapsed < 10, refusals
        assert body['errors'][0]['status'] == 503
    # A claim whose commit got through before its connection died may have
    # been refused and retried: the retry then finds its consumer (409).
    final = [seen[-1] for _, _, seen in results]
    assert set(final) <= {204, 409}
    acknowledged = {(rp, c) for c, rp, seen in results if seen[-1] == 204}
    stored = stored_claims(cluster.nodes[0], cluster.db_name, providers)
    stored_pairs = {(rp, c) for rp in providers for c in stored[rp]}
    assert acknowledged <= stored_pairs
    assert all(n == 1 for rp in providers for n in stored[rp].values())
    assert stored_pairs - acknowledged <= {(rp, c) for c, rp, seen in results
                                           if 503 in seen and seen[-1] == 409}
    assert all(len(stored[rp]) == 10 for rp in providers)

    # The survivors serve; the dead node's server keeps answering 503 JSON,
    # and its health check says so too.
    status, body = call('GET', urls[1] + '/resource_providers')
    assert status == 200
    started = time.monotonic()
    status, body = call('GET', dead_url + '/resource_providers')
    assert status == 503 and time.monotonic() - started < 10, body
    assert body['errors'][0]['code'] == 'placement.undefined_code'
    resp = requests.get(dead_url + '/healthcheck', timeout=30)
    assert resp.status_code == 503 and 'database: unreachable' in resp.text

    # The node comes back: its server recovers on its own and sees every
    # write made while it was away.
    cluster.start_node(2)
    deadline = time.monotonic() + 60
    while call('GET', dead_url + '/resource_providers')[0] != 200:
        assert time.monotonic() < deadline, 'the server did not recover'
        time.sleep(0.5)
    for rp in providers:
        status, body = call('GET', '%s/resource_providers/%s/usages' % (dead_url, rp))
        assert body['usages'] == {'VCPU': 10}
    assert stored_claims(cluster.nodes[2], cluster.db_name, providers) == stored


def _race(urls, count, write):
    """``write(url, i)`` from ``count`` threads at once over every server."""
    barrier = threading.Barrier(count)

    def run(i):
        barrier.wait()
        return write(urls[i % len(urls)], i)
    return run_all(count, run, threads=count)


def _one_winner(results, expect_code='placement.concurrent_update'):
    statuses = collections.Counter(status for status, _ in results)
    winners = [body for status, body in results if status in (200, 204)]
    assert len(winners) == 1, results
    assert statuses[409] == len(results) - 1, [r for r in results if r[0] != 409]
    for status, body in results:
        if status == 409:
            assert body['errors'][0]['code'] == expect_code, body
    return winners[0]


def test_racing_writes_through_two_nodes_keep_generations(cluster):
    urls = [cluster.servers[0].url, cluster.servers[1].url]
    rp = make_provider(urls[0], {'VCPU': {'total': 8}})
    path = '/resource_providers/%s' % rp
    agg = str(uuid.uuid4())
    status, _ = call('PUT', urls[0] + '/traits/CUSTOM_GALERA_RACE')
    assert status in (201, 204)

    writes = [
        ('/inventories', lambda i, g: {'resource_provider_generation': g,
                                       'inventories': {'VCPU': {'total': 100 + i}}}),
        # (a write that changes nothing keeps the generation: every one adds)
        ('/traits', lambda i, g: {'resource_provider_generation': g,
                                  'traits': ['CUSTOM_GALERA_RACE']}),
        ('/aggregates', lambda i, g: {'resource_provider_generation': g,
                                      'aggregates': [agg]}),
    ]
    for suffix, body_for in writes:
        generation = call('GET', urls[1] + path)[1]['generation']
        results = _race(urls, 16, lambda url, i: call(
            'PUT', url + path + suffix, body_for(i, generation)))
        winner = _one_winner(results)
        assert winner['resource_provider_generation'] == generation + 1
        for url in urls:   # both nodes agree on the winner and the generation
            status, body = call('GET', url + path + suffix)
            assert body == winner, (suffix, url)

    # Creating one name through both servers at once: one provider.
    name = 'race-%s' % uuid.uuid4()
    results = _race(urls, 16, lambda url, i: call('POST', url + '/resource_providers',
                                                  {'name': name}))
    _one_winner(results, expect_code='placement.duplicate_name')


def test_summaries_cached_by_one_host_follow_writes_through_another(cluster):
    # Server b (node 1) caches each provider's capacities and traits per
    # generation; every write goes through server a (node 0).
    a_url, b_url = cluster.servers[0].url, cluster.servers[1].url
    rp = make_provider(a_url, {'VCPU': {'total': 8}})
    trait = 'CUSTOM_GALERA_%s' % uuid.uuid4().hex[:8].upper()
    assert call('PUT', '%s/traits/%s' % (a_url, trait))[0] == 201

    def candidates(query):
        status, body = call('GET', b_url + '/allocation_candidates?' + query)
        assert status == 200, body
        return {rp_uuid: summary for rp_uuid, summary in body['provider_summaries'].items()
                if rp_uuid == rp}

    def vcpu(query='resources=VCPU:1'):
        summary = candidates(query).get(rp)
        return summary and summary['resources']['VCPU']

    generation = 1
    for step in range(10):
        for _ in range(4):   # warm every worker of b on this generation
            assert vcpu() == {'capacity': 8 + step, 'used': 0}
        status, body = call('PUT', '%s/resource_providers/%s/inventories' % (a_url, rp), {
            'resource_provider_generation': generation,
            'inventories': {'VCPU': {'total': 9 + step}}})
        assert status == 200, body
        generation += 1
        # At once, on b, through the other node: the new capacity.
        assert vcpu() == {'capacity': 9 + step, 'used': 0}

    assert candidates('resources=VCPU:1&required=%s' % trait) == {}
    status, body = call('PUT', '%s/resource_providers/%s/traits' % (a_url, rp),
                        {'resource_provider_generation': generation, 'traits': [trait]})
    assert status == 200, body
    assert rp in candidates('resources=VCPU:1&required=%s' % trait)

    consumer = str(uuid.uuid4())
    status, body = call('PUT', '%s/allocations/%s' % (a_url, consumer), {
        'allocations': {rp: {'resources': {'VCPU': 5}}}, 'project_id': 'p',
        'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert status == 204, body
    assert vcpu() == {'capacity': 18, 'used': 5}
    assert vcpu('resources=VCPU:14') is None
