"""What a write path may not do inside ``Database.writer()``, refused with
an error naming the rule (``db.write.Write``) on every engine, the write
rolled back and the next one unharmed."""
import uuid

import pytest

from placement_server.db import api as db_api
from placement_server.db import changes
from placement_server.db import providers
from placement_server.db import tables
from placement_server.db import write as write_mod


def _count(database):
    with database.reader() as conn:
        return conn.exec_driver_sql('SELECT count(*) FROM resource_providers').scalar()


def _still_writes(database):
    before = _count(database)
    with database.writer() as conn:
        providers.create(conn, str(uuid.uuid4()), 'after-%s' % uuid.uuid4())
    assert _count(database) == before + 1


@pytest.mark.parametrize('end', [
    lambda conn: conn.commit(),
    lambda conn: conn.exec_driver_sql('COMMIT'),
    lambda conn: conn.exec_driver_sql('ROLLBACK'),
    lambda conn: conn.exec_driver_sql('BEGIN'),
], ids=['commit()', 'COMMIT', 'ROLLBACK', 'BEGIN'])
def test_a_write_path_may_not_end_or_begin_the_transaction_itself(database, end):
    with pytest.raises(RuntimeError, match='must not commit, roll back or begin by itself'):
        with database.writer() as conn:
            providers.create(conn, str(uuid.uuid4()), 'refused')
            conn.exec_driver_sql('SELECT 1')   # (PostgreSQL: BEGIN has gone)
            end(conn)
    assert _count(database) == 0
    _still_writes(database)


def test_no_savepoint_may_follow_queued_statements(database):
    rp = str(uuid.uuid4())
    with database.writer() as conn:
        providers.create(conn, rp, 'cn1')
    with database.reader() as conn:
        provider_id = providers.get(conn, rp)['id']
    row = {'resource_provider_id': provider_id, 'trait_id': 1, 'created_at': db_api.utcnow()}
    if not database.strategy.folded:
        # SQLite inserts them at once: nothing waits, the savepoint may come
        with database.writer() as conn:
            db_api.insert_later(conn, tables.resource_provider_traits, [row])
            with conn.begin_nested():
                pass
        return
    with pytest.raises(RuntimeError, match='no savepoint may follow insert_later'):
        with database.writer() as conn:
            changes.note(conn, [provider_id])
            db_api.insert_later(conn, tables.resource_provider_traits, [row])
            with conn.begin_nested():
                pass
    with database.reader() as conn:
        assert conn.exec_driver_sql('SELECT count(*) FROM resource_provider_traits'
                                    ).scalar() == 0
    _still_writes(database)


def test_changes_are_noted_only_inside_a_writer(database):
    with database.reader() as conn:
        with pytest.raises(RuntimeError, match='noted inside a Database.writer'):
            changes.note(conn, [1])
        with pytest.raises(RuntimeError, match='noted inside a Database.writer'):
            changes.note_names(conn)


def test_a_writes_state_is_its_own_and_gone_with_it(database):
    with database.writer() as conn:
        write = write_mod.Write.of(conn)
        changes.note_names(conn)
        assert write.changed == {changes.NAMES}
    with database.reader() as conn:
        assert write_mod.KEY not in conn.info
    with database.writer() as conn:
        assert write_mod.Write.of(conn) is not write
        assert write_mod.Write.of(conn).changed == set()

