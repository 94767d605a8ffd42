"""Concurrent writers on one provider: the generation (or the tree lock)
lets exactly one win, on every database."""
import concurrent.futures
import threading

from tests.functional.client import make_provider

A = 'e1e1e1e1-0000-4000-8000-00000000000a'
B = 'e1e1e1e1-0000-4000-8000-00000000000b'


def _race(calls):
    """Run the calls at the same moment; their responses, in order."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        return call()
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_one_of_concurrent_trait_writes_wins(api):
    make_provider(api, 'a', uuid=A)
    traits = ['HW_CPU_X86_AVX', 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2', 'HW_CPU_X86_AVX2']
    resps = _race([
        (lambda t=t: api.put('/resource_providers/%s/traits' % A,
                             {'traits': [t], 'resource_provider_generation': 0},
                             version='1.23'))
        for t in traits])
    statuses = sorted(r.status_int for r in resps)
    assert statuses == [200, 409, 409, 409]
    winner = next(r for r in resps if r.status_int == 200).json
    final = api.get('/resource_providers/%s/traits' % A, version='1.6').json
    assert final == winner == {'traits': winner['traits'], 'resource_provider_generation': 1}
    for r in resps:
        if r.status_int == 409:
            assert r.json['errors'][0]['code'] == 'placement.concurrent_update'


def test_one_of_concurrent_aggregate_writes_wins(api):
    make_provider(api, 'a', uuid=A)
    aggs = ['a0000000-0000-4000-8000-00000000000%d' % i for i in range(3)]
    resps = _race([
        (lambda g=g: api.put('/resource_providers/%s/aggregates' % A,
                             {'aggregates': [g], 'resource_provider_generation': 0},
                             version='1.19'))
        for g in aggs])
    assert sorted(r.status_int for r in resps) == [200, 409, 409]
    final = api.get('/resource_providers/%s/aggregates' % A, version='1.19').json
    assert final['resource_provider_generation'] == 1
    assert final == next(r for r in resps if r.status_int == 200).json


def test_crossed_moves_do_not_make_a_loop(api):
    make_provider(api, 'a', uuid=A)
    make_provider(api, 'b', uuid=B)
    resps = _race([
        lambda: api.put('/resource_providers/%s' % A,
                        {'name': 'a', 'parent_provider_uuid': B}, version='1.37'),
        lambda: api.put('/resource_providers/%s' % B,
                        {'name': 'b', 'parent_provider_uuid': A}, version='1.37'),
    ])
    assert sorted(r.status_int for r in resps) == [200, 400]
    a = api.get('/resource_providers/%s' % A, version='1.37').json
    b = api.get('/resource_providers/%s' % B, version='1.37').json
    # One is the root of a two-provider tree.
    assert {a['parent_provider_uuid'], b['parent_provider_uuid']} in ({None, A}, {None, B})
    assert a['root_provider_uuid'] == b['root_provider_uuid']


def test_child_create_races_parent_delete(api):
    make_provider(api, 'a', uuid=A)
    resps = _race([
        lambda: api.post('/resource_providers', {'name': 'child', 'uuid': B,
                                                 'parent_provider_uuid': A},
                         version='1.23'),
        lambda: api.delete('/resource_providers/%s' % A, version='1.23'),
    ])
    created, deleted = (r.status_int for r in resps)
    # Either the child came first (the parent cannot go), or the parent went
    # first (the child has no parent to go under).
    assert (created, deleted) in ((200, 409), (400, 204))
