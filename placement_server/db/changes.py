"""The change sequence: which providers changed, in commit order.

Workers keep a resource view in memory (``placement_server.view``) and
bring it up to date from here with one indexed query per request. Every
write that changes what allocation candidates read -- a provider, its
inventories, usage, traits or aggregates, or the resource class and trait
names -- notes the providers it touched (``note``, ``note_names``), and
``Database.writer`` records them as the transaction's last statements
(``record``): one counter row gets the next sequence number and one change
row per provider carries it.

Why a counter row and not an auto-increment or a sequence: those hand out
numbers when a row is inserted, but rows become visible when their
transaction commits, out of order, so a reader that sees N+1 may not yet
see N. The counter row's lock is held from the bump to the commit: the
transaction that takes N+1 waits until the one holding N has committed.
So a reader that sees a change row with number N has seen every earlier
one of that counter, and "everything up to the highest number I saw" is
always a safe place to go on from.

Writers are spread over ``SHARDS`` counters (by the lowest provider id
they touched) so that writes to different hosts rarely queue on one
row -- or, on a Galera cluster, rarely conflict at certification. The
bump is the last statement, so a counter is held only for the commit.

Change rows are pruned as they age (``KEEP`` per counter); a reader that
fell further behind than what is kept (``floor``) loads everything again.

The numbers alone cannot tell a reader that the history it followed is no
longer the database's: a restore from an earlier dump, a promoted replica
that lacks the last commits, another database under the same URL, rows
deleted by hand. Their counters may stand below the reader's position (it
would wait forever for numbers it has seen) or, after a few writes, past
it (it would take the new history's rows for the rest of its own). So
every record also writes a random ``token`` into its change rows, and a
reader remembers, per counter, the number *and* the token of the last
record it applied (a ``Mark``). ``since`` reads from that number on
(``seq >= n``, not ``>``: the same index range, one record's rows more)
and goes on only if that record is still there with that token; anything
else -- missing, another token, pruned -- is a history the reader did not
follow, and it loads everything again; so does a counter standing below
the reader's number. Why that suffices: within a counter, numbers are
taken in commit order (above), and a consistent dump (``pg_dump``,
``mariadb-dump --single-transaction``) or a replica holds a prefix of the
commits in commit order, so a database that still holds a reader's last
record of a counter holds every earlier record of that counter, and every
later one has a higher number, which the reader reads next. Holding the
last record of every counter, it holds all the reader has seen. 62 random
bits make a token shared by two histories' records of the same number a
chance not worth counting. (What no history made -- a restore read while
half done, rows changed by hand -- only ``invalidate_all`` mends. A
Galera node read before it applied a record a reader saw through another
node looks like another history and costs a whole load: hence
``wsrep_sync_wait``.)

A counter is never without its last record: the schema starts each
counter with a record of its own (migration 0003), pruning keeps the
newest ``KEEP`` numbers and the floor's, and ``invalidate_all``
(``placement-manage db reload-views``) moves every counter one past its number, prunes every row
below it and writes that number's record with a new token -- so every
reader's mark is below the floor, or at the new number with another
token, or above what the counters hold: all reload, wherever the counters
stood (after a restore, below the readers).
"""
from collections.abc import Iterable
import random
from typing import NamedTuple
from typing import NoReturn
import uuid as uuidlib

import sqlalchemy as sa

from placement_server.db import dialects
from placement_server.db import tables
from placement_server.db import write as write_mod
from placement_server.db.prepared import PREPARE
from placement_server.db.prepared import prepared

SHARDS = 8
# Change rows kept per counter: a worker idle for longer than this many
# writes to its shard reloads its whole view once.
KEEP = 20000
# Pruning runs in the write that takes every PRUNE_EVERY-th number.
PRUNE_EVERY = 1000
# The provider id a change row names when resource class or trait names
# changed (ids start at 1).
NAMES = 0

COUNTERS = tables.resource_view_counters
CHANGES = tables.resource_view_changes

# Execution options of a record whose statements end with COMMIT (MySQL:
# ``dialects.MySQL`` reads them all).
ENDS_WITH_COMMIT = {dialects.RECORD: True, 'no_parameters': True}

# PostgreSQL's record: the bump and the change rows in one statement, the
# new providers found by uuid (UNION: a write may also name one by id).
_RECORD = sa.text(
    'WITH bump AS (UPDATE resource_view_counters SET seq = seq + 1 '
    'WHERE shard = :shard RETURNING seq) '
    'INSERT INTO resource_view_changes (shard, seq, provider_id, token) '
    'SELECT :shard, (SELECT seq FROM bump), p, :token FROM ('
    'SELECT unnest(CAST(:ids AS integer[])) AS p UNION '
    'SELECT id FROM resource_providers WHERE uuid = ANY(CAST(:uuids AS varchar[]))) AS changed')


def new_token() -> int:
    """A record's token: random, never 0 (what rows written before tokens
    hold), within a signed 64-bit column. (``random`` reseeds in a forked
    worker: no two workers draw the same.)"""
    return random.getrandbits(62) + 1


def note(conn: sa.Connection, provider_ids: Iterable[int]) -> None:
    """This write transaction changed these providers (ids)."""
    write_mod.Write.of(conn).note(provider_ids)


def note_created(conn: sa.Connection, uuid: str) -> None:
    """This write inserts the provider ``uuid``, whose id is not known yet
    (a new root's row goes with the record): the record finds it by uuid."""
    # canonical, so that it can be written into the statement
    write_mod.Write.of(conn).note_created(str(uuidlib.UUID(uuid)))


def note_names(conn: sa.Connection) -> None:
    """This write transaction created, renamed or deleted a resource class
    or trait, or a provider's aggregate uuid to id mapping could change."""
    write_mod.Write.of(conn).note([NAMES])


def record(conn: sa.Connection, commit: bool = False) -> None:
    """Write what this transaction noted, as its last statements (called by
    ``Database.writer`` just before COMMIT); nothing when nothing changed.

    ``commit`` (PostgreSQL, MySQL through PyMySQL): send the COMMIT in the
    same round trip. How is the engine's (``write.Recorder``).
    """
    write = write_mod.Write.of(conn)
    changed, created = write.take_notes()
    if not changed and not created:
        if commit:
            conn.exec_driver_sql('COMMIT', execution_options=ENDS_WITH_COMMIT)
        return
    shard = (min(changed) if changed else uuidlib.UUID(min(created)).int) % SHARDS
    write.recorder(conn, shard, changed, created, commit)


def record_in_one_statement(conn: sa.Connection, shard: int, changed: set[int],
                            created: set[str], commit: bool) -> None:
    """PostgreSQL, one round trip: bump and insert in one prepared
    statement, with the pruning when due and the COMMIT after it. A
    missing counter row makes seq NULL, which the key refuses."""
    then = _pruning(shard) if prune_due() else []
    if commit:
        then.append('COMMIT')
    try:
        conn.execute(prepared(_RECORD, then=then), {
            'shard': shard, 'ids': sorted(changed), 'uuids': sorted(created),
            'token': new_token()})
    except Exception as e:
        # oslo.db wraps it (DBError): the driver's own error tells.
        cause = getattr(getattr(e, 'inner_exception', e), 'orig', None)
        if (cause is not None and getattr(cause, 'pgcode', None) == _NOT_NULL_VIOLATION
                and cause.diag.table_name == 'resource_view_changes'):
            _missing(shard)
        raise


def record_with_commit(conn: sa.Connection, shard: int, changed: set[int],
                       created: set[str], commit: bool) -> None:
    """MySQL through PyMySQL, one round trip: the bump, the change rows
    (LAST_INSERT_ID(expr) keeps the new number on the connection), the
    pruning when due and the COMMIT. A missing counter row leaves
    ROW_COUNT() at 0 and seq NULL, which the column refuses. (Without
    ``commit``, as a record in a transaction going on: statement by
    statement.)"""
    if not commit:
        record_last_insert_id(conn, shard, changed, created, commit)
        return
    statements = [
        'UPDATE resource_view_counters SET seq = LAST_INSERT_ID(seq + 1) '
        'WHERE shard = %d' % shard,
        _insert_changes(shard, 'IF(ROW_COUNT() = 1, LAST_INSERT_ID(), NULL)',
                        changed, created)]
    if prune_due():
        statements += _pruning(shard)
    statements.append('COMMIT')
    try:
        conn.exec_driver_sql(';'.join(statements), execution_options=ENDS_WITH_COMMIT)
    except Exception as e:
        cause = getattr(getattr(e, 'inner_exception', e), 'orig', None)
        if (cause is not None and cause.args[:1] == (_MYSQL_BAD_NULL,)
                and "'seq'" in str(cause.args[1:])):
            _missing(shard)
        raise


def record_last_insert_id(conn: sa.Connection, shard: int, changed: set[int],
                          created: set[str], commit: bool) -> None:
    """MySQL through another driver, statement by statement. No UPDATE ...
    RETURNING: LAST_INSERT_ID(expr) keeps the new number on this
    connection for the insert to use."""
    bumped = conn.exec_driver_sql('UPDATE resource_view_counters SET seq = '
                                  'LAST_INSERT_ID(seq + 1) WHERE shard = %d'
                                  % shard).rowcount
    _check(bumped == 1, shard)
    _insert_and_prune(conn, shard, 'LAST_INSERT_ID()', changed, created)


def record_returning(conn: sa.Connection, shard: int, changed: set[int],
                     created: set[str], commit: bool) -> None:
    """SQLite, statement by statement: the bump returns the number."""
    number = conn.exec_driver_sql(
        'UPDATE resource_view_counters SET seq = seq + 1 WHERE shard = %d '
        'RETURNING seq' % shard).scalar()
    if number is None:
        _missing(shard)
    _insert_and_prune(conn, shard, '%d' % number, changed, created)


def _insert_and_prune(conn: sa.Connection, shard: int, seq: str, changed: set[int],
                      created: set[str]) -> None:
    conn.exec_driver_sql(_insert_changes(shard, seq, changed, created))
    if prune_due():
        prune(conn, shard)


def _insert_changes(shard: int, seq: str, changed: set[int], created: set[str]) -> str:
    """The INSERT of the change rows (``seq``: the number, in SQL), with
    the record's new token."""
    head = 'INSERT INTO resource_view_changes (shard, seq, provider_id, token) '
    token = new_token()
    if not created:
        return head + 'VALUES ' + ','.join('(%d, %s, %d, %d)' % (shard, seq, i, token)
                                           for i in sorted(changed))
    # the new providers by uuid; UNION, as a write may name one by id too
    ids = ''.join(' UNION SELECT %d' % i for i in sorted(changed))
    return head + ('SELECT %d, %s, p, %d FROM (SELECT id AS p FROM resource_providers '
                   'WHERE uuid IN (%s)%s) AS changed'
                   % (shard, seq, token, ','.join("'%s'" % u for u in sorted(created)), ids))


_NOT_NULL_VIOLATION = '23502'   # PostgreSQL's SQLSTATE
_MYSQL_BAD_NULL = 1048           # Column '...' cannot be null


def _check(bumped: bool, shard: int) -> None:
    """A write without its change rows would leave every view behind for good."""
    if not bumped:
        _missing(shard)


def _missing(shard: int) -> NoReturn:
    raise RuntimeError('resource_view_counters has no row for shard %d: the schema '
                       'is older than this code (run placement-manage db sync)' % shard)


def prune_due() -> bool:
    """One write in PRUNE_EVERY prunes its shard (by chance: on MariaDB the
    writer never reads its number back)."""
    return random.randrange(PRUNE_EVERY) == 0


def _pruning(shard: int) -> list[str]:
    """Drop the shard's change rows below the newest KEEP + 1, and say so
    in its ``floor`` (the lowest number kept: a reader at the floor still
    finds its record there): statements for a write that bumped the shard."""
    return ['UPDATE resource_view_counters SET floor = seq - %d '
            'WHERE shard = %d AND floor < seq - %d' % (KEEP, shard, KEEP),
            'DELETE FROM resource_view_changes WHERE shard = %d AND seq < '
            '(SELECT floor FROM resource_view_counters WHERE shard = %d)' % (shard, shard)]


def prune(conn: sa.Connection, shard: int) -> None:
    for statement in _pruning(shard):
        conn.exec_driver_sql(statement)


class Mark(NamedTuple):
    """Where a reader stands in one counter: the number of the last record
    it applied, and that record's token (None: the counter had no row at
    that number when the reader read it, as after rows deleted by hand)."""
    seq: int
    token: int | None


# Where a reader stands: {shard: Mark}.
Position = dict[int, Mark]


def position(conn: sa.Connection) -> Position:
    """Where the sequence stands: a view read after this is at least as new."""
    return {shard: Mark(seq, token) for shard, seq, token in conn.exec_driver_sql(
        'SELECT c.shard, c.seq, MIN(r.token) FROM resource_view_counters c '
        'LEFT JOIN resource_view_changes r ON r.shard = c.shard AND r.seq = c.seq '
        'GROUP BY c.shard, c.seq')}


def since(conn: sa.Connection, last: Position) -> tuple[Position, set[int]] | None:
    """(new position, ids of the providers changed after ``last``), in one
    statement; the ids include ``NAMES`` when names changed. None when the
    database no longer holds ``last``'s records as the reader saw them
    (pruned, or another history: see the module docstring): the caller
    loads everything again.

    The new position is the highest number seen per shard (see the module
    docstring for why that is safe), not the counter: a counter read in
    the same statement could be ahead of the rows that statement saw.

    The database judges what it can, so that a reader with nothing new
    gets one row (this runs before every read request): only the counters
    that say another history (pruned past the reader, or below it), the
    change rows after each mark, a row at a mark's number that is not the
    record the reader applied, and how many of those records are still
    there.
    """
    # Bound values, so that the text is the same from one call to the
    # next (one per shard count): PostgreSQL plans it once per connection.
    values: dict[str, int] = {}
    slot = '%%(%s)s' if conn.dialect.paramstyle == 'pyformat' else ':%s'

    def bound(name: str, value: int) -> str:
        values[name] = value
        return slot % name
    # {shard: its mark's number, bound}, {shard: its record's token, bound}
    numbers = {shard: bound('s%d' % shard, mark.seq) for shard, mark in sorted(last.items())}
    tokens = {shard: bound('t%d' % shard, mark.token) for shard, mark in sorted(last.items())
              if mark.token is not None}
    at = ' '.join('WHEN %d THEN %s' % item for item in numbers.items())
    # (each an index range from the mark on: shard = s AND seq >= n)
    newer = ' OR '.join(
        '(shard = %d AND seq >= %s)' % (shard, n) if shard not in tokens else
        '(shard = %d AND seq >= %s AND (seq > %s OR token <> %s))' % (shard, n, n, tokens[shard])
        for shard, n in numbers.items())
    held = ' OR '.join('(shard = %d AND seq = %s AND token = %s)' % (shard, numbers[shard], t)
                       for shard, t in tokens.items())
    rows = conn.exec_driver_sql(
        'SELECT shard, NULL, floor, seq FROM resource_view_counters '
        'WHERE floor > %(at)s OR seq < %(at)s UNION ALL '
        'SELECT shard, seq, provider_id, token FROM resource_view_changes WHERE %(newer)s '
        'UNION ALL SELECT -1, COUNT(DISTINCT shard), NULL, NULL FROM resource_view_changes '
        'WHERE %(held)s' % {'at': 'CASE shard %s ELSE 0 END' % at if at else '0',
                           'newer': newer or '1 = 0', 'held': held or '1 = 0'},
        values, execution_options={PREPARE: True}).all()
    new = dict(last)
    changed: set[int] = set()
    for shard, seq, value, token in rows:
        if shard < 0:   # how many of the records the reader applied are there
            if seq != len(tokens):
                return None
        elif seq is None or seq == last[shard].seq:
            # a counter pruned past the reader or standing below it; a
            # record at the reader's number that it did not apply
            return None
        else:
            changed.add(value)
            if seq > new[shard].seq:
                new[shard] = Mark(seq, token)
    return new, changed


def invalidate_all(conn: sa.Connection) -> None:
    """Make every worker load its whole view again at its next request:
    for rows changed behind the server's back (hand-made SQL, a restore,
    a test resetting its database). Every counter moves one on, every
    row below is pruned, and the new number gets a record of its own
    under a new token (see the module docstring for why no reader's mark
    survives this)."""
    # floor first: MySQL assigns left to right with the new values
    conn.exec_driver_sql('UPDATE resource_view_counters SET floor = seq + 1, seq = seq + 1')
    conn.exec_driver_sql('DELETE FROM resource_view_changes')
    conn.exec_driver_sql(
        'INSERT INTO resource_view_changes (shard, seq, provider_id, token) '
        'SELECT shard, seq, %d, %d FROM resource_view_counters' % (NAMES, new_token()))
