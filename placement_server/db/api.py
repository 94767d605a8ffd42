"""The database handle: engines and transactions.

One ``Database`` per process (per WSGI worker). Every request runs its
reads in one ``reader()`` connection and its writes in one ``writer()``
transaction: a multi-row write either commits whole or changes nothing.

PostgreSQL and MySQL/MariaDB engines are made as oslo.db makes them
(``create_engine`` says why not by oslo.db itself): the MySQL SQL mode
and Galera's ``wsrep_sync_wait`` set on each new connection, pool
settings and recycle time from ``[placement_database]`` (oslo.db's
option names), and oslo.db's exception filters, which name what went
wrong: ``DBDeadlock`` (deadlocks, lock wait
timeouts and Galera certification failures, which surface at COMMIT),
``DBConnectionError``, ``DBDuplicateEntry``... SQLite keeps its own setup
(one writer at a time, see below) behind the same filters.

Round trips are most of what a request costs the database beside its
statements, so the pool pings a connection only after it idled
(``PING_AFTER_IDLE``), skips the rollback on checkin when nothing is
open, PostgreSQL readers run without BEGIN and ROLLBACK, a PostgreSQL
write sends its BEGIN with its first statement and its COMMIT with its
change record (``_FoldedTransaction``), a MariaDB write (PyMySQL) its
last rows and COMMIT with its change record (``_FoldedRecord``), and
PostgreSQL plans the statements every write sends once per connection
(``placement_server.db.prepared``). Which of these a write does is chosen
once per engine: its dialect (``placement_server.db.dialects``, our
subclasses of SQLAlchemy's) and the writer's strategy; what one write
queues and notes is its ``write.Write``.

A write that lost a race is run again whole by the request's one retry
policy (``placement_server.retry``), each attempt a fresh transaction
that sees the other writer's commit. A lost database connection is a 503
for the client to retry, never a 500: the next request reconnects.
"""
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
import contextlib
import datetime
import logging
import os
import time
import traceback
from typing import Any

from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters
import sqlalchemy as sa
from sqlalchemy import event

from placement_server import errors
from placement_server.db import changes
from placement_server.db import dialects
from placement_server.db import write as write_mod

LOG = logging.getLogger(__name__)

# A write refused by a unique or foreign key constraint: oslo.db's names
# for it, and SQLAlchemy's for an engine made without oslo.db's filters.
CONSTRAINT_VIOLATION = (db_exc.DBDuplicateEntry, db_exc.DBReferenceError,
                        db_exc.DBConstraintError, sa.exc.IntegrityError)

# What the connection to MySQL/MariaDB runs first. READ COMMITTED: a
# replayed statement sees what other writers committed, and reads take no
# gap locks.
_MYSQL_INIT = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'


def utcnow() -> datetime.datetime:
    """Naive UTC, as stored in every created_at/updated_at column."""
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # Foreign keys on; WAL lets readers run beside the one writer; the busy
    # timeout makes concurrent writers queue instead of failing at once.
    cur = dbapi_conn.cursor()
    cur.execute('PRAGMA foreign_keys=ON')
    cur.execute('PRAGMA busy_timeout=30000')
    try:
        cur.execute('PRAGMA journal_mode=WAL')
    except Exception:   # in-memory databases have no WAL
        pass
    cur.close()


def _sqlite_begin(conn: sa.Connection) -> None:
    # Take the write lock at BEGIN: two SQLite transactions that both read
    # and then write would otherwise deadlock on the lock upgrade.
    conn.exec_driver_sql('BEGIN IMMEDIATE' if write_mod.KEY in conn.info else 'BEGIN')


def _no_autobegin(dbapi_conn: Any, _record: Any) -> None:
    # pysqlite's own transaction handling is replaced by explicit BEGINs.
    dbapi_conn.isolation_level = None


def _rules_unwrapped(context: sa.engine.ExceptionContext) -> None:
    """A write rule's refusal (``write.RuleBroken``) raised as it is:
    oslo.db's filters would wrap it in a DBError (and log it as one).
    Raising here ends SQLAlchemy's handle_error chain (listened first)."""
    if isinstance(context.original_exception, write_mod.RuleBroken):
        raise context.original_exception


def _translated_errors(engine: sa.Engine) -> None:
    """oslo.db's names for database errors (``DBDeadlock``...), ours kept."""
    event.listen(engine, 'handle_error', _rules_unwrapped)
    event.listen(engine, 'handle_error', exc_filters.handler, retval=True)


def _sqlite_engine(url: sa.URL) -> sa.Engine:
    # Not oslo.db's: it would open a connection per request (NullPool) and
    # could not take the write lock at BEGIN.
    engine = sa.create_engine(url)
    event.listen(engine, 'connect', _sqlite_pragmas)
    event.listen(engine, 'connect', _no_autobegin)
    event.listen(engine, 'begin', _sqlite_begin)
    _translated_errors(engine)
    return engine


# A connection back from the pool after this many seconds idle is pinged
# first and replaced if the database dropped it (a restart, a failover, an
# idle timeout), so the request never meets the dead one. One used more
# recently is not: a database lost since then fails the request's first
# statement instead, which is a 503, and SQLAlchemy replaces every pooled
# connection before the next request. The ping is a round trip; under
# steady traffic skipping it is 1 of 3-4 per read request.
PING_AFTER_IDLE = 1.0


def _pool_hooks(engine: sa.Engine, mysql_session: tuple[str, list[Any]] | None) -> None:
    """The pool's ping on checkout only after idling (``PING_AFTER_IDLE``),
    a connection inherited from a parent process replaced at checkout
    (the master forks its workers), and on MySQL the session's SQL mode
    and ``wsrep_sync_wait`` set on each new connection. Pool events,
    which cost no statement anything."""
    dialect = engine.dialect

    def on_connect(dbapi_conn: Any, record: Any) -> None:
        record.info['pid'] = os.getpid()
        if mysql_session:
            cursor = dbapi_conn.cursor()
            cursor.execute(*mysql_session)
            cursor.close()

    def on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        if record.info.get('pid') != os.getpid():
            raise sa.exc.DisconnectionError('connection opened by process %s, checked out '
                                            'in %s' % (record.info.get('pid'), os.getpid()))
        idle_since = record.info.get('idle_since')
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE:
            return   # a new connection, or one in use a moment ago
        try:
            dialect.do_ping(dbapi_conn)
        except dialect.loaded_dbapi.Error as e:
            if not dialect.is_disconnect(e, dbapi_conn, None):
                raise
            # The pool reconnects, and drops every connection as old as this one.
            raise sa.exc.InvalidatePoolError(str(e)) from e

    event.listen(engine.pool, 'connect', on_connect)
    event.listen(engine.pool, 'checkout', on_checkout)
    event.listen(engine.pool, 'checkin', _note_idle_since)
    event.listen(engine.pool, 'reset', _rollback_if_open)


def _mysql_session(sql_mode: str | None,
                   wsrep_sync_wait: int | None) -> tuple[str, list[Any]] | None:
    """What each new MySQL connection sets ([placement_database]'s
    mysql_sql_mode, mysql_wsrep_sync_wait), as one statement."""
    settings = [(name, value) for name, value in (('sql_mode', sql_mode),
                                                 ('wsrep_sync_wait', wsrep_sync_wait))
                if value is not None]
    if not settings:
        return None
    return ('SET SESSION ' + ', '.join('%s = %%s' % name for name, _ in settings),
            [value for _, value in settings])


def _log_sql(connection_debug: int) -> None:
    """[placement_database] connection_debug: 100 logs every statement and
    its rows, 50 the statements, less nothing but warnings."""
    level = (logging.DEBUG if connection_debug >= 100 else
             logging.INFO if connection_debug >= 50 else logging.WARNING)
    logging.getLogger('sqlalchemy.engine').setLevel(level)


def _traced(_conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any,
            _executemany: bool) -> tuple[str, Any]:
    """[placement_database] connection_trace: each statement says which
    line of ours sent it (a block comment: text may follow it)."""
    for frame in reversed(traceback.extract_stack()):
        if '/placement_server/' in frame.filename and '/db/api.py' not in frame.filename:
            return '%s /* %s:%s %s */' % (
                statement, frame.filename.rpartition('/placement_server/')[2], frame.lineno,
                frame.name), parameters
    return statement, parameters


def _note_idle_since(_dbapi_conn: Any, record: Any) -> None:
    if record is not None:
        record.info['idle_since'] = time.monotonic()


def _rollback_if_open(dbapi_conn: Any, _record: Any, reset_state: Any) -> None:
    """What the pool does on checkin instead of an unconditional rollback:
    a connection whose transaction was committed or rolled back (every
    ``writer()``, every ``reader()``) has nothing to undo, and PyMySQL
    would still send ROLLBACK (psycopg2 skips it by itself)."""
    if reset_state.transaction_was_reset or not reset_state.asyncio_safe:
        return
    status = getattr(dbapi_conn, 'server_status', None)   # PyMySQL's
    if isinstance(status, int) and not status & _MYSQL_IN_TRANSACTION:
        return
    dbapi_conn.rollback()


def folds_case(conn: sa.Connection) -> bool:
    """Whether the database compares uuids ignoring case.

    Upstream compares a uuid as the client spelt it with the one it
    stored (lower case, dashed), so what finds a row is the database's
    collation: on MariaDB (its tables take the server's default, which
    ignores case; ours too) an upper-case uuid finds its provider or
    consumer, on PostgreSQL and SQLite nothing. Ours compares in the
    database too; where it compares in Python (dicts of rows, the
    resource view) it uses ``uuid_key``.
    """
    return conn.dialect.name == 'mysql'


def uuid_key(conn: sa.Connection, uuid: str) -> str:
    """``uuid`` as ``conn``'s database compares it (``folds_case``)."""
    return uuid.lower() if folds_case(conn) else uuid


_MYSQL_IN_TRANSACTION = 1   # SERVER_STATUS_IN_TRANS in the OK packet
_PG_IDLE = 0   # psycopg2.extensions.TRANSACTION_STATUS_IDLE
# insert_later's INSERT text, per dialect, table and column set.
_INSERT_SQL: dict[tuple[str, sa.Table, tuple[str, ...]], tuple[str, str]] = {}
# Execution option of a MySQL read that may carry the queued statements
# before it in its round trip (``dialects.RIDES_PENDING``).
RIDES_PENDING = dialects.RIDES_PENDING


class _Plain:
    """A write as SQLAlchemy runs it (SQLite, MySQL through another
    driver): BEGIN, its statements, the change record, COMMIT."""

    folded = False
    record_commits = False   # the change record carries the COMMIT

    def __init__(self, recorder: write_mod.Recorder) -> None:
        self.recorder = recorder

    def new(self) -> write_mod.Write:
        return write_mod.Write(self.folded, self.recorder)

    @contextlib.contextmanager
    def writing(self, conn: sa.Connection, write: write_mod.Write) -> Iterator[None]:
        with conn.begin():
            write.controlling = False
            yield
            write.controlling = True
            # last, so the change counter is held only for the commit
            changes.record(conn, commit=self.record_commits)


class _FoldedRecord(_Plain):
    """MySQL through PyMySQL: the write's last queued rows, its change
    record and its COMMIT in one round trip (``dialects.MySQL``)."""

    folded = True
    record_commits = True


class _FoldedTransaction(_Plain):
    """PostgreSQL in fewer round trips: BEGIN goes with the first
    statement, rows given to ``insert_later`` with the next one, and
    COMMIT with the change record (``changes.record(commit=True)``); the
    connection is in autocommit so that psycopg2 sends neither BEGIN nor
    COMMIT by itself. Nothing sent, nothing to end."""

    folded = True

    def new(self) -> write_mod.Write:
        return write_mod.Write(self.folded, self.recorder, begin=True)

    @contextlib.contextmanager
    def writing(self, conn: sa.Connection, write: write_mod.Write) -> Iterator[None]:
        dbapi_conn = conn.connection.dbapi_connection
        assert dbapi_conn is not None
        with _autocommit(conn):
            try:
                with conn.begin():   # (in autocommit: SQLAlchemy's only)
                    write.controlling = False
                    yield
                    write.controlling = True
                    if not write.sent_nothing:
                        changes.record(conn, commit=True)
            except BaseException:
                write.controlling = True
                if write.began and not dbapi_conn.closed:
                    try:
                        conn.exec_driver_sql('ROLLBACK')
                    except sa.exc.DBAPIError:
                        pass   # the connection is lost: so is its transaction
                    except sa.exc.PendingRollbackError:
                        pass   # a refused commit(): the connection is dropped below
                raise
            finally:
                if not dbapi_conn.closed and dbapi_conn.info.transaction_status != _PG_IDLE:
                    # Never hand the pool a connection inside a transaction.
                    conn.invalidate()


def _strategy_for(engine: sa.Engine) -> _Plain:
    """How this engine's writes run, chosen once."""
    dialect = engine.dialect
    if isinstance(dialect, dialects.PostgreSQL):
        return _FoldedTransaction(changes.record_in_one_statement)
    if isinstance(dialect, dialects.MySQL):
        return _FoldedRecord(changes.record_with_commit)
    if dialect.name == 'mysql':
        return _Plain(changes.record_last_insert_id)
    return _Plain(changes.record_returning)


def insert_later(conn: sa.Connection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """INSERT ``rows`` (dicts with the same keys) into ``table``. In a
    PostgreSQL write they go in front of the transaction's next statement,
    in a MySQL one in front of the change record or in a round trip of
    their own before any other statement: for a write's last rows, with
    the record and COMMIT, a round trip saved; the order of statements
    kept. On SQLite they are inserted now."""
    if not folded(conn):
        conn.execute(table.insert(), rows)
        return
    columns = tuple(rows[0])
    key = (conn.dialect.name, table, columns)
    template = _INSERT_SQL.get(key)
    if template is None:
        sql = str(table.insert().inline().compile(dialect=conn.dialect, column_keys=columns))
        head, _, values = sql.partition(' VALUES ')
        template = _INSERT_SQL[key] = (head + ' VALUES ', values)
    sql = template[0] + ','.join(rendered(conn, template[1], row) for row in rows)
    if '%' in sql and conn.dialect.name == 'postgresql':
        # psycopg2 would read it as a placeholder of the statement it rides on
        conn.execute(table.insert(), rows)
        return
    send_later(conn, sql)


def folds_the_record(conn: sa.Connection) -> bool:
    """``conn`` is in a MySQL write whose record carries its COMMIT."""
    return folded(conn) and conn.dialect.name == 'mysql'


def folded(conn: sa.Connection) -> bool:
    """``conn`` is in a write whose ``send_later`` statements wait
    (PostgreSQL, MySQL through PyMySQL); elsewhere they run at once."""
    write: write_mod.Write | None = conn.info.get(write_mod.KEY)
    return write is not None and write.folded


def rendered(conn: sa.Connection, sql: str, params: Mapping[str, Any]) -> str:
    """``sql`` with ``params`` quoted in by the driver, as it would send it."""
    dbapi_conn = conn.connection.dbapi_connection
    assert dbapi_conn is not None
    with contextlib.closing(dbapi_conn.cursor()) as cursor:
        text = cursor.mogrify(sql, params)
    return text.decode() if isinstance(text, bytes) else str(text)   # psycopg2's, PyMySQL's


def send_later(conn: sa.Connection, sql: str) -> None:
    """Run ``sql`` (a statement with no parameters, whose answer nobody
    reads) as ``insert_later`` sends its rows: in a folded write, with the
    next statement (PostgreSQL) or with the change record (MySQL); now
    elsewhere."""
    write: write_mod.Write | None = conn.info.get(write_mod.KEY)
    if write is None or not write.folded:
        conn.exec_driver_sql(sql)
        return
    write.send_later(sql)


def create_engine(url: str | sa.URL, max_pool_size: int | None = None,
                  max_overflow: int | None = None, pool_timeout: int | None = None,
                  connection_recycle_time: int = 3600, mysql_sql_mode: str = 'TRADITIONAL',
                  mysql_wsrep_sync_wait: int | None = None,
                  connection_parameters: str | None = None,
                  connection_debug: int = 0, connection_trace: bool = False,
                  autocommit: bool = False) -> sa.Engine:
    """An engine for ``url``; the keywords are [placement_database]'s, but
    ``autocommit``: every connection in autocommit, where ending a read
    sends nothing (MySQL readers: ``Database.reader``)."""
    url = sa.engine.make_url(url)
    if url.get_backend_name() == 'sqlite':
        return _sqlite_engine(_our_dialect(url))
    if url.get_backend_name() == 'mysql':
        if not url.drivername.startswith('mysql+'):
            url = url.set(drivername='mysql+pymysql')
        url = url.update_query_dict({'charset': 'utf8mb4', 'init_command': _MYSQL_INIT})
    elif url.get_backend_name() != 'postgresql':
        return sa.create_engine(url)   # says what it cannot load
    if url.drivername == 'postgresql':
        # SQLAlchemy 2.1 would pick psycopg 3; psycopg2 is what we ship.
        # (PostgreSQL's transactions are READ COMMITTED unless told otherwise.)
        url = url.set(drivername='postgresql+psycopg2')
    url = _our_dialect(url)
    if connection_parameters:
        url = url.update_query_string(connection_parameters, append=True)
    # What oslo.db's engines.create_engine makes of the same options, but
    # without its listeners on every commit, rollback and checkin (they
    # remember which error made a savepoint roll back, which nothing here
    # reads) that make every statement dispatch engine events: 30-50 us
    # of CPU per connection use (docs/bench/placement-server.md, issue
    # 28). Its error translation is kept: the exception filters.
    args: dict[str, Any] = dict(pool_recycle=connection_recycle_time, pool_pre_ping=False,
                                pool_reset_on_return=None)
    for name, value in (('pool_size', max_pool_size), ('max_overflow', max_overflow),
                        ('pool_timeout', pool_timeout)):
        if value is not None:
            args[name] = value
    if autocommit:
        args.update(isolation_level='AUTOCOMMIT', skip_autocommit_rollback=True)
    if url.get_backend_name() == 'postgresql' and 'client_encoding' not in url.query:
        args['client_encoding'] = 'utf8'
    _log_sql(connection_debug)
    engine = sa.create_engine(url, **args)
    _translated_errors(engine)
    _pool_hooks(engine, _mysql_session(mysql_sql_mode, mysql_wsrep_sync_wait)
                if url.get_backend_name() == 'mysql' else None)
    if connection_trace:
        event.listen(engine, 'before_cursor_execute', _traced, retval=True)
    return engine


def _our_dialect(url: sa.URL) -> sa.URL:
    """``url`` naming our dialect (``dialects.DRIVERS``) for its driver."""
    name = url.drivername if '+' in url.drivername else url.drivername + '+' + {
        'sqlite': 'pysqlite', 'postgresql': 'psycopg2', 'mysql': 'pymysql'}.get(
            url.drivername, '')
    return url.set(drivername=dialects.DRIVERS.get(name, url.drivername))


# libpq's words for a refused or dropped connection that oslo.db's filters
# (written for older libpq texts) leave as a plain OperationalError.
_PG_CONNECTION_LOST = ('connection to server at', 'could not connect to server',
                       'server closed the connection', 'terminating connection')


def _connection_lost(error: Exception) -> bool:
    if isinstance(error, db_exc.DBConnectionError):
        return True
    text = str(getattr(error, 'orig', error)).lower()
    return (isinstance(error, sa.exc.OperationalError)
            and any(t in text for t in _PG_CONNECTION_LOST))


@contextlib.contextmanager
def _unavailable_on_disconnect() -> Iterator[None]:
    try:
        yield
    except (db_exc.DBConnectionError, sa.exc.OperationalError) as e:
        if not _connection_lost(e):
            raise
        LOG.warning('database unreachable: %s', e)
        raise errors.ServiceUnavailable(
            'The placement database is unreachable; try again.')


@contextlib.contextmanager
def _autocommit(conn: sa.Connection) -> Iterator[None]:
    dbapi_conn: Any = conn.connection.dbapi_connection
    dbapi_conn.autocommit = True   # no round trip with psycopg2
    try:
        yield
    finally:
        if not dbapi_conn.closed:   # dropped by a lost connection
            dbapi_conn.autocommit = False


class Database:
    """A process's handle on the placement database."""

    def __init__(self, url: str | sa.URL, **engine_kwargs: Any) -> None:
        self.url = str(url)
        self.engine = create_engine(url, **engine_kwargs)
        self.dialect = self.engine.dialect.name
        self.strategy = _strategy_for(self.engine)
        # MySQL's readers have their own pool, in autocommit (see reader()).
        self.read_engine = (create_engine(url, autocommit=True, **engine_kwargs)
                            if self.dialect == 'mysql' else self.engine)
        # Called when a write has committed (``catch_up.watch``)
        self.after_write: Callable[[], None] | None = None

    @property
    def engines(self) -> tuple[sa.Engine, ...]:
        """The engine of writes, and the readers' when it is another."""
        return tuple(dict.fromkeys((self.engine, self.read_engine)))

    @contextlib.contextmanager
    def reader(self) -> Iterator[sa.Connection]:
        """A connection for reads; nothing it does is committed.

        Its statements run outside a transaction but on SQLite, each with
        its own snapshot, as under PostgreSQL's READ COMMITTED (what reads
        more than one statement, the resource view, expects no more):
        PostgreSQL would spend a round trip on BEGIN and another on
        ROLLBACK, MariaDB one on ROLLBACK, which is what ends the snapshot
        its first read took. psycopg2 switches to autocommit without a
        round trip; PyMySQL would spend one each way, so MySQL's readers
        have their own pool whose connections stay in autocommit
        (``read_engine``). On SQLite the transaction keeps one snapshot for
        the request.
        """
        with _unavailable_on_disconnect(), self.read_engine.connect() as conn:
            if self.dialect == 'postgresql':
                with _autocommit(conn):
                    yield conn
            else:
                yield conn
            # Closing the connection ends its transaction: rolled back, but
            # where autocommit has none (skip_autocommit_rollback).

    @contextlib.contextmanager
    def writer(self) -> Iterator[sa.Connection]:
        """One transaction: commits when the block ends, rolls back on
        error. Its ``write.Write`` (``conn.info``) holds what the write
        queues and notes, and refuses what a write path may not do."""
        with _unavailable_on_disconnect(), self.engine.connect() as conn:
            write = self.strategy.new()
            # where the write's code finds it, and where the dialect does
            conn.info[write_mod.KEY] = write
            conn.execution_options(**{write_mod.KEY: write})
            try:
                with self.strategy.writing(conn, write):
                    yield conn
            finally:
                if not conn.invalidated:   # (its info would reconnect it)
                    conn.info.pop(write_mod.KEY, None)
        if self.after_write is not None:
            self.after_write()

    def dispose(self, close: bool = True) -> None:
        """Drop the pooled connections (``close=False``: without closing
        them, in a child that inherited them from its parent)."""
        for engine in self.engines:
            engine.dispose(close=close)
