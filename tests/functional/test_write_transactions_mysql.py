"""MySQL/MariaDB write transactions (PyMySQL): the rows a write inserts
last, its change record and its COMMIT go in one round trip
(``db.dialects.MySQL``), the errors of the record's
later statements are the write's own, and a failed write leaves nothing."""
from oslo_db import exception as db_exc
import pymysql.cursors
import pytest
from sqlalchemy import event

from placement_server.db import api as db_api
from placement_server.db import changes
from placement_server.db import inventories
from placement_server.db import providers
from placement_server.db import tables
from tests.functional import client as client_mod
from tests.functional import round_trips

_IN_TRANSACTION = 1   # SERVER_STATUS_IN_TRANS


@pytest.fixture
def sent(mysql_database):
    """What PyMySQL is asked to send, in order: each query text, and
    '<commit>' for a COMMIT of its own (``connection.commit()``)."""
    texts = []

    class Recording(pymysql.cursors.Cursor):
        def execute(self, query, args=None):
            texts.append(query)
            return super().execute(query, args)

    def on_checkout(dbapi_conn, _record, _proxy):
        dbapi_conn.cursorclass = Recording
        commit = type(dbapi_conn).commit

        def recorded_commit():
            texts.append('<commit>')
            return commit(dbapi_conn)
        dbapi_conn.commit = recorded_commit

    event.listen(mysql_database.engine.pool, 'checkout', on_checkout)
    mysql_database.engine.pool.dispose()
    yield texts
    event.remove(mysql_database.engine.pool, 'checkout', on_checkout)
    mysql_database.engine.pool.dispose()


def test_the_last_rows_the_record_and_commit_are_one_round_trip(mysql_database, sent):
    api, rp = round_trips.put_inventories(mysql_database, sent)
    # the generation check with the read of classes and what the provider
    # has; the insert, the record and COMMIT
    assert len(sent) == 2, sent
    assert sent[0].startswith('UPDATE resource_providers SET id=last_insert_id('), sent[0]
    # (the row saying what was taken, then the read: a UNION, not a join)
    assert ';SELECT NULL AS resource_class' in sent[0], sent[0]
    assert 'row_count() AS taken' in sent[0], sent[0]
    last = sent[-1]
    assert last.startswith('INSERT INTO inventories'), last
    assert ';UPDATE resource_view_counters' in last and last.endswith(';COMMIT')
    assert '<commit>' not in sent
    round_trips.check_inventories(api, rp)


def test_creating_a_root_is_one_round_trip(mysql_database, sent):
    api, uuid = round_trips.create_root(mysql_database)
    # the row, made its own root; the record, finding it by uuid; COMMIT
    assert len(sent) == 1, sent
    assert sent[0].startswith('INSERT INTO resource_providers'), sent[0]
    assert (';UPDATE resource_providers SET root_provider_id = id WHERE id = LAST_INSERT_ID();'
            'UPDATE resource_view_counters') in sent[0], sent[0]
    assert "WHERE uuid IN ('%s')" % uuid in sent[0] and sent[0].endswith(';COMMIT')
    assert '<commit>' not in sent
    round_trips.check_own_root(api, uuid)


def test_an_error_of_the_records_later_statements_fails_the_write(mysql_database):
    api = client_mod.Client(client_mod.make_app(mysql_database))
    rp = client_mod.make_provider(api, 'cn1')
    with mysql_database.reader() as conn:
        provider = providers.get(conn, rp)
    # the change row this write will add, there already: its INSERT, the
    # second statement of the record, is refused
    shard = provider['id'] % changes.SHARDS
    with mysql_database.writer() as conn:
        seq = conn.exec_driver_sql('SELECT seq FROM resource_view_counters WHERE shard = %d'
                                   % shard).scalar_one()
    with mysql_database.engine.begin() as conn:
        conn.exec_driver_sql('INSERT INTO resource_view_changes (shard, seq, provider_id) '
                             'VALUES (%d, %d, %d)' % (shard, seq + 1, provider['id']))
    try:
        with pytest.raises(db_exc.DBDuplicateEntry):
            with mysql_database.writer() as conn:
                taken = providers.take(conn, rp, 0)
                inventories.write_all(conn, taken, {'VCPU': dict(
                    total=8, reserved=0, min_unit=1, max_unit=8, step_size=1,
                    allocation_ratio=1.0)})
        with mysql_database.writer() as conn:
            dbapi_conn = conn.connection.dbapi_connection
            assert not dbapi_conn.server_status & _IN_TRANSACTION
            assert conn.exec_driver_sql('SELECT seq FROM resource_view_counters WHERE '
                                        'shard = %d' % shard).scalar_one() == seq
        assert api.get('/resource_providers/%s/inventories' % rp).json == {
            'inventories': {}, 'resource_provider_generation': 0}
    finally:
        with mysql_database.engine.begin() as conn:
            conn.exec_driver_sql('DELETE FROM resource_view_changes WHERE shard = %d AND '
                                 'seq = %d' % (shard, seq + 1))


def test_rows_inserted_later_go_alone_before_any_other_statement(mysql_database, sent):
    api = client_mod.Client(client_mod.make_app(mysql_database))
    rp = client_mod.make_provider(api, 'cn1')
    del sent[:]
    with mysql_database.writer() as conn:
        row = providers.take(conn, rp, 0)
        db_api.insert_later(conn, tables.resource_provider_traits, [
            {'resource_provider_id': row['id'], 'trait_id': 1, 'created_at': db_api.utcnow()}])
        assert len(sent) == 1   # the rows wait
        linked = conn.exec_driver_sql(
            'SELECT trait_id FROM resource_provider_traits WHERE resource_provider_id = %d'
            % row['id']).scalars().all()
        assert linked == [1]
        assert sent[1].startswith('INSERT INTO resource_provider_traits')
        assert sent[2].startswith('SELECT trait_id')


def test_a_savepoint_may_not_follow_rows_inserted_later(mysql_database):
    api = client_mod.Client(client_mod.make_app(mysql_database))
    rp = client_mod.make_provider(api, 'cn1')
    with pytest.raises(Exception, match='savepoint') as raised:
        with mysql_database.writer() as conn:
            row = providers.take(conn, rp, 0)
            db_api.insert_later(conn, tables.resource_provider_traits, [
                {'resource_provider_id': row['id'], 'trait_id': 1,
                 'created_at': db_api.utcnow()}])
            with conn.begin_nested():
                pass
    # not an error a savepoint's caller forgives
    assert not isinstance(raised.value, db_api.CONSTRAINT_VIOLATION)
    assert api.get('/resource_providers/%s' % rp).json['generation'] == 0


def test_a_claims_allocations_and_generations_go_with_the_record(mysql_database, sent):
    round_trips.check_claims_go_with_the_record(mysql_database, sent)
