"""PostgreSQL write transactions: BEGIN rides on the first statement and
COMMIT on the change record (``db.dialects.PostgreSQL``), and every
way out of a write leaves the pooled connection outside a transaction."""
import re

import psycopg2.extensions
import pytest
from sqlalchemy import event

from placement_server.db import api as db_api
from placement_server.db import providers
from placement_server.db import tables
from tests.functional import client as client_mod
from tests.functional import round_trips

IDLE = psycopg2.extensions.TRANSACTION_STATUS_IDLE


@pytest.fixture
def sent(pg_database):
    """The SQL texts psycopg2 is asked to run, in order, as the server gets
    them (psycopg2's own BEGIN and COMMIT would not be among them: they are
    what the writer must not leave to it, see ``autocommit``)."""
    texts = []

    class Recording(psycopg2.extensions.cursor):
        def execute(self, query, vars=None):
            texts.append(query if isinstance(query, str) else query.decode())
            return super().execute(query, vars)

    def on_checkout(dbapi_conn, _record, _proxy):
        dbapi_conn.cursor_factory = Recording

    event.listen(pg_database.engine.pool, 'checkout', on_checkout)
    pg_database.engine.pool.dispose()   # pooled connections get the factory at checkout
    yield texts
    event.remove(pg_database.engine.pool, 'checkout', on_checkout)
    pg_database.engine.pool.dispose()


def _provider(api):
    return client_mod.make_provider(api, 'cn1')


def test_a_write_is_its_statements_with_begin_and_commit_folded_in(pg_database, sent):
    api, rp = round_trips.put_inventories(pg_database, sent)
    # generation check and bump with the read of classes and what the
    # provider has; the insert, the change record and COMMIT: two round trips
    assert len(sent) == 2, sent
    assert re.match(r'BEGIN;(PREPARE placement_\d+ AS WITH taken AS\s*\(UPDATE resource_providers|'
                    r'EXECUTE placement_\d+)', sent[0]), sent[0]
    assert sent[-1].startswith('INSERT INTO inventories') and sent[-1].endswith(';COMMIT')
    assert re.search(r';(PREPARE placement_\d+ AS WITH bump AS|EXECUTE placement_\d+)',
                     sent[-1]), sent[-1]
    assert not any(t.strip().upper() in ('BEGIN', 'COMMIT', 'ROLLBACK') for t in sent)
    round_trips.check_inventories(api, rp)


def test_creating_a_root_is_one_round_trip(pg_database, sent):
    api, uuid = round_trips.create_root(pg_database)
    # the row, made its own root; the record, finding it by uuid; COMMIT
    assert len(sent) == 1, sent
    assert sent[0].startswith('BEGIN;INSERT INTO resource_providers'), sent[0]
    assert re.search(r';UPDATE resource_providers SET root_provider_id = id WHERE id = '
                     r'lastval\(\);(PREPARE placement_\d+ AS WITH bump AS|EXECUTE placement_\d+)',
                     sent[0]), sent[0]
    assert sent[0].endswith(';COMMIT')
    round_trips.check_own_root(api, uuid)


def test_the_writer_runs_in_autocommit_so_psycopg2_sends_no_begin_of_its_own(pg_database):
    with pg_database.writer() as conn:
        assert conn.connection.dbapi_connection.autocommit
        conn.exec_driver_sql('SELECT 1')
        # the server is in the transaction the first statement began
        assert conn.connection.dbapi_connection.info.transaction_status != IDLE
    with pg_database.reader() as conn:
        assert conn.connection.dbapi_connection.info.transaction_status == IDLE


def test_a_write_that_sends_nothing_ends_nothing(pg_database, sent):
    with pg_database.writer():
        pass
    assert sent == []


def test_a_write_that_fails_midway_is_rolled_back_and_its_connection_is_idle(pg_database, sent):
    api = client_mod.Client(client_mod.make_app(pg_database))
    rp = _provider(api)
    del sent[:]
    with pytest.raises(ZeroDivisionError):
        with pg_database.writer() as conn:
            providers.take(conn, rp, 0)
            1 / 0
    assert sent[-1] == 'ROLLBACK'
    assert api.get('/resource_providers/%s' % rp).json['generation'] == 0
    with pg_database.writer() as conn:
        assert conn.connection.dbapi_connection.info.transaction_status == IDLE
        assert providers.take(conn, rp, 0)['generation'] == 1
    assert api.get('/resource_providers/%s' % rp).json['generation'] == 1


def test_a_refused_write_through_the_api_commits_nothing_and_the_next_one_works(pg_database):
    api = client_mod.Client(client_mod.make_app(pg_database), version='latest')
    rp = _provider(api)
    body = {'resource_provider_generation': 5, 'inventories': {'VCPU': {'total': 8}}}
    resp = api.put('/resource_providers/%s/inventories' % rp, body)
    assert resp.status_int == 409
    assert resp.json['errors'][0]['code'] == 'placement.concurrent_update'
    # an unknown class fails after the generation moved: rolled back too
    body = {'resource_provider_generation': 0, 'inventories': {'CUSTOM_NOPE': {'total': 1}}}
    assert api.put('/resource_providers/%s/inventories' % rp, body).status_int == 400
    assert api.get('/resource_providers/%s' % rp).json['generation'] == 0
    body = {'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8}}}
    assert api.put('/resource_providers/%s/inventories' % rp, body).status_int == 200
    assert api.get('/resource_providers/%s' % rp).json['generation'] == 1


def test_rows_inserted_later_are_there_for_the_next_statement(pg_database, sent):
    api = client_mod.Client(client_mod.make_app(pg_database))
    rp = _provider(api)
    del sent[:]
    with pg_database.writer() as conn:
        row = providers.take(conn, rp, 0)
        db_api.insert_later(conn, tables.resource_provider_traits, [
            {'resource_provider_id': row['id'], 'trait_id': 1, 'created_at': db_api.utcnow()}])
        assert len(sent) == 1   # the rows wait for the next statement
        linked = conn.exec_driver_sql(
            'SELECT trait_id FROM resource_provider_traits WHERE resource_provider_id = %d'
            % row['id']).scalars().all()
        assert linked == [1]
        assert sent[-1].startswith('INSERT INTO resource_provider_traits')


def test_a_savepoint_may_not_follow_rows_inserted_later(pg_database):
    api = client_mod.Client(client_mod.make_app(pg_database), version='latest')
    rp = _provider(api)
    with pytest.raises(Exception, match='savepoint') as raised:
        with pg_database.writer() as conn:
            row = providers.take(conn, rp, 0)
            db_api.insert_later(conn, tables.resource_provider_traits, [
                {'resource_provider_id': row['id'], 'trait_id': 1, 'created_at': db_api.utcnow()}])
            with conn.begin_nested():
                pass
    # not an error a savepoint's caller forgives
    assert not isinstance(raised.value, db_api.CONSTRAINT_VIOLATION)
    assert api.get('/resource_providers/%s/traits' % rp).json['traits'] == []


def _set_inventory(api, rp, generation=0):
    resp = api.put('/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': generation, 'inventories': {'VCPU': {'total': 8}}})
    assert resp.status_int == 200, resp.body


def test_a_writes_statements_are_planned_once_per_connection(pg_database, sent):
    api = client_mod.Client(client_mod.make_app(pg_database))
    first, second = _provider(api), client_mod.make_provider(api, 'cn2')
    pg_database.engine.pool.dispose()    # a new connection: nothing prepared on it
    del sent[:]
    _set_inventory(api, first)
    prepared = [t for t in sent if 'PREPARE placement_' in t]
    # the generation check with the read of classes and inventory; the record
    assert len(prepared) == 2, sent
    del sent[:]
    _set_inventory(api, second)
    assert len(sent) == 2, sent
    assert not any('PREPARE' in t for t in sent), sent
    assert sum(t.count('EXECUTE placement_') for t in sent) == 2, sent
    got = api.get('/resource_providers/%s/inventories' % second).json
    assert got['inventories']['VCPU']['total'] == 8
    assert got['resource_provider_generation'] == 1


def test_a_new_connection_plans_again(pg_database, sent):
    # What a connection has prepared dies with it: after the pool
    # reconnects, an EXECUTE of a name the server never saw would fail.
    api = client_mod.Client(client_mod.make_app(pg_database))
    rp = _provider(api)
    pg_database.engine.pool.dispose()
    _set_inventory(api, rp)     # on the pool's one connection, now prepared
    raw = pg_database.engine.raw_connection()
    raw.invalidate()            # as after a lost connection: the pool reconnects
    raw.close()
    del sent[:]
    resp = api.put('/resource_providers/%s/traits' % rp, {
        'resource_provider_generation': 1, 'traits': ['HW_CPU_X86_AVX2']}, version='1.6')
    assert resp.status_int == 200, resp.body
    assert any('PREPARE placement_' in t for t in sent), sent


def test_a_new_root_refuses_too_long_a_name_rather_than_cutting_it(pg_database):
    # (its row goes with the record, written into the statement's text)
    with pytest.raises(Exception, match='value too long'):
        with pg_database.writer() as conn:
            providers.create(conn, '4f0b2c8e-0000-4000-8000-000000000001', 'x' * 201)
    with pg_database.reader() as conn:
        assert conn.exec_driver_sql('SELECT count(*) FROM resource_providers').scalar() == 0


def test_a_claims_allocations_and_generations_go_with_the_record(pg_database, sent):
    round_trips.check_claims_go_with_the_record(pg_database, sent)
