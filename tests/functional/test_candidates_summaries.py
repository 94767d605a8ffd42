"""Provider summaries stay exact while workers keep capacities and traits
between requests (placement_server/candidates/summaries.py): every
write through the API shows in the next answer, on every backend."""
import uuid

import sqlalchemy as sa

from placement_server.candidates import summaries as candidates_summaries
from tests import databases
from tests.functional.client import make_provider

QUERY = '/allocation_candidates?resources=VCPU:1'


def summary(api, rp):
    resp = api.get(QUERY, version='1.39')
    assert resp.status_int == 200, resp.body
    return resp.json['provider_summaries'].get(rp)


def put(api, path, body, version='1.39'):
    resp = api.put(path, body, version=version)
    assert resp.status_int in (200, 204), resp.body
    return resp


def test_inventory_trait_and_allocation_writes_show_at_once(api):
    rp = make_provider(api, inventories={'VCPU': {'total': 8}})
    assert summary(api, rp)['resources'] == {'VCPU': {'capacity': 8, 'used': 0}}

    put(api, '/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 1,
        'inventories': {'VCPU': {'total': 16, 'allocation_ratio': 2.0, 'reserved': 2},
                        'MEMORY_MB': {'total': 1024}}})
    assert summary(api, rp)['resources'] == {'VCPU': {'capacity': 28, 'used': 0},
                                             'MEMORY_MB': {'capacity': 1024, 'used': 0}}

    put(api, '/resource_providers/%s/traits' % rp, {
        'resource_provider_generation': 2, 'traits': ['HW_CPU_X86_AVX2']})
    assert summary(api, rp)['traits'] == ['HW_CPU_X86_AVX2']

    consumer = str(uuid.uuid4())
    put(api, '/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': {'VCPU': 3}}}, 'project_id': str(uuid.uuid4()),
        'user_id': str(uuid.uuid4()), 'consumer_generation': None,
        'consumer_type': 'INSTANCE'})
    assert summary(api, rp)['resources']['VCPU'] == {'capacity': 28, 'used': 3}

    assert api.delete('/allocations/%s' % consumer).status_int == 204
    assert api.delete('/resource_providers/%s/traits' % rp, version='1.39').status_int == 204
    shown = summary(api, rp)
    assert shown['traits'] == []
    assert shown['resources']['VCPU'] == {'capacity': 28, 'used': 0}


def test_provider_recreated_with_the_same_uuid_and_generation(api):
    """The new provider reaches the generation the old one had, with other
    inventories; on SQLite it may even get the old one's id."""
    rp = make_provider(api, 'node', inventories={'VCPU': {'total': 8}})
    assert summary(api, rp)['resources']['VCPU']['capacity'] == 8
    assert api.delete('/resource_providers/%s' % rp, version='1.39').status_int == 204
    make_provider(api, 'node', uuid=rp, inventories={'VCPU': {'total': 4}})
    assert summary(api, rp)['resources']['VCPU']['capacity'] == 4


def test_cache_starts_again_when_full(monkeypatch):
    monkeypatch.setattr(candidates_summaries.StaticCache, 'LIMIT', 3)
    cache = candidates_summaries.StaticCache()
    entry = (('u', 1), {}, [])
    cache.store({1: entry, 2: entry})
    assert cache.split({1: ('u', 1), 2: ('u', 2)}) == ({1: entry}, [2])
    cache.store({3: entry, 4: entry})
    assert set(cache.entries) == {3, 4}


def test_no_cache_where_sqlite_may_reuse_provider_ids(tmp_path):
    """A SQLite database whose providers table lacks AUTOINCREMENT (made
    before the schema asked for it) gets no cache; a migrated one does."""
    old = sa.create_engine('sqlite:///%s' % (tmp_path / 'old.sqlite'))
    with old.connect() as conn:
        conn.exec_driver_sql('CREATE TABLE resource_providers (id INTEGER PRIMARY KEY)')
        assert candidates_summaries._cache_of(conn) is None
    new = databases.TestDatabase('sqlite', str(tmp_path))
    try:
        with new.db.reader() as conn:
            assert isinstance(candidates_summaries._cache_of(conn),
                              candidates_summaries.StaticCache)
    finally:
        new.drop()
