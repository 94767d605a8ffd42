"""Candidates kept per tree between requests (``candidates._kept``) answer
exactly what a search from scratch answers, whatever was written between
two asks: on every backend, a random run of writes through the API --
claims, freed allocations, inventory and trait changes, aggregates, moved
and deleted providers, new trees -- each followed by the same queries,
each answer compared with ``candidates.find`` without a key."""
import json
import random
import uuid

import pytest
import webob
import webob.multidict

from placement_server import candidates
from placement_server.candidates import render
from placement_server.candidates import request as candidates_request
from tests.functional import client as client_mod
from tests.functional.client import make_provider

AGG = 'a9a90000-0000-4000-8000-000000000001'
QUERIES = [
    'resources=VCPU:1',
    'resources=VCPU:2,MEMORY_MB:512&required=HW_CPU_X86_AVX2',
    'resources=DISK_GB:10&resources_C=VCPU:1,MEMORY_MB:256&resources_D=VGPU:1'
    '&group_policy=none&same_subtree=_C,_D',
    'resources=DISK_GB:10&resources_C1=VCPU:1&resources_C2=VCPU:1&group_policy=isolate',
    'resources=VCPU:1,DISK_GB:5&member_of=%s&limit=3' % AGG,
    'resources_C=VCPU:1&root_required=CUSTOM_GOLD&group_policy=none',
    'resources=VCPU:1&required=!HW_CPU_X86_AVX2&limit=2',
]
VERSION = '1.39'


def _answer(api, query):
    resp = api.get('/allocation_candidates?' + query, version=VERSION)
    assert resp.status_int == 200, resp.body
    return resp.json


def _from_scratch(database, query):
    request = candidates_request.parse(
        webob.multidict.MultiDict(webob.Request.blank('/?' + query).GET), (1, 39))
    with database.reader() as conn:
        result = candidates.find(conn, request)
    return json.loads(render.render(result, request))


class Cloud:
    """Trees written through the API, and a random next write."""

    def __init__(self, api, rng):
        self.api, self.rng = api, rng
        self.roots, self.children, self.consumers = [], [], []
        assert api.put('/traits/CUSTOM_GOLD', version=VERSION).status_int in (201, 204)

    def generation(self, rp):
        return self.api.get('/resource_providers/%s' % rp, version=VERSION).json['generation']

    def tree(self):
        n = len(self.roots)
        root = make_provider(self.api, 'cn%d-%s' % (n, uuid.uuid4().hex[:6]),
                             {'DISK_GB': {'total': 100}})
        self.roots.append(root)
        for k in range(2):
            numa = make_provider(self.api, 'numa%d-%d-%s' % (n, k, uuid.uuid4().hex[:6]),
                                 {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 2048}},
                                 parent=root)
            self.children.append(numa)
            if self.rng.random() < 0.5:
                gpu = make_provider(self.api, 'gpu%d-%d-%s' % (n, k, uuid.uuid4().hex[:6]),
                                    {'VGPU': {'total': 2}}, parent=numa)
                self.children.append(gpu)

    def claim(self):
        body = _answer(self.api, 'resources=VCPU:1&limit=20')['allocation_requests']
        if not body:
            return
        consumer = str(uuid.uuid4())
        resp = self.api.put('/allocations/%s' % consumer, dict(
            self.rng.choice(body), consumer_generation=None, consumer_type='INSTANCE',
            project_id=str(uuid.uuid4()), user_id=str(uuid.uuid4())), version=VERSION)
        assert resp.status_int == 204, resp.body
        self.consumers.append(consumer)

    def free(self):
        if self.consumers:
            consumer = self.consumers.pop(self.rng.randrange(len(self.consumers)))
            assert self.api.delete('/allocations/%s' % consumer).status_int == 204

    def inventory(self):
        rp = self.rng.choice(self.children)
        resp = self.api.put('/resource_providers/%s/inventories/VCPU' % rp, {
            'resource_provider_generation': self.generation(rp),
            'total': self.rng.randint(1, 6)}, version=VERSION)
        # a child without VCPU (a GPU), or a total below what is used
        assert resp.status_int in (200, 400, 409), resp.body

    def traits(self):
        rp = self.rng.choice(self.roots + self.children)
        traits = self.rng.choice([[], ['HW_CPU_X86_AVX2'], ['CUSTOM_GOLD'],
                                  ['HW_CPU_X86_AVX2', 'CUSTOM_GOLD']])
        resp = self.api.put('/resource_providers/%s/traits' % rp, {
            'resource_provider_generation': self.generation(rp), 'traits': traits},
            version=VERSION)
        assert resp.status_int == 200, resp.body

    def aggregates(self):
        rp = self.rng.choice(self.roots + self.children)
        resp = self.api.put('/resource_providers/%s/aggregates' % rp, {
            'resource_provider_generation': self.generation(rp),
            'aggregates': self.rng.choice([[], [AGG]])}, version=VERSION)
        assert resp.status_int == 200, resp.body

    def move(self):
        child = self.rng.choice(self.children)
        parent = self.rng.choice(self.roots)
        resp = self.api.put('/resource_providers/%s' % child, {
            'name': 'moved-%s' % uuid.uuid4().hex[:8], 'parent_provider_uuid': parent},
            version=VERSION)
        assert resp.status_int in (200, 400), resp.body   # 400: a loop

    def delete(self):
        rp = self.rng.choice(self.children)
        resp = self.api.delete('/resource_providers/%s' % rp, version=VERSION)
        if resp.status_int == 204:
            self.children.remove(rp)
        else:
            assert resp.status_int == 409, resp.body   # has children or allocations

    def step(self):
        write = self.rng.choice([self.claim, self.claim, self.free, self.inventory,
                                 self.traits, self.aggregates, self.move, self.delete,
                                 self.tree])
        write()
        return write.__name__


def _follow(api, database, seed, trees, steps):
    """``steps`` random writes on ``trees`` new trees, every query checked
    against a search from scratch after each."""
    cloud = Cloud(api, random.Random(seed))
    for _ in range(trees):
        cloud.tree()
    done = []
    for _ in range(steps):
        done.append(cloud.step())
        for query in QUERIES:
            expected = _from_scratch(database, query)
            # twice: the second time the answer kept as it was
            assert _answer(api, query) == expected, (done, query)
            assert _answer(api, query) == expected, (done, query)


def test_kept_candidates_follow_every_write(api, database):
    _follow(api, database, seed=20261124, trees=5, steps=60)


def test_kept_candidates_evicted_when_over_bounds(api, database, monkeypatch):
    """Beyond KEPT_REQUESTS requests or KEPT_CANDIDATES candidates the least
    recent answers go (an answer over the bound is not kept): still exact."""
    monkeypatch.setattr(candidates, 'KEPT_REQUESTS', 2)
    monkeypatch.setattr(candidates, 'KEPT_CANDIDATES', 6)
    _follow(api, database, seed=7, trees=4, steps=15)
    with database.reader() as conn:
        kept = candidates.view_mod.of(conn).answers
        assert len(kept) <= 2
        assert sum(entry.count for entry in kept.values()) <= 6


def _counting_answers(monkeypatch):
    """How many answers were built (not taken as kept) so far."""
    built = []
    with_summaries = candidates._with_summaries

    def counted(*args, **kwargs):
        built.append(1)
        return with_summaries(*args, **kwargs)
    monkeypatch.setattr(candidates, '_with_summaries', counted)
    return built


@pytest.mark.parametrize('query', [QUERIES[0], QUERIES[2], QUERIES[3]])
def test_answer_kept_while_nothing_changes(api, database, monkeypatch, query):
    """Asked again with nothing written since, the answer is the one built
    last time; any write builds it again."""
    cloud = Cloud(api, random.Random(3))
    for _ in range(3):
        cloud.tree()
    built = _counting_answers(monkeypatch)
    first = _answer(api, query)
    assert first['allocation_requests']
    assert len(built) == 1
    assert _answer(api, query) == first
    assert len(built) == 1
    cloud.claim()
    built.clear()
    assert _answer(api, query) == _from_scratch(database, query)
    assert len(built) == 2   # (the second: the search from scratch)


def test_kept_answer_randomized_each_time(database, monkeypatch):
    """With randomize_allocation_candidates, a kept answer is shuffled anew
    for each request, and a limit shows a sample whose summaries are the
    sample's providers only."""
    conf = client_mod.make_conf()
    conf.set_override('randomize_allocation_candidates', True, group='placement')
    api = client_mod.Client(client_mod.make_app(database, conf))
    providers = {make_provider(api, 'cn%d' % i, {'VCPU': {'total': 4}}) for i in range(8)}
    built = _counting_answers(monkeypatch)
    orders, sampled = set(), set()
    for _ in range(12):
        whole = _answer(api, 'resources=VCPU:1')
        order = tuple(next(iter(c['allocations'])) for c in whole['allocation_requests'])
        assert set(order) == providers == set(whole['provider_summaries'])
        orders.add(order)
        sample = _answer(api, 'resources=VCPU:1&limit=2')
        shown = {next(iter(c['allocations'])) for c in sample['allocation_requests']}
        assert len(shown) == 2 and set(sample['provider_summaries']) == shown
        sampled |= shown
    assert len(orders) > 1 and len(sampled) > 2
    # built once for both queries (with randomize a limit only samples the
    # one answer); each limited answer summarises its own sample
    assert len(built) == 1 + 12
