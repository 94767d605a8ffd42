"""Resource class ids are upstream placement's (a database either serves),
and a database an earlier version of ours made is renumbered by db sync."""
import threading
import time

import os_resource_classes
import pytest
import sqlalchemy as sa

from placement_server.db import api as db_api
from placement_server.db import migration
from placement_server.db import resource_classes
from placement_server.db import tables
from tests import databases
from tests.fixtures import old_database
from tests.functional import client as client_mod
from tests.functional import test_allocation_write_races as races

RC = tables.resource_classes


def _ids(db):
    with db.engine.connect() as conn:
        return dict(conn.execute(sa.select(RC.c.name, RC.c.id)).all())


def test_standard_at_their_index_custom_from_10000(api, database):
    ids = _ids(database)
    assert {n: ids[n] for n in os_resource_classes.STANDARDS} == {
        n: i for i, n in enumerate(os_resource_classes.STANDARDS)}
    assert ids['VCPU'] == 0
    for name in ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C'):
        assert api.put('/resource_classes/%s' % name, version='1.7').status_int == 201
    assert api.delete('/resource_classes/CUSTOM_C', version='1.7').status_int == 204
    assert api.put('/resource_classes/CUSTOM_D', version='1.7').status_int == 201
    ids = _ids(database)
    assert [ids[n] for n in ('CUSTOM_A', 'CUSTOM_B', 'CUSTOM_D')] == [10000, 10001, 10002]


def _named(conn):
    """What inventories and allocations hold, with class names for ids."""
    held = {}
    for table, cols in ((tables.inventories, ('resource_provider_id', 'total', 'reserved')),
                        (tables.allocations, ('resource_provider_id', 'consumer_id', 'used'))):
        rows = conn.execute(sa.select(RC.c.name, *(table.c[c] for c in cols))
                            .join(RC, RC.c.id == table.c.resource_class_id)).all()
        held[table.name] = sorted(tuple(r) for r in rows)
    return held


@pytest.mark.parametrize('backend', databases.BACKENDS)
def test_an_earlier_versions_database_is_renumbered(backend, tmp_path):
    test_db = databases.TestDatabase(backend, str(tmp_path), sync=False)
    try:
        old = old_database.load(test_db.url)
        old_ids = {r['name']: r['id'] for r in old['rows']['resource_classes']}
        assert old_ids['VCPU'] == 1 and old_ids['CUSTOM_GOLD'] < 10000
        with test_db.db.engine.connect() as conn:
            before = _named(conn)
        migration.sync(test_db.db)
        ids = _ids(test_db.db)
        assert ids == {**{n: i for i, n in enumerate(os_resource_classes.STANDARDS)},
                       'CUSTOM_GOLD': 10000}
        with test_db.db.engine.connect() as conn:
            assert _named(conn) == before
            assert before['inventories'] and before['allocations']
            assert any(r[0] == 'CUSTOM_GOLD' for r in before['allocations'])
        migration.sync(test_db.db)   # again: nothing moves
        assert _ids(test_db.db) == ids
        assert migration.is_current(test_db.db)
        with test_db.db.writer() as conn:
            assert resource_classes.create(conn, 'CUSTOM_SILVER')
        assert _ids(test_db.db)['CUSTOM_SILVER'] == 10001
    finally:
        test_db.drop()


@pytest.fixture
def server_db(server_database):
    return server_database


def test_a_custom_id_taken_meanwhile_is_taken_again(server_db):
    """PUT a custom class while another transaction holds the next custom
    id uncommitted: the write waits for it, fails on the key and runs
    again with the id after it; never a 'class exists' (204) for a class
    that does not (what it answered before, on both engines)."""
    api = client_mod.Client(client_mod.make_app(server_db), version='1.7')
    competitor = server_db.engine.connect()
    transaction = competitor.begin()
    competitor.execute(RC.insert().values(id=10000, name='CUSTOM_OTHER',
                                          created_at=db_api.utcnow()))
    result = {}
    thread = threading.Thread(
        target=lambda: result.setdefault('resp', api.put('/resource_classes/CUSTOM_MINE')))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not races._writers_waiting_on_a_lock(server_db):
            assert time.monotonic() < deadline, 'the write never waited for the competitor'
            time.sleep(0.05)
        transaction.commit()
    finally:
        competitor.close()
        thread.join(60)
    assert result['resp'].status_int == 201, result['resp'].body
    ids = _ids(server_db)
    assert (ids['CUSTOM_OTHER'], ids['CUSTOM_MINE']) == (10000, 10001)
