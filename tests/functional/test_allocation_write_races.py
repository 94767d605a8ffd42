"""A claim racing another transaction that inserts the same project, user
or consumer: the claim's own insert waits for that transaction, fails on
the unique key, and the whole write is replayed, which then finds the row.

Only PostgreSQL and MariaDB: SQLite runs one writer at a time, so the
race cannot happen there.
"""
import threading
import time
import uuid

import pytest
import sqlalchemy as sa

from placement_server.db import api as db_api
from tests.functional import client as client_mod

V = '1.39'


@pytest.fixture
def database(server_database):
    return server_database


def _writers_waiting_on_a_lock(database):
    with database.engine.connect() as conn:
        if database.dialect == 'postgresql':
            return conn.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database()").scalar()
        # MariaDB may not list a locking read in innodb_trx while the
        # optimizer waits for the row (state 'Statistics'), so a statement
        # of this test's database still running after half a second counts
        # as waiting: nothing else in the claim takes that long.
        return conn.exec_driver_sql(
            "SELECT count(*) FROM information_schema.processlist "
            "WHERE db = DATABASE() AND command = 'Query' AND id <> CONNECTION_ID() "
            "AND time_ms > 500").scalar()


def _insert(conn, table, **values):
    t = sa.table(table, *[sa.column(k) for k in list(values) + ['created_at']])
    return conn.execute(t.insert().values(created_at=db_api.utcnow(), **values))


def _claim_while_row_is_being_inserted(database, insert_competitor):
    """PUT a new consumer's allocation (project 'p', user 'u') while another
    transaction has inserted a row the claim will insert too, and commits
    only once the claim waits for it. Returns the claim's response."""
    api = client_mod.Client(client_mod.make_app(database), version=V)
    rp = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    consumer = str(uuid.uuid4())
    competitor = database.engine.connect()
    transaction = competitor.begin()
    insert_competitor(competitor, consumer)
    result = {}

    def claim():
        result['resp'] = api.put('/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': {'VCPU': 1}}}, 'consumer_generation': None,
            'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'})
    thread = threading.Thread(target=claim)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not _writers_waiting_on_a_lock(database):
            assert time.monotonic() < deadline, 'the claim never waited for the competitor'
            time.sleep(0.05)
        transaction.commit()
    finally:
        competitor.close()
        thread.join(60)
    return api, consumer, result['resp']


@pytest.mark.parametrize('table, values', [('projects', {'external_id': 'p'}),
                                           ('users', {'external_id': 'u'})])
def test_claim_replays_when_its_project_or_user_appears_meanwhile(database, table, values):
    api, consumer, resp = _claim_while_row_is_being_inserted(
        database, lambda conn, _: _insert(conn, table, **values))
    assert resp.status_int == 204, resp.body
    body = api.get('/allocations/%s' % consumer).json
    assert (body['project_id'], body['user_id'], body['consumer_generation']) == ('p', 'u', 1)
    with database.reader() as conn:
        assert conn.exec_driver_sql('SELECT count(*) FROM %s' % table).scalar() == 1


def test_claim_for_a_new_consumer_created_meanwhile_is_a_generation_conflict(database):
    def create_consumer(conn, consumer):
        ids = []
        for table in ('projects', 'users'):
            _insert(conn, table, external_id='q')
            ids.append(conn.exec_driver_sql(
                "SELECT id FROM %s WHERE external_id = 'q'" % table).scalar())
        _insert(conn, 'consumers', uuid=consumer, project_id=ids[0], user_id=ids[1],
                generation=1)
    api, consumer, resp = _claim_while_row_is_being_inserted(database, create_consumer)
    # Replayed, the write finds the consumer at generation 1 where the
    # client expected none: the conflict a client retries on.
    assert resp.status_int == 409, resp.body
    error = resp.json['errors'][0]
    assert error['code'] == 'placement.concurrent_update'
    assert 'consumer generation conflict' in error['detail']
    assert api.get('/allocations/%s' % consumer).json['allocations'] == {}


def test_claim_that_waited_for_a_providers_lock_sees_what_the_holder_claimed(database):
    """The holder of the provider's lock claims all of it and commits while
    the claim waits: the claim, whose first read may have seen the provider
    before that (PostgreSQL's statement snapshot), judges capacity on what
    is there once it holds the lock, and is refused."""
    def claim_everything(conn, consumer):
        rp = conn.exec_driver_sql(
            "SELECT id FROM resource_providers WHERE name = 'cn1' FOR UPDATE").scalar()
        ids = []
        for table in ('projects', 'users'):
            _insert(conn, table, external_id='q')
            ids.append(conn.exec_driver_sql(
                "SELECT id FROM %s WHERE external_id = 'q'" % table).scalar())
        other = str(uuid.uuid4())
        _insert(conn, 'consumers', uuid=other, project_id=ids[0], user_id=ids[1],
                generation=1)
        _insert(conn, 'allocations', consumer_id=other, resource_provider_id=rp,
                resource_class_id=0, used=8)   # VCPU: all of the provider's 8
        conn.exec_driver_sql('UPDATE resource_providers SET generation = generation + 1 '
                             'WHERE id = %d' % rp)
    api, consumer, resp = _claim_while_row_is_being_inserted(database, claim_everything)
    assert resp.status_int == 409, resp.body
    assert 'would exceed the capacity' in resp.json['errors'][0]['detail'], resp.body
    assert api.get('/allocations/%s' % consumer).json['allocations'] == {}
