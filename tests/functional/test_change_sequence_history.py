"""The change sequence when the database's history changes under a reader
(placement_server/db/changes.py, its last paragraphs): a restore of an
earlier copy, a promoted replica lacking the last commits, with or without
new writes taking the counters past the reader, and ``invalidate_all``
(``placement-manage db reload-views``) after any of them. A reader whose
last records are no longer the database's must be sent to a full load
(``since`` answers None); one whose history the database still holds
follows on.

The copy here is of the two tables of the sequence, taken and put back
with SQL, on every engine: what a restore or a failover does to them.
What it does to the rest, under running servers, is
tests/integration/test_history_changes.py's.
"""
from unittest import mock

import pytest

from placement_server.db import changes
from placement_server.db import prepared
from tests.functional import client as client_mod
from tests.functional.test_change_sequence import host
from tests.functional.test_change_sequence import ids
from tests.functional.test_change_sequence import ok
from tests.functional.test_change_sequence import position
from tests.functional.test_change_sequence import put_inventories

V = '1.39'
TABLES = ('resource_view_counters', 'resource_view_changes')


@pytest.fixture
def api(database):
    return client_mod.Client(client_mod.make_app(database), version=V)


def copy(database):
    """The sequence's rows, as a dump holds them."""
    with database.reader() as conn:
        return {t: [tuple(r) for r in conn.exec_driver_sql(
            'SELECT * FROM %s' % t).all()] for t in TABLES}


def put_back(database, rows):
    """The sequence as it was when ``rows`` were copied."""
    with database.writer() as conn:
        for table in TABLES:
            conn.exec_driver_sql('DELETE FROM %s' % table)
            if rows[table]:
                conn.exec_driver_sql('INSERT INTO %s VALUES %s' % (table, ','.join(
                    '(%s)' % ','.join(map(str, row)) for row in rows[table])))


def since(database, last):
    with database.reader() as conn:
        return changes.since(conn, last)


@pytest.fixture
def rp(api):
    return host(api, 'cn1')


def writes(api, rp, count, start=10):
    for total in range(start, start + count):
        ok(put_inventories(api, rp, {'VCPU': {'total': total}}))


def test_a_restore_below_the_reader_reloads(api, database, rp):
    earlier = copy(database)
    writes(api, rp, 3)
    reader = position(database)
    put_back(database, earlier)
    assert since(database, reader) is None


def test_another_history_past_the_reader_reloads(api, database, rp):
    # a replica that lacks the reader's last writes, promoted, then written
    # to until its counters stand past the reader's
    earlier = copy(database)
    writes(api, rp, 3)
    reader = position(database)
    put_back(database, earlier)
    writes(api, rp, 5, start=20)
    assert all(n.seq >= reader[s].seq for s, n in position(database).items())
    assert since(database, reader) is None


def test_reload_views_after_a_restore_reloads_every_reader(api, database, rp):
    # as the issue found it: a copy, then writes on every shard, twice over,
    # so that the counters put back stand below every reader's
    earlier = copy(database)
    readers = []
    for i in range(2 * changes.SHARDS):
        host(api, 'cn-%d' % i)
        readers.append(position(database))
    put_back(database, earlier)
    with database.writer() as conn:
        changes.invalidate_all(conn)
    assert [since(database, r) for r in readers] == [None] * len(readers)
    # a reader that loads again follows on from there
    here = position(database)
    writes(api, rp, 1, start=30)
    assert since(database, here)[1] == ids(database, rp)


def test_a_restore_of_what_the_reader_saw_follows_on(api, database, rp):
    # the copy holds every record the reader applied: nothing to reload
    writes(api, rp, 2)
    reader = position(database)
    same = copy(database)
    put_back(database, same)
    assert since(database, reader) == (reader, set())
    writes(api, rp, 1, start=40)
    new, changed = since(database, reader)
    assert changed and new != reader


def test_an_older_reader_follows_on_after_a_restore_of_a_later_copy(api, database, rp):
    older = position(database)
    writes(api, rp, 2)
    later = copy(database)
    writes(api, rp, 2, start=20)
    put_back(database, later)
    new, changed = since(database, older)
    assert changed and new == position(database)


def test_a_record_with_another_token_at_the_readers_number_reloads(api, database, rp):
    # the same numbers, another history: only the token tells
    writes(api, rp, 1)
    reader = position(database)
    with database.writer() as conn:
        conn.exec_driver_sql('UPDATE resource_view_changes SET token = token + 1')
    assert since(database, reader) is None


def test_a_record_the_reader_applied_gone_from_its_number_reloads(api, database, rp):
    # rows deleted by hand: nothing at the reader's number, nothing after
    # it, every counter as it stood -- only the missing record tells
    writes(api, rp, 1)
    reader = position(database)
    shard = max(reader, key=lambda s: reader[s].seq)
    with database.writer() as conn:
        conn.exec_driver_sql('DELETE FROM resource_view_changes WHERE shard = %d AND seq = %d'
                             % (shard, reader[shard].seq))
    assert since(database, reader) is None


def test_a_reader_with_nothing_new_gets_one_row(api, database, rp):
    # since runs before every read request: what it reads when nothing
    # changed is what every request pays
    writes(api, rp, 3)
    reader = position(database)
    seen = []

    def read(sql, *args, **kwargs):
        if not sql.startswith('SELECT shard'):   # (SQLite's BEGIN)
            return execute(sql, *args, **kwargs)
        rows = execute(sql, *args, **kwargs).all()
        seen.append(rows)
        return mock.Mock(all=lambda: rows)
    with database.reader() as conn:
        execute = conn.exec_driver_sql
        with mock.patch.object(conn, 'exec_driver_sql', read):
            assert changes.since(conn, reader) == (reader, set())
    assert [len(rows) for rows in seen] == [1]


def test_since_reads_only_from_each_mark_on_however_many_records_are_kept(database):
    # Before every read request: with KEEP records per counter kept, a
    # plan that reads a whole shard (or the table) costs every request
    # milliseconds. Each change row is read from its shard's mark on, by
    # the primary key.
    reader = {shard: changes.Mark(5000, 7) for shard in range(changes.SHARDS)}
    with database.writer() as conn:
        conn.exec_driver_sql('DELETE FROM resource_view_changes')
        conn.exec_driver_sql('UPDATE resource_view_counters SET seq = 5000, floor = 0')
        conn.exec_driver_sql('INSERT INTO resource_view_changes (shard, seq, provider_id, '
                             'token) VALUES ' + ','.join(
                                 '(%d, %d, %d, 7)' % (shard, seq, seq)
                                 for shard in range(changes.SHARDS) for seq in range(1, 5001)))
    with database.reader() as conn:
        if database.dialect == 'postgresql':
            conn.exec_driver_sql('ANALYZE resource_view_changes')
        sent = []
        execute = conn.exec_driver_sql

        def read(sql, *args, **kwargs):
            sent.append((sql, args))
            return execute(sql, *args, **kwargs)
        with mock.patch.object(conn, 'exec_driver_sql', read):
            for _ in range(8):   # (PostgreSQL: past its first plans, see below)
                assert changes.since(conn, reader) == (reader, set())
        (statement, args), = {(s, repr(a)): (s, a) for s, a in sent
                              if s.startswith('SELECT shard')}.values()
        explain = {'postgresql': 'EXPLAIN ', 'mysql': 'EXPLAIN ',
                   'sqlite': 'EXPLAIN QUERY PLAN '}[database.dialect]
        plan = [tuple(row) for row in conn.exec_driver_sql(explain + statement, *args)]
        if database.dialect == 'postgresql':
            # The statement is prepared: after five runs PostgreSQL may
            # plan it once for any values. That plan reads ranges too.
            execute_it, _ = prepared.as_prepared(conn.info, statement)
            assert execute_it.startswith('EXECUTE '), execute_it   # (prepared by since)
            conn.exec_driver_sql('SET plan_cache_mode = force_generic_plan')
            generic = [row[0] for row in conn.exec_driver_sql('EXPLAIN ' + execute_it, *args)]
            conn.exec_driver_sql('RESET plan_cache_mode')
            assert 'Seq Scan on resource_view_changes' not in '\n'.join(generic), generic
            ranges = sum('Index Cond: ((shard = ' in row for row in generic)
            assert ranges == 2 * changes.SHARDS, generic
    if database.dialect == 'postgresql':
        text = '\n'.join(row[0] for row in plan)
        assert 'Seq Scan on resource_view_changes' not in text, text
        assert text.count('Index Cond: ((shard = ') == 2 * changes.SHARDS, text
    elif database.dialect == 'mysql':
        changes_read = [row for row in plan if row[2] == 'resource_view_changes']
        assert len(changes_read) == 2 and all(row[3] == 'range' for row in changes_read), plan
    else:
        text = '\n'.join(row[-1] for row in plan)
        assert 'SCAN resource_view_changes' not in text, text
