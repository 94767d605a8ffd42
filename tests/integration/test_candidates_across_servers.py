"""GET /allocation_candidates on one server reflects every write another
server has answered, on every worker.

Two placement-server processes with two (sync) workers each share one
PostgreSQL or MariaDB database. Client threads, each with providers of
its own, write through the first server -- inventories, claims, a
consumer moving between providers, traits, aggregates (before 1.19 and
at 1.19), a provider moving to another tree, a custom resource class
created and deleted, providers deleted -- and after every write's
response came back ask the second server for allocation candidates
(1.39) by resources, required trait, member_of, in_tree and the custom
class, and compare the providers proposed with the thread's own model:
a provider with no room left, without the trait or aggregate, out of the
tree or deleted must not be proposed; a new one, or one with room again,
must be. The server log maps each checked read to the worker that
answered it: every worker of the second server answered some.

Today candidates are SQL and this holds trivially; a per-worker
in-memory view must keep it true.
"""
import concurrent.futures
import re
import uuid as uuidlib

import pytest
import requests

from tests.integration import servers

pytestmark = pytest.mark.integration

CLIENTS = 4
V = '1.39'
FAST = 'CUSTOM_FAST'
GOLD = 'CUSTOM_GOLD_%d'   # each client's own custom class


@pytest.fixture(params=['postgresql', 'mysql'])
def pair(request, _databases, placement_servers):
    """(writes go here, reads go here): 2 servers x 2 workers, one database."""
    test_db = _databases(request.param)
    test_db.reset()
    return placement_servers(test_db.url, count=2, workers=2)


def send(method, url, body=None, version=V):
    return requests.request(method, url, json=body, timeout=60, headers={
        'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement %s' % version})


class Client:
    """One client thread's providers, what it knows of them, and its checks."""

    def __init__(self, number, writes_to, reads_from):
        self.number = number
        self.a, self.b = writes_to, reads_from
        self.providers = {}   # uuid: model
        self.gold = GOLD % number
        self.gold_exists = False
        self.agg = str(uuidlib.uuid4())
        self.roots = {}       # name: uuid of the trees in_tree asks about
        self.request_ids = []
        self.reads = 0

    # writes, through server a

    def write(self, method, path, body=None, version=V, status=(200, 201, 204)):
        resp = send(method, self.a + path, body, version)
        statuses = status if isinstance(status, tuple) else (status,)
        assert resp.status_code in statuses, (method, path, resp.status_code, resp.text)
        self.check('after %s %s' % (method, path))
        return resp.json() if resp.content else None

    def generation(self, rp):
        resp = send('GET', '%s/resource_providers/%s' % (self.a, rp))
        assert resp.status_code == 200, resp.text
        return resp.json()['generation']

    def create(self, name, parent=None):
        body = {'name': '%s-%d-%s' % (name, self.number, uuidlib.uuid4().hex[:8])}
        if parent:
            body['parent_provider_uuid'] = parent
        resp = send('POST', self.a + '/resource_providers', body)
        assert resp.status_code == 200, resp.text
        uuid = resp.json()['uuid']
        self.providers[uuid] = {'vcpu': None, 'used': 0, 'traits': set(), 'aggs': set(),
                                'parent': parent, 'gold': 0}
        self.check('after creating %s' % name)
        return uuid

    def set_vcpu(self, rp, total, reserved=0):
        self.providers[rp]['vcpu'] = (total, reserved)
        self.write('PUT', '/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': self.generation(rp),
            'inventories': {'VCPU': {'total': total, 'reserved': reserved}}})

    def claim(self, consumer, allocations, generation, old=None):
        for rp in old or {}:
            self.providers[rp]['used'] -= old[rp]
        for rp, used in allocations.items():
            self.providers[rp]['used'] += used
        self.write('PUT', '/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': {'VCPU': used}}
                            for rp, used in allocations.items()},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': generation,
            'consumer_type': 'INSTANCE'})

    def unclaim(self, consumer, allocations):
        for rp, used in allocations.items():
            self.providers[rp]['used'] -= used
        self.write('DELETE', '/allocations/%s' % consumer)

    def delete(self, rp):
        del self.providers[rp]
        self.roots = {name: root for name, root in self.roots.items() if root != rp}
        self.write('DELETE', '/resource_providers/%s' % rp)

    def root(self, rp):
        while self.providers[rp]['parent']:
            rp = self.providers[rp]['parent']
        return rp

    # reads, from server b

    def expected(self, query):
        def room(m):
            return m['vcpu'] is not None and m['vcpu'][0] - m['vcpu'][1] - m['used'] >= 1
        wanted = {rp: m for rp, m in self.providers.items() if room(m)}
        if query == 'required':
            wanted = {rp: m for rp, m in wanted.items() if FAST in m['traits']}
        elif query == 'member_of':
            wanted = {rp: m for rp, m in wanted.items() if self.agg in m['aggs']}
        elif query.startswith('in_tree'):
            root = self.roots[query.split(':')[1]]
            wanted = {rp: m for rp, m in wanted.items() if self.root(rp) == root}
        elif query == 'gold':
            wanted = {rp: m for rp, m in self.providers.items() if m['gold'] >= 1}
        return set(wanted)

    def url(self, query):
        if query == 'gold':
            return '/allocation_candidates?resources=%s:1' % self.gold
        url = '/allocation_candidates?resources=VCPU:1'
        if query == 'required':
            return url + '&required=' + FAST
        if query == 'member_of':
            return url + '&member_of=' + self.agg
        if query.startswith('in_tree'):
            return url + '&in_tree=' + self.roots[query.split(':')[1]]
        return url

    def check(self, when):
        """Every query, once, against server b: only this client's
        providers are looked at (the others change meanwhile)."""
        queries = ['resources', 'required', 'member_of'] + [
            'in_tree:%s' % name for name in sorted(self.roots)] + ['gold']
        for query in queries:
            resp = send('GET', self.b + self.url(query))
            self.reads += 1
            self.request_ids.append(resp.headers['x-openstack-request-id'])
            if query == 'gold' and not self.gold_exists:
                assert resp.status_code == 400, (when, query, resp.text)
                assert self.gold in resp.json()['errors'][0]['detail']
                continue
            assert resp.status_code == 200, (when, query, resp.text)
            body = resp.json()
            proposed = {rp for request in body['allocation_requests']
                        for rp in request['allocations']} & set(self.providers)
            summarised = set(body['provider_summaries']) & set(self.providers)
            want = self.expected(query)
            assert proposed == want, '%s, %s: proposed %s, expected %s' % (
                when, query, sorted(proposed), sorted(want))
            # summaries (1.29+) name every provider of the proposed trees
            trees = {self.root(rp) for rp in want}
            assert summarised == {rp for rp in self.providers
                                  if self.root(rp) in trees}, (when, query)

    def run(self):
        p = self.create('p')
        self.set_vcpu(p, 2)
        r = self.create('r')
        self.roots['r'] = r
        c = self.create('c', parent=r)
        self.set_vcpu(c, 1)
        d = self.create('d', parent=c)
        self.set_vcpu(d, 1)
        r2 = self.create('r2')
        self.roots['r2'] = r2
        one, two = str(uuidlib.uuid4()), str(uuidlib.uuid4())
        self.claim(one, {p: 1}, None)           # p: 1 left
        self.claim(two, {p: 1}, None)           # p: full
        self.claim(two, {c: 1}, 1, old={p: 1})  # two moves to c: p has room, c is full
        self.providers[p]['traits'] = {FAST}
        self.write('PUT', '/resource_providers/%s/traits' % p, {
            'traits': [FAST], 'resource_provider_generation': self.generation(p)})
        self.providers[p]['aggs'] = {self.agg}
        self.write('PUT', '/resource_providers/%s/aggregates' % p, {
            'aggregates': [self.agg], 'resource_provider_generation': self.generation(p)},
            version='1.19')
        self.providers[c]['aggs'] = {self.agg}
        self.write('PUT', '/resource_providers/%s/aggregates' % c, [self.agg], version='1.1')
        # c moves to r2's tree, d (below c) with it
        self.providers[c]['parent'] = r2
        self.write('PUT', '/resource_providers/%s' % c, {
            'name': 'c-%d-moved' % self.number, 'parent_provider_uuid': r2})
        self.unclaim(two, {c: 1})               # c has room again, in r2's tree
        self.set_vcpu(p, 2, reserved=2)         # p held back: used 1 > 2 - 2
        self.providers[p]['vcpu'] = (8, 0)
        self.write('PUT', '/resource_providers/%s/inventories/VCPU' % p, {
            'total': 8, 'resource_provider_generation': self.generation(p)})
        self.providers[p]['traits'] = set()
        self.write('DELETE', '/resource_providers/%s/traits' % p)
        self.gold_exists = True
        self.write('PUT', '/resource_classes/%s' % self.gold, version='1.7', status=201)
        self.providers[r2]['gold'] = 1
        self.write('POST', '/resource_providers/%s/inventories' % r2, {
            'resource_class': self.gold, 'total': 1,
            'resource_provider_generation': self.generation(r2)}, status=201)
        self.providers[r2]['gold'] = 0
        self.write('DELETE', '/resource_providers/%s/inventories/%s' % (r2, self.gold))
        self.gold_exists = False
        self.write('DELETE', '/resource_classes/%s' % self.gold)
        self.providers[c]['aggs'] = set()
        self.write('PUT', '/resource_providers/%s/aggregates' % c, [], version='1.1')
        self.unclaim(one, {p: 1})
        self.delete(p)
        self.delete(d)
        self.delete(c)
        self.delete(r2)


def test_candidates_on_one_server_follow_writes_through_the_other(pair):
    a, b = pair
    status, body = servers.call('PUT', a.url + '/traits/' + FAST)
    assert status == 201, body
    clients = [Client(i, a.url, b.url) for i in range(CLIENTS)]
    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        for future in [pool.submit(client.run) for client in clients]:
            future.result()
    # which worker answered each checked read
    workers = set(re.findall(r'Booting worker with pid: (\d+)', b.log()))
    assert len(workers) == 2, b.log()
    answered_by = dict((rid, pid) for pid, rid in re.findall(
        r'^\S+ \S+ (\d+) INFO placement_server\.requests \[\S+ (req-[0-9a-f-]+)',
        b.log(), re.MULTILINE))
    ids = [rid for client in clients for rid in client.request_ids]
    assert sum(client.reads for client in clients) == len(ids) > 300
    missing = [rid for rid in ids if rid not in answered_by]
    assert not missing, missing[:5]
    per_worker = {pid: sum(1 for rid in ids if answered_by[rid] == pid) for pid in workers}
    assert all(n >= 20 for n in per_worker.values()), per_worker
