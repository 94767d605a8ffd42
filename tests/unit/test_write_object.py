"""The write transaction's rules, on the object that keeps them
(``placement_server.db.write.Write``): each refusal is a RuntimeError
naming the rule. tests/functional/test_write_rules.py has the same
refusals through ``Database.writer()`` on every engine."""
import types

import pytest

from placement_server.db import changes
from placement_server.db import write as write_mod


def _write(begin=False):
    write = write_mod.Write(True, changes.record_returning, begin=begin)
    write.controlling = False   # as the writer leaves it once it has begun
    return write


def test_no_savepoint_may_follow_queued_statements():
    write = _write(begin=True)
    write.check_savepoint()   # only the BEGIN waits: fine
    write.send_later('UPDATE t SET x = 1')
    with pytest.raises(RuntimeError, match='no savepoint may follow insert_later'):
        write.check_savepoint()
    assert write.take_pending() == 'BEGIN;UPDATE t SET x = 1;'
    write.check_savepoint()   # sent: nothing waits any more


@pytest.mark.parametrize('statement', ['BEGIN', 'COMMIT', 'ROLLBACK', 'START TRANSACTION',
                                       'commit'])
def test_a_write_path_may_not_send_transaction_control(statement):
    write = _write()
    with pytest.raises(RuntimeError, match='must not commit, roll back or begin by itself'):
        write.check_statement(statement)
    write.check_statement('SELECT 1')
    write.controlling = True   # the writer's own BEGIN, COMMIT, ROLLBACK
    write.check_statement(statement)


def test_a_write_path_may_not_commit():
    write = _write()
    with pytest.raises(RuntimeError, match=r"must not commit.*'commit\(\)' refused"):
        write.check_commit()
    write.controlling = True
    write.check_commit()


def test_changes_are_noted_only_in_a_writer():
    outside = types.SimpleNamespace(info={})
    with pytest.raises(RuntimeError, match='noted inside a Database.writer'):
        write_mod.Write.of(outside)
    write = _write()
    inside = types.SimpleNamespace(info={write_mod.KEY: write})
    assert write_mod.Write.of(inside) is write


def test_notes_are_handed_to_the_record_once():
    write = _write()
    write.note([3, 1])
    write.note_created('4f0b2c8e-0000-4000-8000-000000000001')
    assert write.take_notes() == ({1, 3}, {'4f0b2c8e-0000-4000-8000-000000000001'})
    assert write.take_notes() == (set(), set())
