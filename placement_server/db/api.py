"""The database handle: engines, transactions and retries.

One ``Database`` per process (per WSGI worker). Every request runs its
reads in one ``reader()`` connection and its writes in one ``writer()``
transaction: a multi-row write either commits whole or changes nothing.

PostgreSQL and MySQL/MariaDB engines come from oslo.db, as upstream
services make them: the MySQL SQL mode and Galera's ``wsrep_sync_wait``
set on each new connection, pool settings and recycle time from
``[placement_database]`` (oslo.db's option names), and oslo.db's exception
filters, which name what went wrong: ``DBDeadlock`` (deadlocks, lock wait
timeouts and Galera certification failures, which surface at COMMIT),
``DBConnectionError``, ``DBDuplicateEntry``... SQLite keeps its own setup
(one writer at a time, see below) behind the same filters.

Round trips are most of what a request costs the database beside its
statements, so the pool pings a connection only after it idled
(``PING_AFTER_IDLE``), skips the rollback on checkin when nothing is
open, PostgreSQL readers run without BEGIN and ROLLBACK, a PostgreSQL
write sends its BEGIN with its first statement and its COMMIT with its
change record (``_folded_transaction``), a MariaDB write (PyMySQL) its
last rows and COMMIT with its change record (``_folded_record``), and
PostgreSQL plans the statements every write sends once per connection
(``placement_server.db.prepared``).

``retry_on_deadlock`` (oslo.db's ``wrap_db_retry``) replays the whole
transaction a bounded number of times, each attempt a fresh transaction
that sees the other writer's commit. A lost database connection is a 503
for the client to retry, never a 500: the next request reconnects.
"""
import contextlib
import datetime
import functools
import logging
import time

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import engines
from oslo_db.sqlalchemy import exc_filters
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import events as sa_events

from placement_server import errors
from placement_server.db import changes
from placement_server.db import prepared as prepared_mod

LOG = logging.getLogger(__name__)

# A write refused by a unique or foreign key constraint: oslo.db's names
# for it, and SQLAlchemy's for an engine made without oslo.db's filters.
CONSTRAINT_VIOLATION = (db_exc.DBDuplicateEntry, db_exc.DBReferenceError,
                        db_exc.DBConstraintError, sa.exc.IntegrityError)

# Lost races oslo.db leaves as a plain DBError.
_ALSO_TRANSIENT = (
    'could not serialize access',   # PostgreSQL 40001
    'database is locked',           # SQLite
)

# How long a replayed transaction waits first; it doubles (with jitter)
# up to the maximum. Short: the other writer has committed already.
RETRY_INTERVAL = 0.01
MAX_RETRY_INTERVAL = 0.5

# What the connection to MySQL/MariaDB runs first. READ COMMITTED: a
# replayed statement sees what other writers committed, and reads take no
# gap locks.
_MYSQL_INIT = 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'


def utcnow():
    """Naive UTC, as stored in every created_at/updated_at column."""
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)


def is_transient(error):
    """Another writer got in the way: replaying the transaction may work.

    The conflict may hide behind the error it caused: when MariaDB (or
    Galera, for a write replicated from another node) aborts a
    transaction inside a savepoint, the savepoint's rollback then fails
    with "SAVEPOINT ... does not exist", raised while handling the
    deadlock. So the errors this one was raised from count too.
    """
    for _ in range(5):
        if error is None:
            return False
        if isinstance(error, db_exc.DBDeadlock):
            return True
        if isinstance(error, (db_exc.DBError, sa.exc.DBAPIError)):
            text = str(getattr(error, 'inner_exception', None) or error).lower()
            if any(t in text for t in _ALSO_TRANSIENT):
                return True
        error = error.__cause__ or error.__context__
    return False


def retry_on_deadlock(fn=None, *, attempts=10):
    """Replay ``fn`` when the database reports a transient conflict;
    still conflicting after ``attempts`` tries, the client gets a 503."""
    if fn is None:
        return functools.partial(retry_on_deadlock, attempts=attempts)
    replaying = oslo_db_api.wrap_db_retry(
        max_retries=attempts - 1, retry_interval=RETRY_INTERVAL,
        inc_retry_interval=True, max_retry_interval=MAX_RETRY_INTERVAL,
        retry_on_deadlock=True, exception_checker=is_transient)(fn)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return replaying(*args, **kwargs)
        except (db_exc.DBError, sa.exc.DBAPIError) as e:
            if not is_transient(e):
                raise
            raise errors.ServiceUnavailable(
                'The database kept refusing the write as conflicting with '
                'concurrent writes; try again.')
    return wrapper


def _sqlite_pragmas(dbapi_conn, _record):
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


def _sqlite_begin(conn):
    # Take the write lock at BEGIN: two SQLite transactions that both read
    # and then write would otherwise deadlock on the lock upgrade.
    conn.exec_driver_sql('BEGIN IMMEDIATE' if conn.info.get('writer')
                         else 'BEGIN')


def _sqlite_engine(url, **kwargs):
    # Not oslo.db's: it would open a connection per request (NullPool) and
    # could not take the write lock at BEGIN.
    engine = sa.create_engine(url, **kwargs)
    # pysqlite's own transaction handling is replaced by explicit BEGINs.
    event.listen(engine, 'connect', _sqlite_pragmas)

    @event.listens_for(engine, 'connect')
    def _no_autobegin(dbapi_conn, _record):
        dbapi_conn.isolation_level = None

    event.listen(engine, 'begin', _sqlite_begin)
    event.listen(engine, 'handle_error', exc_filters.handler, retval=True)
    return engine


def _without_rollback_bookkeeping(engine):
    """Keep oslo.db's error translation (its handle_error hook), drop the
    listeners it adds to every commit, rollback and checkin to remember
    which error made a savepoint roll back (reported as ``DBError.cause``,
    which nothing here reads). They cost every statement an event
    dispatch: ~30 us of CPU per request on the cheapest calls, up to 10%
    on MariaDB (docs/bench/placement-server.md, issue 16). The translation itself is a
    dialect event, free until an error happens."""
    for target, names in ((engine, ('rollback_savepoint', 'rollback', 'commit')),
                          (engine.pool, ('checkin',))):
        for name in names:
            for listener in list(getattr(target.dispatch, name)):
                if getattr(listener, '__module__', None) == exc_filters.__name__:
                    event.remove(engine, name, listener)
    # With no connection event left to listen to, statements can skip the
    # event dispatch again (the flag stays up once a listener was added).
    if not any(getattr(engine.dispatch, name) for name in _CONNECTION_EVENTS):
        engine._has_events = False
    return engine


_CONNECTION_EVENTS = [name for name, value in vars(sa_events.ConnectionEvents).items()
                      if callable(value) and not name.startswith('_')]


# A connection back from the pool after this many seconds idle is pinged
# first and replaced if the database dropped it (a restart, a failover, an
# idle timeout), so the request never meets the dead one. One used more
# recently is not: a database lost since then fails the request's first
# statement instead, which is a 503, and SQLAlchemy replaces every pooled
# connection before the next request. The ping is a round trip; under
# steady traffic skipping it is 1 of 3-4 per read request.
PING_AFTER_IDLE = 1.0


def _engine_with_lazy_ping(url, **engine_args):
    """oslo.db's engine, with the ping on checkout only after idling and
    no rollback on checkin for a connection with no transaction open."""
    engine_args.update(pool_pre_ping=False, pool_reset_on_return=None)
    engine = sa.create_engine(url, **engine_args)
    if engine.dialect.name == 'postgresql':
        _send_pending_with_next_statement(engine.dialect)
    elif _sends_several_statements(engine):
        event.listen(engine, 'do_connect', _allow_several_statements)
        _send_pending_with_the_record(engine.dialect)
    event.listen(engine.pool, 'checkin', _note_idle_since)
    event.listen(engine.pool, 'checkout', _ping_after_idle)
    event.listen(engine.pool, 'reset', _rollback_if_open)
    return engine, engine


def _sends_several_statements(engine):
    """MySQL through PyMySQL: the writer sends several statements in a
    round trip (``_send_pending_with_the_record``)."""
    return engine.dialect.name == 'mysql' and engine.dialect.driver == 'pymysql'


def _allow_several_statements(_dialect, _record, _cargs, cparams):
    # Only the change record sends several, all of them ours (no client
    # value is ever part of a statement's text: they are bound or quoted).
    from pymysql.constants import CLIENT
    cparams['client_flag'] = cparams.get('client_flag', 0) | CLIENT.MULTI_STATEMENTS


def _note_idle_since(_dbapi_conn, record):
    if record is not None:
        record.info['idle_since'] = time.monotonic()


def _ping_after_idle(dbapi_conn, record, fairy):
    idle_since = record.info.get('idle_since')
    if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE:
        return   # a new connection, or one in use a moment ago
    dialect = fairy._pool._dialect
    try:
        dialect.do_ping(dbapi_conn)
    except dialect.loaded_dbapi.Error as e:
        if not dialect.is_disconnect(e, dbapi_conn, None):
            raise
        # The pool reconnects, and drops every connection as old as this one.
        raise sa.exc.InvalidatePoolError(str(e)) from e


def _rollback_if_open(dbapi_conn, _record, reset_state):
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


_MYSQL_IN_TRANSACTION = 1   # SERVER_STATUS_IN_TRANS in the OK packet

# SQL that a folded transaction's connection (its id) sends in front of its
# next statement: its BEGIN, then INSERTs nothing has read yet.
_PENDING: dict[int, str] = {}
_BEGIN = 'BEGIN;'
# conn.info key: the connection is in a folded transaction.
_FOLDED = 'folded_transaction'
# insert_later's INSERT text, per table and column set.
_INSERT_SQL: dict = {}
_PG_IDLE = 0   # psycopg2.extensions.TRANSACTION_STATUS_IDLE


def _pending(cursor, statement):
    """What the connection must send before ``statement`` (``_PENDING``)."""
    prefix = _PENDING.pop(id(cursor.connection), None) if _PENDING else None
    if prefix and prefix != _BEGIN and statement.startswith('SAVEPOINT'):
        # An error of the pending rows would be taken for one of the
        # statement the savepoint guards, and perhaps forgiven.
        raise RuntimeError('insert_later rows cannot be followed by a savepoint')
    return prefix


def _send_pending_with_next_statement(dialect):
    """psycopg2 sends a transaction's BEGIN as a round trip of its own; a
    ``_folded_transaction`` has its connection in autocommit and puts the
    BEGIN, and any ``insert_later`` rows, in front of the next statement
    instead. A statement marked ``prepared`` runs as a prepared statement.
    (Methods of this engine's dialect: an engine event would cost every
    statement a dispatch.)"""
    execute, execute_no_params = dialect.do_execute, dialect.do_execute_no_params
    executemany = dialect.do_executemany

    def do_execute(cursor, statement, parameters, context=None):
        prefix = _pending(cursor, statement)   # holds no % (see insert_later)
        options = context.execution_options if context is not None else {}
        if not options.get(prepared_mod.PREPARE):
            execute(cursor, prefix + statement if prefix else statement, parameters, context)
            return
        info = context.root_connection.info
        text, new_name = prepared_mod.as_prepared(info, statement)
        try:
            execute(cursor, (prefix or '') + text + options.get(prepared_mod.THEN, ''),
                    parameters, context)
        except dialect.loaded_dbapi.Error as e:
            prepared_mod.failed(info, e)
            raise
        if new_name is not None:
            prepared_mod.ran(info, statement, new_name)

    def do_execute_no_params(cursor, statement, context=None):
        prefix = _pending(cursor, statement)
        execute_no_params(cursor, prefix + statement if prefix else statement, context)

    def do_executemany(cursor, statement, parameters, context=None):
        prefix = _pending(cursor, statement)
        if prefix:
            cursor.execute(prefix)
        executemany(cursor, statement, parameters, context)

    dialect.do_execute = do_execute
    dialect.do_execute_no_params = do_execute_no_params
    dialect.do_executemany = do_executemany


def _send_pending_with_the_record(dialect):
    """MySQL/MariaDB (PyMySQL, its connections allowing several statements
    per round trip): ``insert_later`` rows wait for the change record,
    which carries them and the COMMIT in one round trip (``RECORD``);
    before any other statement they go in a round trip of their own. The
    record's later statements are read here, so their errors surface as
    the statement's own (oslo.db's filters name them), and its COMMIT
    spares the transaction's own."""
    execute, execute_no_params = dialect.do_execute, dialect.do_execute_no_params
    commit = dialect.do_commit

    def send_alone(cursor, statements):
        execute_no_params(cursor, statements, None)
        while cursor.nextset():
            pass

    def do_execute(cursor, statement, parameters, context=None):
        prefix = _pending(cursor, statement)
        if prefix and '%' not in prefix and context is not None and (
                context.execution_options.get(RIDES_PENDING)):
            # The statements before it, then it: its answer is the last.
            execute(cursor, prefix + statement, parameters, context)
            while cursor.nextset():
                pass
            return
        if prefix:
            send_alone(cursor, prefix)
        execute(cursor, statement, parameters, context)

    def do_execute_no_params(cursor, statement, context=None):
        prefix = _pending(cursor, statement)
        record = context is not None and context.execution_options.get(changes.RECORD)
        if prefix and not record:
            send_alone(cursor, prefix)
            prefix = None
        execute_no_params(cursor, prefix + statement if prefix else statement, context)
        if record:
            while cursor.nextset():
                pass
            _COMMITTED.add(id(cursor.connection))

    def do_commit(connection):
        # (SQLAlchemy hands over the pool's proxy of the DBAPI connection)
        key = id(getattr(connection, 'dbapi_connection', connection))
        if key in _COMMITTED:
            _COMMITTED.discard(key)
            return
        commit(connection)

    dialect.do_execute = do_execute
    dialect.do_execute_no_params = do_execute_no_params
    dialect.do_commit = do_commit


# Execution option of a MySQL read that may carry the pending statements
# before it in its round trip (its answer is read last).
RIDES_PENDING = 'placement_rides_pending'
# MySQL connections (their ids) whose transaction the record committed.
_COMMITTED: set[int] = set()


@contextlib.contextmanager
def _folded_transaction(conn):
    """A PostgreSQL write transaction in fewer round trips: BEGIN goes with
    the first statement, rows given to ``insert_later`` with the next one,
    and COMMIT with the change record (``changes.record(commit=True)``);
    the connection is in autocommit so that psycopg2 sends neither BEGIN
    nor COMMIT by itself. Nothing sent, nothing to end."""
    dbapi_conn = conn.connection.dbapi_connection
    key = id(dbapi_conn)
    with _autocommit(conn):
        _PENDING[key] = _BEGIN
        conn.info[_FOLDED] = True
        try:
            yield
            if _PENDING.get(key) != _BEGIN:
                changes.record(conn, commit=True)
        except BaseException:
            if not _PENDING.get(key, '').startswith(_BEGIN) and not dbapi_conn.closed:
                try:
                    conn.exec_driver_sql('ROLLBACK')
                except sa.exc.DBAPIError:
                    pass   # the connection is lost: so is its transaction
            raise
        finally:
            _PENDING.pop(key, None)
            conn.info.pop(_FOLDED, None)
            if not dbapi_conn.closed and dbapi_conn.info.transaction_status != _PG_IDLE:
                # Never hand the pool a connection inside a transaction.
                conn.invalidate()


@contextlib.contextmanager
def _folded_record(conn):
    """A MySQL write transaction whose last round trip carries its
    ``insert_later`` rows, its change record and its COMMIT
    (``changes.record(commit=True)``, see ``_send_pending_with_the_record``)."""
    key = id(conn.connection.dbapi_connection)
    conn.info[_FOLDED] = True
    try:
        yield
    finally:
        _PENDING.pop(key, None)
        _COMMITTED.discard(key)
        conn.info.pop(_FOLDED, None)


def insert_later(conn, table, rows):
    """INSERT ``rows`` (dicts with the same keys) into ``table``. In a
    PostgreSQL write they go in front of the transaction's next statement,
    in a MySQL one in front of the change record or in a round trip of
    their own before any other statement: for a write's last rows, with
    the record and COMMIT, a round trip saved; the order of statements
    kept. On SQLite they are inserted now."""
    if not conn.info.get(_FOLDED):
        conn.execute(table.insert(), rows)
        return
    columns = tuple(rows[0])
    template = _INSERT_SQL.get((table, columns))
    if template is None:
        sql = str(table.insert().inline().compile(dialect=conn.dialect, column_keys=columns))
        head, _, values = sql.partition(' VALUES ')
        template = _INSERT_SQL[table, columns] = (head + ' VALUES ', values)
    sql = template[0] + ','.join(rendered(conn, template[1], row) for row in rows)
    if '%' in sql and conn.dialect.name == 'postgresql':
        # psycopg2 would read it as a placeholder of the statement it rides on
        conn.execute(table.insert(), rows)
        return
    send_later(conn, sql)


def folds_the_record(conn):
    """``conn`` is in a MySQL write whose record carries its COMMIT."""
    return bool(conn.info.get(_FOLDED)) and conn.dialect.name == 'mysql'


def folded(conn):
    """``conn`` is in a write whose ``send_later`` statements wait
    (PostgreSQL, MySQL through PyMySQL); elsewhere they run at once."""
    return bool(conn.info.get(_FOLDED))


def rendered(conn, sql, params):
    """``sql`` with ``params`` quoted in by the driver, as it would send it."""
    with contextlib.closing(conn.connection.dbapi_connection.cursor()) as cursor:
        text = cursor.mogrify(sql, params)
    return text.decode() if isinstance(text, bytes) else text   # psycopg2's, PyMySQL's


def send_later(conn, sql):
    """Run ``sql`` (a statement with no parameters, whose answer nobody
    reads) as ``insert_later`` sends its rows: in a folded write, with the
    next statement (PostgreSQL) or with the change record (MySQL); now
    elsewhere."""
    if not conn.info.get(_FOLDED):
        conn.exec_driver_sql(sql)
        return
    key = id(conn.connection.dbapi_connection)
    _PENDING[key] = _PENDING.get(key, '') + sql + ';'


def create_engine(url, max_pool_size=None, max_overflow=None, pool_timeout=None,
                  connection_recycle_time=3600, mysql_sql_mode='TRADITIONAL',
                  mysql_wsrep_sync_wait=None, connection_parameters=None,
                  connection_debug=0, connection_trace=False):
    """An engine for ``url``; the keywords are [placement_database]'s."""
    url = sa.engine.make_url(url)
    if url.get_backend_name() == 'sqlite':
        return _sqlite_engine(url)
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
    return _without_rollback_bookkeeping(engines.create_engine(
        url, max_pool_size=max_pool_size, max_overflow=max_overflow,
        pool_timeout=pool_timeout, connection_recycle_time=connection_recycle_time,
        mysql_sql_mode=mysql_sql_mode, mysql_wsrep_sync_wait=mysql_wsrep_sync_wait,
        connection_parameters=connection_parameters,
        connection_debug=connection_debug, connection_trace=connection_trace,
        # A worker starts even while the database is away (it answers 503
        # until it is back); commands check the connection themselves.
        max_retries=0,
        # The checkin hook yields to eventlet's green threads: none here.
        thread_checkin=False, _engine_target=_engine_with_lazy_ping))


# libpq's words for a refused or dropped connection that oslo.db's filters
# (written for older libpq texts) leave as a plain OperationalError.
_PG_CONNECTION_LOST = ('connection to server at', 'could not connect to server',
                       'server closed the connection', 'terminating connection')


def _connection_lost(error):
    if isinstance(error, db_exc.DBConnectionError):
        return True
    text = str(getattr(error, 'orig', error)).lower()
    return (isinstance(error, sa.exc.OperationalError)
            and any(t in text for t in _PG_CONNECTION_LOST))


@contextlib.contextmanager
def _unavailable_on_disconnect():
    try:
        yield
    except (db_exc.DBConnectionError, sa.exc.OperationalError) as e:
        if not _connection_lost(e):
            raise
        LOG.warning('database unreachable: %s', e)
        raise errors.ServiceUnavailable(
            'The placement database is unreachable; try again.')


@contextlib.contextmanager
def _autocommit(conn):
    dbapi_conn = conn.connection.dbapi_connection
    dbapi_conn.autocommit = True   # no round trip with psycopg2
    try:
        yield
    finally:
        if not dbapi_conn.closed:   # dropped by a lost connection
            dbapi_conn.autocommit = False


class Database:
    """A process's handle on the placement database."""

    def __init__(self, url, **engine_kwargs):
        self.url = str(url)
        self.engine = create_engine(url, **engine_kwargs)
        self.dialect = self.engine.dialect.name
        self.folds_the_record = _sends_several_statements(self.engine)

    @contextlib.contextmanager
    def reader(self):
        """A connection for reads; nothing it does is committed.

        On PostgreSQL its statements run outside a transaction: under READ
        COMMITTED each statement sees its own snapshot either way, and
        psycopg2 would spend a round trip on BEGIN and another on
        ROLLBACK. (On MariaDB the same switch is itself a round trip; on
        SQLite the transaction keeps one snapshot for the request.)
        """
        with _unavailable_on_disconnect(), self.engine.connect() as conn:
            if self.dialect == 'postgresql':
                with _autocommit(conn):
                    yield conn
            else:
                yield conn
            # Closing the connection ends its transaction (rolled back).

    @contextlib.contextmanager
    def writer(self):
        """One transaction: commits when the block ends, rolls back on error."""
        with _unavailable_on_disconnect(), self.engine.connect() as conn:
            conn.info['writer'] = True
            conn.info.pop('changed', None)
            try:
                if self.dialect == 'postgresql':
                    with _folded_transaction(conn), conn.begin():
                        yield conn
                elif self.folds_the_record:
                    with _folded_record(conn), conn.begin():
                        yield conn
                        changes.record(conn, commit=True)
                else:
                    with conn.begin():
                        yield conn
                        # last, so the change counter is held only for the commit
                        changes.record(conn)
            finally:
                conn.info.pop('writer', None)
                conn.info.pop('changed', None)

    def dispose(self):
        self.engine.dispose()
