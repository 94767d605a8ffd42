"""The change sequence (placement_server/db/changes.py): every write that
changes what allocation candidates read notes the providers it changed,
and a reader following the sequence from a position learns exactly them.

Each test drives a write through the API (the in-process client) between
two reads of the sequence and compares what ``changes.since`` names with
the providers the write changed. A committed write takes exactly one
number (one counter bump); a refused one takes none and leaves no change
row. Pruning and ``invalidate_all`` send readers that are too far behind
back to a full load (``since`` answers None).
"""
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement_server.db import changes
from placement_server.db import inventories
from placement_server.db import providers
from placement_server.db import tables
from tests.functional import client as client_mod

V = '1.39'
NAMES = changes.NAMES
PROJECT = 'p'
USER = 'u'


@pytest.fixture
def api(database):
    return client_mod.Client(client_mod.make_app(database), version=V)


def position(database):
    with database.reader() as conn:
        return changes.position(conn)


def numbers(position):
    """{shard: number} of a position (its marks without their tokens)."""
    return {shard: mark.seq for shard, mark in position.items()}


def counters(database):
    with database.reader() as conn:
        return dict(conn.exec_driver_sql(
            'SELECT shard, seq FROM resource_view_counters').all())


def change_rows(database):
    with database.reader() as conn:
        return sorted(map(tuple, conn.exec_driver_sql(
            'SELECT shard, seq, provider_id FROM resource_view_changes').all()))


def ids(database, *uuids):
    """The provider ids of ``uuids``, as a set."""
    rp = tables.resource_providers
    with database.reader() as conn:
        found = dict(conn.execute(sa.select(rp.c.uuid, rp.c.id)
                                  .where(rp.c.uuid.in_(uuids))).all())
    assert set(found) == set(uuids)
    return set(found.values())


class Sequence:
    """Where a test stands in the sequence; ``changed()`` says what the
    writes since the last call changed, and moves on."""

    def __init__(self, database):
        self.database = database
        self.last = position(database)
        self.seqs = counters(database)

    def changed(self, bumps=1):
        """Providers changed since the last call (NAMES for names); checks
        that the writes took ``bumps`` numbers between them (None: any)."""
        with self.database.reader() as conn:
            result = changes.since(conn, self.last)
        assert result is not None, 'a reader one write behind must not reload'
        new, changed = result
        seqs = counters(self.database)
        if bumps is not None:
            assert sum(seqs.values()) - sum(self.seqs.values()) == bumps
        # the position is the highest number seen, which is the counter
        # when nothing is in flight
        assert numbers(new) == seqs
        self.last, self.seqs = new, seqs
        return changed


@pytest.fixture
def seq(database):
    return Sequence(database)


def ok(resp, status=(200, 201, 204)):
    statuses = status if isinstance(status, tuple) else (status,)
    assert resp.status_int in statuses, resp.body
    return resp


def generation(api, rp):
    return api.get('/resource_providers/%s' % rp).json['generation']


def put_inventories(api, rp, inventories):
    return api.put('/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': generation(api, rp), 'inventories': inventories})


def claim(api, consumer, allocations, consumer_generation=None):
    return api.put('/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': res} for rp, res in allocations.items()},
        'project_id': PROJECT, 'user_id': USER, 'consumer_generation': consumer_generation,
        'consumer_type': 'INSTANCE'})


def host(api, name, vcpus=8, parent=None):
    return client_mod.make_provider(api, name, {'VCPU': {'total': vcpus}}, parent=parent)


# Providers


def test_creating_a_root_and_a_child_notes_the_new_provider(api, database, seq):
    resp = ok(api.post('/resource_providers', {'name': 'cn1'}))
    cn = resp.json['uuid']
    assert seq.changed() == ids(database, cn)
    resp = ok(api.post('/resource_providers', {'name': 'cn1-numa0', 'parent_provider_uuid': cn}))
    assert seq.changed() == ids(database, resp.json['uuid'])
    # before 1.20 (201, no body), with the uuid given
    given = str(uuidlib.uuid4())
    ok(api.post('/resource_providers', {'name': 'cn2', 'uuid': given}, version='1.14'), 201)
    assert seq.changed() == ids(database, given)


def test_a_refused_create_takes_no_number(api, database, seq):
    host(api, 'cn1')
    seq.changed(bumps=2)
    before = change_rows(database)
    client_mod.error(api.post('/resource_providers', {'name': 'cn1'}), 409)
    client_mod.error(api.post('/resource_providers', {
        'name': 'orphan', 'parent_provider_uuid': str(uuidlib.uuid4())}), 400)
    assert seq.changed(bumps=0) == set()
    assert change_rows(database) == before


def test_a_write_creating_a_root_and_naming_it_by_id_too_notes_it_once(database, seq):
    # A new root's change row is found by uuid (its row goes with the
    # record); a later statement of the same write names it by id as well.
    uuid = str(uuidlib.uuid4())
    with database.writer() as conn:
        providers.create(conn, uuid, 'cn1')
        inventories.replace_inventories(conn, providers.get(conn, uuid), {'VCPU': {
            'total': 8, 'reserved': 0, 'min_unit': 1, 'max_unit': 8, 'step_size': 1,
            'allocation_ratio': 1.0}})
    assert seq.changed() == ids(database, uuid)
    with database.reader() as conn:
        row = providers.get(conn, uuid)
    assert row['root_provider_id'] == row['id']


def test_creating_a_root_without_its_shards_counter_refuses_and_leaves_nothing(
        database, api):
    uuid = str(uuidlib.uuid4())
    shard = uuidlib.UUID(uuid).int % changes.SHARDS
    with database.writer() as conn:
        seq_, floor = conn.exec_driver_sql(
            'SELECT seq, floor FROM resource_view_counters WHERE shard = %d' % shard).one()
        conn.exec_driver_sql('DELETE FROM resource_view_counters WHERE shard = %d' % shard)
    try:
        resp = api.post('/resource_providers', {'name': 'cn1', 'uuid': uuid})
        assert resp.status_int == 500
        client_mod.error(api.get('/resource_providers/%s' % uuid), 404)
    finally:
        with database.writer() as conn:
            conn.exec_driver_sql('INSERT INTO resource_view_counters (shard, seq, floor) '
                                 'VALUES (%d, %d, %d)' % (shard, seq_, floor))


def test_renaming_notes_the_provider(api, database, seq):
    rp = client_mod.make_provider(api, 'cn1')
    seq.changed()
    ok(api.put('/resource_providers/%s' % rp, {'name': 'cn1-renamed'}))
    assert seq.changed() == ids(database, rp)


def test_reparenting_notes_the_whole_subtree(api, database, seq):
    a = client_mod.make_provider(api, 'a')
    b = client_mod.make_provider(api, 'b')
    b1 = client_mod.make_provider(api, 'b1', parent=b)
    b11 = client_mod.make_provider(api, 'b11', parent=b1)
    other = client_mod.make_provider(api, 'other')
    seq.changed(bumps=5)
    # b's tree moves below a: every provider of it changes root
    ok(api.put('/resource_providers/%s' % b, {'name': 'b', 'parent_provider_uuid': a}))
    assert seq.changed() == ids(database, b, b1, b11)
    # b1 (with b11) becomes a root of its own
    ok(api.put('/resource_providers/%s' % b1, {'name': 'b1', 'parent_provider_uuid': None}))
    assert seq.changed() == ids(database, b1, b11)
    # b1 moves back under b (a's tree), b11 with it
    ok(api.put('/resource_providers/%s' % b1, {'name': 'b1', 'parent_provider_uuid': b}))
    assert seq.changed() == ids(database, b1, b11)
    # within one tree the root stays: the moved provider alone changes
    ok(api.put('/resource_providers/%s' % b11, {'name': 'b11', 'parent_provider_uuid': a}))
    assert ids(database, b11) <= seq.changed() <= ids(database, b11, b1)
    # before 1.37 a root may be given a parent once
    ok(api.put('/resource_providers/%s' % other, {'name': 'other', 'parent_provider_uuid': b},
               version='1.14'))
    assert seq.changed() == ids(database, other)
    # the view agrees with what was noted
    for rp in (b, b1, b11, other):
        assert api.get('/resource_providers/%s' % rp).json['root_provider_uuid'] == a


def test_a_refused_rename_or_move_takes_no_number(api, database, seq):
    a = client_mod.make_provider(api, 'a')
    b = client_mod.make_provider(api, 'b', parent=a)
    client_mod.make_provider(api, 'c')
    seq.changed(bumps=3)
    before = change_rows(database)
    # the provider is noted before the clash is found: the rollback drops it
    client_mod.error(api.put('/resource_providers/%s' % a, {'name': 'c'}), 409)
    client_mod.error(api.put('/resource_providers/%s' % a, {
        'name': 'a', 'parent_provider_uuid': b}), 400)     # a loop
    assert seq.changed(bumps=0) == set()
    assert change_rows(database) == before
    # and the next write on a (pooled) connection notes only its own change
    ok(api.put('/resource_providers/%s' % b, {'name': 'b2'}))
    assert seq.changed() == ids(database, b)


def test_deleting_a_provider_notes_it(api, database, seq):
    root = host(api, 'cn1')
    child = host(api, 'cn1-numa0', parent=root)
    seq.changed(bumps=4)
    child_id, root_id = ids(database, child), ids(database, root)
    ok(api.delete('/resource_providers/%s' % child), 204)
    assert seq.changed() == child_id
    ok(api.delete('/resource_providers/%s' % root), 204)
    assert seq.changed() == root_id


def test_a_refused_delete_takes_no_number(api, database, seq):
    root = host(api, 'cn1')
    host(api, 'cn1-numa0', parent=root)
    ok(claim(api, str(uuidlib.uuid4()), {root: {'VCPU': 1}}))
    seq.changed(bumps=5)
    client_mod.error(api.delete('/resource_providers/%s' % root), 409)   # has a child
    assert seq.changed(bumps=0) == set()


# Inventories


def test_every_inventory_write_notes_the_provider(api, database, seq):
    rp = client_mod.make_provider(api, 'cn1')
    other = host(api, 'cn2')
    seq.changed(bumps=3)
    rp_id = ids(database, rp)
    path = '/resource_providers/%s/inventories' % rp
    ok(put_inventories(api, rp, {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024}}))
    assert seq.changed() == rp_id
    ok(api.post(path, {'resource_class': 'DISK_GB', 'total': 100,
                       'resource_provider_generation': generation(api, rp)}), 201)
    assert seq.changed() == rp_id
    ok(api.put(path + '/VCPU', {'total': 4, 'resource_provider_generation': generation(api, rp)}))
    assert seq.changed() == rp_id
    ok(api.delete(path + '/MEMORY_MB'), 204)
    assert seq.changed() == rp_id
    ok(api.delete(path), 204)
    assert seq.changed() == rp_id
    # the other provider was never named
    assert ids(database, other).isdisjoint(rp_id)


def test_a_generation_conflict_takes_no_number_and_leaves_no_row(api, database, seq):
    rp = host(api, 'cn1')
    seq.changed(bumps=2)
    before_rows, before_counters = change_rows(database), counters(database)
    path = '/resource_providers/%s/inventories' % rp
    client_mod.error(api.put(path, {'resource_provider_generation': 0,
                                    'inventories': {'VCPU': {'total': 16}}}),
                     409, 'placement.concurrent_update')
    client_mod.error(api.put(path + '/VCPU', {'total': 2, 'resource_provider_generation': 7}),
                     409, 'placement.concurrent_update')
    client_mod.error(api.put('/resource_providers/%s/traits' % rp, {
        'traits': ['HW_CPU_X86_AVX'], 'resource_provider_generation': 0}), 409,
        'placement.concurrent_update')
    assert change_rows(database) == before_rows
    assert counters(database) == before_counters
    assert seq.changed(bumps=0) == set()


def test_an_inventory_write_refused_after_its_bump_takes_no_number(api, database, seq):
    rp = host(api, 'cn1')
    ok(claim(api, str(uuidlib.uuid4()), {rp: {'VCPU': 2}}))
    seq.changed(bumps=3)
    before = change_rows(database)
    # VCPU is in use: the replacement that drops it is refused
    client_mod.error(put_inventories(api, rp, {'DISK_GB': {'total': 10}}), 409,
                     'placement.inventory.inuse')
    client_mod.error(api.delete('/resource_providers/%s/inventories/VCPU' % rp), 409)
    assert seq.changed(bumps=0) == set()
    assert change_rows(database) == before


# Traits and aggregates


def test_trait_writes_note_the_provider(api, database, seq):
    rp = client_mod.make_provider(api, 'cn1')
    seq.changed()
    rp_id = ids(database, rp)
    path = '/resource_providers/%s/traits' % rp
    ok(api.put(path, {'traits': ['HW_CPU_X86_AVX', 'HW_CPU_X86_SSE'],
                      'resource_provider_generation': 0}))
    assert seq.changed() == rp_id
    ok(api.put(path, {'traits': ['HW_CPU_X86_SSE'], 'resource_provider_generation': 1}))
    assert seq.changed() == rp_id
    # the same set again changes nothing a view reads
    ok(api.put(path, {'traits': ['HW_CPU_X86_SSE'], 'resource_provider_generation': 2}))
    assert seq.changed(bumps=None) <= rp_id
    ok(api.delete(path), 204)
    assert seq.changed() == rp_id


def test_aggregate_writes_note_the_provider_before_and_from_1_19(api, database, seq):
    rp = client_mod.make_provider(api, 'cn1')
    seq.changed()
    rp_id = ids(database, rp)
    path = '/resource_providers/%s/aggregates' % rp
    agg1, agg2 = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    # before 1.19: a plain list, no generation
    ok(api.put(path, [agg1], version='1.1'))
    assert rp_id <= seq.changed() <= rp_id | {NAMES}
    ok(api.put(path, [agg1, agg2], version='1.18'))
    assert rp_id <= seq.changed() <= rp_id | {NAMES}
    # 1.19: with the generation, which moves even for the same set
    ok(api.put(path, {'aggregates': [agg2], 'resource_provider_generation': 0},
               version='1.19'))
    assert rp_id <= seq.changed() <= rp_id | {NAMES}
    ok(api.put(path, {'aggregates': [], 'resource_provider_generation': 1}, version='1.19'))
    assert rp_id <= seq.changed() <= rp_id | {NAMES}
    resp = ok(api.get(path, version='1.19'))
    assert resp.json == {'aggregates': [], 'resource_provider_generation': 2}
    client_mod.error(api.put(path, {'aggregates': [agg1], 'resource_provider_generation': 0},
                             version='1.19'), 409)
    assert seq.changed(bumps=0) == set()


# Allocations


def test_a_claim_notes_its_providers_and_a_move_the_one_left(api, database, seq):
    a, b, c = host(api, 'a'), host(api, 'b'), host(api, 'c')
    seq.changed(bumps=6)
    consumer = str(uuidlib.uuid4())
    ok(claim(api, consumer, {a: {'VCPU': 1}}), 204)
    assert seq.changed() == ids(database, a)
    # a resize: the consumer moves from a to b; a loses usage
    ok(claim(api, consumer, {b: {'VCPU': 2}}, consumer_generation=1), 204)
    assert seq.changed() == ids(database, a, b)
    # on b and c at once
    ok(claim(api, consumer, {b: {'VCPU': 1}, c: {'VCPU': 1}}, consumer_generation=2), 204)
    assert seq.changed() == ids(database, b, c)
    # the same again: usage does not move, the generations do
    ok(claim(api, consumer, {b: {'VCPU': 1}, c: {'VCPU': 1}}, consumer_generation=3), 204)
    assert seq.changed() <= ids(database, b, c)
    # an empty allocation (1.28+) removes the consumer from b and c
    ok(api.put('/allocations/%s' % consumer, {
        'allocations': {}, 'project_id': PROJECT, 'user_id': USER,
        'consumer_generation': 4, 'consumer_type': 'INSTANCE'}), 204)
    assert seq.changed() == ids(database, b, c)
    usages = [api.get('/resource_providers/%s/usages' % rp).json['usages']['VCPU']
              for rp in (a, b, c)]
    assert usages == [0, 0, 0]


def test_a_claim_before_1_8_notes_the_providers(api, database, seq):
    a, b = host(api, 'a'), host(api, 'b')
    seq.changed(bumps=4)
    consumer = str(uuidlib.uuid4())
    ok(api.put('/allocations/%s' % consumer, {'allocations': [
        {'resource_provider': {'uuid': a}, 'resources': {'VCPU': 1}}]}, version='1.0'), 204)
    assert seq.changed() == ids(database, a)
    ok(api.put('/allocations/%s' % consumer, {'allocations': [
        {'resource_provider': {'uuid': b}, 'resources': {'VCPU': 1}}]}, version='1.0'), 204)
    assert seq.changed() == ids(database, a, b)


def test_post_allocations_notes_every_provider_of_every_consumer(api, database, seq):
    a, b, c, d = host(api, 'a'), host(api, 'b'), host(api, 'c'), host(api, 'd')
    one, two = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    ok(claim(api, one, {a: {'VCPU': 1}}), 204)
    ok(claim(api, two, {b: {'VCPU': 1}}), 204)
    seq.changed(bumps=10)

    def body(allocations, consumer_generation):
        return {'allocations': {rp: {'resources': res} for rp, res in allocations.items()},
                'project_id': PROJECT, 'user_id': USER,
                'consumer_generation': consumer_generation, 'consumer_type': 'INSTANCE'}
    # a migration: one moves from a to c, two leaves b altogether, a new
    # consumer lands on d
    three = str(uuidlib.uuid4())
    ok(api.post('/allocations', {one: body({c: {'VCPU': 1}}, 1), two: body({}, 1),
                                 three: body({d: {'VCPU': 2}}, None)}), 204)
    assert seq.changed() == ids(database, a, b, c, d)


def test_deleting_allocations_notes_the_providers_they_were_on(api, database, seq):
    a, b, c = host(api, 'a'), host(api, 'b'), host(api, 'c')
    consumer = str(uuidlib.uuid4())
    ok(claim(api, consumer, {a: {'VCPU': 1}, b: {'VCPU': 1}}), 204)
    seq.changed(bumps=7)
    ok(api.delete('/allocations/%s' % consumer), 204)
    assert seq.changed() == ids(database, a, b)
    client_mod.error(api.delete('/allocations/%s' % consumer), 404)
    assert seq.changed(bumps=0) == set()
    assert ids(database, c)   # never named


def test_a_claim_refused_after_noting_takes_no_number(api, database, seq):
    a, b = host(api, 'a'), host(api, 'b', vcpus=1)
    consumer = str(uuidlib.uuid4())
    ok(claim(api, consumer, {a: {'VCPU': 1}}), 204)
    seq.changed(bumps=5)
    before = change_rows(database)
    # the old allocation on a is deleted (and a noted) before b's capacity
    # refuses the move: the whole write rolls back
    client_mod.error(claim(api, consumer, {b: {'VCPU': 2}}, consumer_generation=1), 409)
    client_mod.error(claim(api, consumer, {b: {'VCPU': 1}}, consumer_generation=5), 409,
                     'placement.concurrent_update')
    client_mod.error(claim(api, consumer, {b: {'CUSTOM_NONE': 1}}, consumer_generation=1), 400)
    assert seq.changed(bumps=0) == set()
    assert change_rows(database) == before
    # the next claim, maybe on the connection that noted a, names only b
    other = str(uuidlib.uuid4())
    ok(claim(api, other, {b: {'VCPU': 1}}), 204)
    assert seq.changed() == ids(database, b)


# The reshaper


def test_a_reshape_notes_every_provider_it_touches(api, database, seq):
    cn = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}, 'VGPU': {'total': 4}})
    gpu = client_mod.make_provider(api, 'cn1-gpu0', parent=cn)
    bystander = host(api, 'cn2')
    instance = str(uuidlib.uuid4())
    ok(claim(api, instance, {cn: {'VCPU': 2, 'VGPU': 1}}), 204)
    seq.changed(bumps=6)
    body = {
        'inventories': {
            cn: {'resource_provider_generation': generation(api, cn),
                 'inventories': {'VCPU': {'total': 8}}},
            gpu: {'resource_provider_generation': generation(api, gpu),
                  'inventories': {'VGPU': {'total': 4}}}},
        'allocations': {instance: {
            'allocations': {cn: {'resources': {'VCPU': 2}}, gpu: {'resources': {'VGPU': 1}}},
            'project_id': PROJECT, 'user_id': USER, 'consumer_generation': 1,
            'consumer_type': 'INSTANCE'}}}
    ok(api.post('/reshaper', body, token='nova', headers={'X-Roles': 'service'}), 204)
    assert seq.changed() == ids(database, cn, gpu)
    assert ids(database, bystander).isdisjoint(ids(database, cn, gpu))
    # a refused reshape (stale generations) takes no number
    client_mod.error(api.post('/reshaper', body, token='nova', headers={'X-Roles': 'service'}),
                     409)
    assert seq.changed(bumps=0) == set()


# Names


def test_resource_class_writes_note_names(api, database, seq):
    ok(api.put('/resource_classes/CUSTOM_GOLD', version='1.7'), 201)
    assert seq.changed() == {NAMES}
    ok(api.put('/resource_classes/CUSTOM_GOLD', version='1.7'), 204)   # already there
    assert seq.changed(bumps=0) == set()
    ok(api.post('/resource_classes', {'name': 'CUSTOM_SILVER'}, version='1.2'), 201)
    assert seq.changed() == {NAMES}
    ok(api.put('/resource_classes/CUSTOM_SILVER', {'name': 'CUSTOM_BRONZE'}, version='1.2'))
    assert seq.changed() == {NAMES}
    client_mod.error(api.put('/resource_classes/CUSTOM_BRONZE', {'name': 'CUSTOM_GOLD'},
                             version='1.2'), 409)
    assert seq.changed(bumps=0) == set()
    ok(api.delete('/resource_classes/CUSTOM_BRONZE', version='1.2'), 204)
    assert seq.changed() == {NAMES}
    rp = client_mod.make_provider(api, 'cn1', {'CUSTOM_GOLD': {'total': 1}})
    seq.changed(bumps=2)
    client_mod.error(api.delete('/resource_classes/CUSTOM_GOLD', version='1.2'), 409)
    assert seq.changed(bumps=0) == set()
    assert rp


def test_trait_name_writes_note_names(api, database, seq):
    ok(api.put('/traits/CUSTOM_FAST', version='1.6'), 201)
    assert seq.changed() == {NAMES}
    ok(api.put('/traits/CUSTOM_FAST', version='1.6'), 204)   # already there
    assert seq.changed(bumps=0) == set()
    rp = client_mod.make_provider(api, 'cn1')
    ok(api.put('/resource_providers/%s/traits' % rp, {
        'traits': ['CUSTOM_FAST'], 'resource_provider_generation': 0}, version='1.6'))
    seq.changed(bumps=2)
    client_mod.error(api.delete('/traits/CUSTOM_FAST', version='1.6'), 409)   # in use
    assert seq.changed(bumps=0) == set()
    ok(api.delete('/resource_providers/%s/traits' % rp, version='1.6'), 204)
    assert seq.changed() == ids(database, rp)
    ok(api.delete('/traits/CUSTOM_FAST', version='1.6'), 204)
    assert seq.changed() == {NAMES}


# The sequence itself


def test_one_write_is_one_number_in_the_shard_of_its_lowest_provider(api, database, seq):
    rps = [host(api, 'cn%d' % i) for i in range(changes.SHARDS + 1)]
    seq.changed(bumps=2 * len(rps))
    by_id = {ids(database, rp).pop(): rp for rp in rps}
    lowest, highest = min(by_id), max(by_id)
    before = counters(database)
    consumer = str(uuidlib.uuid4())
    ok(claim(api, consumer, {by_id[lowest]: {'VCPU': 1}, by_id[highest]: {'VCPU': 1}}), 204)
    after = counters(database)
    assert {s for s in after if after[s] != before[s]} == {lowest % changes.SHARDS}
    shard = lowest % changes.SHARDS
    rows = [r for r in change_rows(database) if r[:2] == (shard, after[shard])]
    assert rows == [(shard, after[shard], lowest), (shard, after[shard], highest)]
    assert seq.changed() == {lowest, highest}


def test_a_reader_at_the_position_sees_nothing_new(database, seq):
    with database.reader() as conn:
        here = changes.position(conn)
        assert changes.since(conn, here) == (here, set())
    assert seq.changed(bumps=0) == set()


def test_readers_behind_the_pruned_rows_reload_and_the_others_do_not(
        api, database, seq, monkeypatch):
    rp = host(api, 'cn1')
    seq.changed(bumps=2)
    shard = ids(database, rp).pop() % changes.SHARDS
    monkeypatch.setattr(changes, 'KEEP', 3)
    monkeypatch.setattr(changes, 'prune_due', lambda: True)
    positions = [position(database)]
    for total in range(10, 16):
        ok(put_inventories(api, rp, {'VCPU': {'total': total}}))
        positions.append(position(database))
    with database.reader() as conn:
        floor, top = conn.exec_driver_sql(
            'SELECT floor, seq FROM resource_view_counters WHERE shard = %d' % shard).one()
    assert floor == top - 3
    # the floor is the lowest number kept: a reader there finds its record
    assert [r[1] for r in change_rows(database) if r[0] == shard] == [
        top - 3, top - 2, top - 1, top]
    rp_id = ids(database, rp)
    with database.reader() as conn:
        for here in positions:
            result = changes.since(conn, here)
            if here[shard].seq < floor:
                assert result is None, (here, floor)
            else:
                assert result is not None, (here, floor)
                new, changed = result
                assert new[shard].seq == top
                assert changed == (rp_id if here[shard].seq < top else set())
    # the floor and the reader's position: exactly at it still follows on
    assert sum(1 for here in positions if here[shard].seq < floor) == 3
    assert any(here[shard].seq == floor for here in positions)


def test_pruning_one_shard_leaves_readers_of_the_others_alone(api, database, monkeypatch):
    rps = [host(api, 'cn%d' % i) for i in range(2)]
    rps += [host(api, 'cn%d' % i) for i in range(2, changes.SHARDS + 1)]
    shard_of = {rp: ids(database, rp).pop() % changes.SHARDS for rp in rps}
    busy = rps[0]
    quiet = next(rp for rp in rps if shard_of[rp] != shard_of[busy])
    start = position(database)
    ok(put_inventories(api, quiet, {'VCPU': {'total': 4}}))
    monkeypatch.setattr(changes, 'KEEP', 1)
    monkeypatch.setattr(changes, 'prune_due', lambda: True)
    for total in range(10, 14):
        ok(put_inventories(api, busy, {'VCPU': {'total': total}}))
    top = position(database)
    with database.reader() as conn:
        # behind in the pruned shard: reload
        assert changes.since(conn, start) is None
        # behind only in the other shard, whose rows are all kept: follows on
        new, changed = changes.since(conn, {**start, shard_of[busy]: top[shard_of[busy]]})
    assert changed == ids(database, quiet)
    assert new == top


def test_invalidate_all_sends_every_older_position_to_a_reload(api, database):
    rp = host(api, 'cn1')
    old = position(database)
    ok(put_inventories(api, rp, {'VCPU': {'total': 4}}))
    newer = position(database)
    with database.writer() as conn:
        changes.invalidate_all(conn)
    # one record per counter, at its new number
    assert change_rows(database) == sorted(
        (s, n, NAMES) for s, n in counters(database).items())
    with database.reader() as conn:
        assert changes.since(conn, old) is None
        assert changes.since(conn, newer) is None
        here = changes.position(conn)
        assert changes.since(conn, here) == (here, set())
    # every shard moved on: no older position of any shard survives
    assert all(here[s].seq > newer[s].seq for s in range(changes.SHARDS))
    ok(put_inventories(api, rp, {'VCPU': {'total': 5}}))
    with database.reader() as conn:
        assert changes.since(conn, here)[1] == ids(database, rp)


def test_a_missing_counter_row_refuses_the_write_and_says_why(database, api):
    # A schema older than the code: the write must fail, naming the fix,
    # and leave nothing behind (never a change row without its number).
    rp = client_mod.make_provider(api, 'cn-missing-counter')
    shard = min(ids(database, rp)) % changes.SHARDS
    with database.writer() as conn:
        seq, floor = conn.exec_driver_sql(
            'SELECT seq, floor FROM resource_view_counters WHERE shard = %d' % shard).one()
        conn.exec_driver_sql('DELETE FROM resource_view_counters WHERE shard = %d' % shard)
    try:
        before = change_rows(database)
        resp = api.put('/resource_providers/%s/traits' % rp, {
            'resource_provider_generation': 0, 'traits': ['HW_CPU_X86_AVX2']})
        assert resp.status_int == 500
        assert change_rows(database) == before
        assert api.get('/resource_providers/%s/traits' % rp).json['traits'] == []
        with pytest.raises(RuntimeError, match='no row for shard %d.*db sync' % shard):
            with database.writer() as conn:
                conn.exec_driver_sql('SELECT 1')
                changes.note(conn, ids(database, rp))
    finally:
        with database.writer() as conn:
            conn.exec_driver_sql('INSERT INTO resource_view_counters (shard, seq, floor) '
                                 'VALUES (%d, %d, %d)' % (shard, seq, floor))
