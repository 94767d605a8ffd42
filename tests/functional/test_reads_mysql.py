"""A read on MariaDB ends without a round trip: its connections stay in
autocommit (``Database.read_engine``), so each statement reads what is
committed when it runs and nothing is left open to roll back."""
from sqlalchemy import event

from tests.functional import client as client_mod


def _recording(engine):
    """What the readers' connections are asked to send: query texts, and
    '<rollback>' for each ROLLBACK of their own."""
    sent = []

    def on_checkout(dbapi_conn, _record, _proxy):
        execute = dbapi_conn.query
        rollback = type(dbapi_conn).rollback

        def query(sql, *args, **kwargs):
            sent.append(sql if isinstance(sql, str) else sql.decode())
            return execute(sql, *args, **kwargs)

        def recorded_rollback():
            sent.append('<rollback>')
            return rollback(dbapi_conn)
        dbapi_conn.query = query
        dbapi_conn.rollback = recorded_rollback

    event.listen(engine.pool, 'checkout', on_checkout)
    engine.pool.dispose()
    return sent


def test_a_read_request_sends_no_rollback(mysql_database):
    api = client_mod.Client(client_mod.make_app(mysql_database), version='1.39')
    client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    sent = _recording(mysql_database.read_engine)
    for _ in range(3):
        resp = api.get('/resource_providers')
        assert resp.status_int == 200 and len(resp.json['resource_providers']) == 1
    assert sent, 'the reads went through the readers\' pool'
    assert not [s for s in sent if s == '<rollback>' or 'ROLLBACK' in s.upper()], sent


def test_a_reader_sees_what_was_committed_after_its_last_read(mysql_database):
    # the same pooled connection, read before and after another commit
    api = client_mod.Client(client_mod.make_app(mysql_database), version='1.39')
    client_mod.make_provider(api, 'cn1')
    with mysql_database.reader() as conn:
        before = conn.exec_driver_sql('SELECT COUNT(*) FROM resource_providers').scalar()
        first = conn.connection.dbapi_connection
    client_mod.make_provider(api, 'cn2')
    with mysql_database.reader() as conn:
        assert conn.connection.dbapi_connection is first
        again = conn.exec_driver_sql('SELECT COUNT(*) FROM resource_providers').scalar()
        other = conn.exec_driver_sql('SELECT COUNT(*) FROM resource_providers').scalar()
        client_mod.make_provider(api, 'cn3')
        # within one reader too: each statement reads what is committed
        last = conn.exec_driver_sql('SELECT COUNT(*) FROM resource_providers').scalar()
    assert (before, again, other, last) == (1, 2, 2, 3)
