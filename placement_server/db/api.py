"""The database handle: engines, transactions and retries.

One ``Database`` per process (per WSGI worker). Every request runs its
reads in one ``reader()`` connection and its writes in one ``writer()``
transaction: a multi-row write either commits whole or changes nothing.

Deadlocks, serialization failures and SQLite's "database is locked" are
transient under concurrent writers; ``retry_on_deadlock`` replays the whole
transaction a bounded number of times (each attempt a fresh transaction,
so it sees the other writer's commit).
"""
import contextlib
import datetime
import functools
import logging
import random
import time

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

LOG = logging.getLogger(__name__)

# Database error texts that mean "another writer got in the way, try again".
_TRANSIENT = (
    'deadlock',                     # MySQL/MariaDB 1213, PostgreSQL 40P01
    'could not serialize access',   # PostgreSQL 40001
    'lock wait timeout',            # MySQL/MariaDB 1205
    'database is locked',           # SQLite
    'try restarting transaction',
)


def utcnow():
    """Naive UTC, as stored in every created_at/updated_at column."""
    return datetime.datetime.now(datetime.timezone.utc).replace(
        tzinfo=None, microsecond=0)


def is_transient(error):
    text = str(getattr(error, 'orig', error)).lower()
    return any(t in text for t in _TRANSIENT)


def retry_on_deadlock(fn=None, *, attempts=10):
    """Replay ``fn`` when the database reports a transient conflict."""
    if fn is None:
        return functools.partial(retry_on_deadlock, attempts=attempts)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for attempt in range(1, attempts + 1):
            try:
                return fn(*args, **kwargs)
            except sa_exc.DBAPIError as e:
                if attempt == attempts or not is_transient(e):
                    raise
                LOG.debug('transient database error, retry %d: %s', attempt, e)
                time.sleep(random.uniform(0, 0.01 * attempt))
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


def create_engine(url, **kwargs):
    url = sa.engine.make_url(url)
    if url.get_backend_name() == 'sqlite':
        engine = sa.create_engine(url, **kwargs)
        # pysqlite's own transaction handling is replaced by explicit BEGINs.
        event.listen(engine, 'connect', _sqlite_pragmas)

        @event.listens_for(engine, 'connect')
        def _no_autobegin(dbapi_conn, _record):
            dbapi_conn.isolation_level = None

        event.listen(engine, 'begin', _sqlite_begin)
        return engine
    if url.get_backend_name() == 'mysql':
        if not url.drivername.startswith('mysql+'):
            url = url.set(drivername='mysql+pymysql')
        url = url.update_query_dict({'charset': 'utf8mb4'})
        kwargs.setdefault('isolation_level', 'READ COMMITTED')
    if url.get_backend_name() == 'postgresql':
        if url.drivername == 'postgresql':
            # SQLAlchemy 2.1 would pick psycopg 3; psycopg2 is what we ship.
            url = url.set(drivername='postgresql+psycopg2')
        kwargs.setdefault('isolation_level', 'READ COMMITTED')
    kwargs.setdefault('pool_pre_ping', True)
    kwargs.setdefault('pool_recycle', 3600)
    return sa.create_engine(url, **kwargs)


class Database:
    """A process's handle on the placement database."""

    def __init__(self, url, **engine_kwargs):
        self.url = str(url)
        self.engine = create_engine(url, **engine_kwargs)
        self.dialect = self.engine.dialect.name

    @contextlib.contextmanager
    def reader(self):
        """A connection for reads; nothing it does is committed."""
        with self.engine.connect() as conn:
            yield conn
            if conn.in_transaction():
                conn.rollback()

    @contextlib.contextmanager
    def writer(self):
        """One transaction: commits when the block ends, rolls back on error."""
        with self.engine.connect() as conn:
            conn.info['writer'] = True
            try:
                with conn.begin():
                    yield conn
            finally:
                conn.info.pop('writer', None)

    def dispose(self):
        self.engine.dispose()
