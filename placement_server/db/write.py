"""One write transaction: what it queues, what it noted, what it may do.

``Database.writer()`` puts a ``Write`` in its connection's ``info`` (the
per-connection dict SQLAlchemy keeps for its users) for as long as the
transaction lasts. Everything a write leaves for later lives here, not in
module globals: the BEGIN a PostgreSQL write sends with its first
statement, the statements ``api.insert_later`` and ``api.send_later``
queued, whether the change record's round trip carried the COMMIT (MySQL),
and the providers the write changed (``changes.note*``). The engine's
dialect (``placement_server.db.dialects``) reads it as it sends each
statement.

The rules a write path must keep are checked here, each refusal a
``RuleBroken`` (a RuntimeError) naming the rule:

- no savepoint may follow queued statements: an error of theirs would be
  taken for one of the statement the savepoint guards, and perhaps
  forgiven;
- a write path does not commit, roll back or begin by itself: the writer
  sends BEGIN and COMMIT, folded into its statements;
- changes are noted inside a writer (no record would carry them).
"""
from collections.abc import Callable
from collections.abc import Iterable

import sqlalchemy as sa

# conn.info key of the connection's Write.
KEY = 'placement_write'
BEGIN = 'BEGIN;'
# What a write path may not send itself (the writer sends them).
TRANSACTION_CONTROL = frozenset(
    spelling for word in ('BEGIN', 'BEGIN IMMEDIATE', 'START TRANSACTION', 'COMMIT', 'ROLLBACK')
    for spelling in (word, word.lower()))

# How the engine writes a change record: (conn, shard, changed provider
# ids, created provider uuids, send COMMIT with it), chosen once per
# engine (``api._strategy_for``; the functions are ``changes.record_*``).
Recorder = Callable[[sa.Connection, int, set[int], set[str], bool], None]

NO_SAVEPOINT_AFTER_QUEUED = (
    'no savepoint may follow insert_later/send_later statements in a write '
    '(their errors would be taken for the savepoint\'s): queue them after it')
NO_TRANSACTION_CONTROL = (
    'a write path must not commit, roll back or begin by itself: '
    'Database.writer() does (%r refused)')
NOTE_OUTSIDE_WRITER = (
    'changes are noted inside a Database.writer() transaction: its change '
    'record carries them')


class RuleBroken(RuntimeError):
    """A write path broke one of the rules above (a bug of ours): raised
    as it is, never translated into a database error (``api``'s
    ``handle_error`` listener, ahead of oslo.db's filters)."""


class Write:
    """The state of one ``Database.writer()`` transaction."""

    __slots__ = ('folded', 'recorder', 'begin', 'queued', 'committed', 'controlling',
                 'changed', 'created')

    def __init__(self, folded: bool, recorder: Recorder, begin: bool = False) -> None:
        # folded: send_later statements wait (PostgreSQL, MySQL through
        # PyMySQL); elsewhere they run at once.
        self.folded = folded
        self.recorder = recorder
        # the BEGIN the next statement carries (PostgreSQL)
        self.begin = BEGIN if begin else ''
        self.queued: list[str] = []
        # the record's round trip ended with COMMIT (MySQL)
        self.committed = False
        # the writer itself is beginning or ending the transaction (it
        # begins it once the Write is in place)
        self.controlling = True
        self.changed: set[int] = set()
        self.created: set[str] = set()

    @staticmethod
    def of(conn: sa.Connection) -> 'Write':
        """The write ``conn`` is in; RuntimeError outside a writer."""
        write: Write | None = conn.info.get(KEY)
        if write is None:
            raise RuleBroken(NOTE_OUTSIDE_WRITER)
        return write

    # What the write changed (changes.note*).

    def note(self, provider_ids: Iterable[int]) -> None:
        self.changed.update(provider_ids)

    def note_created(self, uuid: str) -> None:
        self.created.add(uuid)

    def take_notes(self) -> tuple[set[int], set[str]]:
        """What was noted, handed to the record once."""
        notes = self.changed, self.created
        self.changed, self.created = set(), set()
        return notes

    # What waits for a later round trip.

    def send_later(self, sql: str) -> None:
        self.queued.append(sql + ';')

    @property
    def has_pending(self) -> bool:
        return bool(self.begin or self.queued)

    @property
    def sent_nothing(self) -> bool:
        """Nothing has reached the server and nothing is queued."""
        return self.begin != '' and not self.queued

    @property
    def began(self) -> bool:
        """The server is in this write's transaction (its BEGIN went)."""
        return not self.begin

    def take_pending(self) -> str:
        """What the connection must send before its next statement: the
        BEGIN, then the queued statements, handed over once."""
        prefix = self.begin + ''.join(self.queued) if self.queued else self.begin
        self.begin = ''
        self.queued = []
        return prefix

    # The rules.

    def check_savepoint(self) -> None:
        if self.queued:
            raise RuleBroken(NO_SAVEPOINT_AFTER_QUEUED)

    def check_statement(self, statement: str) -> None:
        """Refuse a transaction's BEGIN, COMMIT or ROLLBACK sent by a write
        path (the writer's own are sent while ``controlling``)."""
        if statement in TRANSACTION_CONTROL and not self.controlling:
            raise RuleBroken(NO_TRANSACTION_CONTROL % statement)

    def check_commit(self) -> None:
        if not self.controlling:
            raise RuleBroken(NO_TRANSACTION_CONTROL % 'commit()')
