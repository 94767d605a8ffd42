"""The hooks of SQLAlchemy, oslo.db, gunicorn and requests the server relies
on are still there, called as we call them: a new release that renames a
method, moves an argument or changes an event's arguments fails here,
naming the hook, before it fails a request (setup.cfg bounds their
versions until this passes on the next one)."""
import inspect
import io

from gunicorn.http import errors as http_errors
from gunicorn.workers import gthread
from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import exc_filters
import pytest
import requests
import requests.adapters
import sqlalchemy as sa
from sqlalchemy import events
from sqlalchemy.engine import interfaces
from sqlalchemy.pool import PoolResetState

from placement_server import direct
from placement_server.cmd import gunicorn_worker
from placement_server.db import dialects


def _parameters(fn):
    """(name, kind, default) of each parameter: what a caller relies on."""
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def _names(fn):
    return [p.name for p in inspect.signature(fn).parameters.values()]


# Our dialects' overrides: each is called by SQLAlchemy as its base's is.
OVERRIDES = [(cls, name) for cls in (dialects.PostgreSQL, dialects.MySQL, dialects.SQLite)
             for name in vars(cls) if name.startswith('do_') or name == 'connect'
             ] + [(cls, name) for cls in (dialects.PostgreSQL, dialects.MySQL, dialects.SQLite)
                  for name in ('do_commit', 'do_savepoint')]


@pytest.mark.parametrize('cls, name', OVERRIDES, ids=lambda v: getattr(v, '__name__', v))
def test_each_overridden_dialect_method_has_its_base_methods_signature(cls, name):
    base = cls.__mro__[cls.__mro__.index(cls) + 1:]
    sqlalchemy_base = next(b for b in base if b.__module__.startswith('sqlalchemy.')
                           and name in vars(b))
    ours = getattr(cls, name)
    theirs = getattr(sqlalchemy_base, name)
    assert _names(ours) == _names(theirs), (cls.__name__, name)


def test_the_dialect_interface_still_declares_what_we_override():
    for name in ('do_execute', 'do_execute_no_params', 'do_executemany', 'do_commit',
                 'do_savepoint', 'connect', 'do_ping', 'is_disconnect'):
        assert callable(getattr(interfaces.Dialect, name)), name
    assert _names(interfaces.Dialect.do_execute) == [
        'self', 'cursor', 'statement', 'parameters', 'context']
    assert _names(interfaces.Dialect.do_execute_no_params) == [
        'self', 'cursor', 'statement', 'context']
    assert _names(interfaces.Dialect.do_commit) == ['self', 'dbapi_connection']
    assert _names(interfaces.Dialect.do_savepoint) == ['self', 'connection', 'name']


def test_our_dialects_are_found_by_their_url_names():
    for ours, cls in zip(dialects.DRIVERS.values(),
                         (dialects.PostgreSQL, dialects.MySQL, dialects.SQLite)):
        assert sa.engine.make_url(ours + '://').get_dialect() is cls
        assert cls.supports_statement_cache


def test_the_execution_context_and_the_pools_proxy_give_what_the_dialects_read():
    # the writer's Write rides on the execution options; do_commit is
    # handed the pool's proxy, whose info is the Connection's
    engine = sa.create_engine('sqlite+placement_pysqlite://')
    with engine.connect() as conn:
        conn.execution_options(mine=2)
        assert conn.exec_driver_sql('SELECT 1').context.execution_options['mine'] == 2
        assert isinstance(conn.connection, sa.PoolProxiedConnection)
        assert conn.connection.info is conn.info
    engine.dispose()


def test_the_pool_events_still_pass_what_our_listeners_take():
    assert _names(events.PoolEvents.connect) == [
        'self', 'dbapi_connection', 'connection_record']
    assert _names(events.PoolEvents.checkout) == [
        'self', 'dbapi_connection', 'connection_record', 'connection_proxy']
    assert _names(events.PoolEvents.checkin) == ['self', 'dbapi_connection', 'connection_record']
    assert _names(events.PoolEvents.reset) == [
        'self', 'dbapi_connection', 'connection_record', 'reset_state']
    assert {'transaction_was_reset', 'asyncio_safe'} <= set(
        inspect.signature(PoolResetState).parameters)
    # SQLite's BEGIN (api._sqlite_begin), connection_trace, the filters
    assert _names(events.ConnectionEvents.begin) == ['self', 'conn']
    assert _names(events.ConnectionEvents.before_cursor_execute) == [
        'self', 'conn', 'cursor', 'statement', 'parameters', 'context', 'executemany']
    assert _names(events.DialectEvents.handle_error) == ['self', 'exception_context']


def test_oslo_db_gives_what_we_call():
    assert _names(exc_filters.handler) == ['context']
    assert {'max_retries', 'retry_interval', 'inc_retry_interval', 'max_retry_interval',
            'retry_on_deadlock', 'exception_checker'} <= set(
                inspect.signature(oslo_db_api.wrap_db_retry).parameters)
    for name in ('DBDeadlock', 'DBConnectionError', 'DBDuplicateEntry', 'DBReferenceError',
                 'DBConstraintError', 'DBError'):
        assert issubclass(getattr(db_exc, name), Exception), name


def test_gunicorns_worker_hook_and_errors_are_still_there():
    assert issubclass(gunicorn_worker.Worker, gthread.ThreadWorker)
    assert _names(gthread.ThreadWorker.handle_error) == ['self', 'req', 'client', 'addr', 'exc']
    assert _names(gunicorn_worker.Worker.handle_error) == _names(
        gthread.ThreadWorker.handle_error)
    for cls in gunicorn_worker._NOT_400:
        assert issubclass(cls, Exception)
    assert issubclass(http_errors.InvalidHeader, http_errors.ParseException)
    # The worker reads requests in the event loop: the gthread methods it
    # takes over or calls, and what it hands a thread through.
    for name, params in [('accept', ['self', 'listener']),
                         ('on_client_socket_readable', ['self', 'conn', 'client']),
                         ('murder_pending', ['self']), ('enqueue_req', ['self', 'conn']),
                         ('handle', ['self', 'conn']),
                         ('handle_request', ['self', 'req', 'conn']),
                         ('finish_request', ['self', 'conn', 'fs'])]:
        assert _names(getattr(gthread.ThreadWorker, name)) == params, name
        if name in vars(gunicorn_worker.Worker):
            assert _names(getattr(gunicorn_worker.Worker, name)) == params, name
    assert _names(gthread.TConn) == ['cfg', 'sock', 'client', 'server']
    assert _names(gthread.TConn.init) == ['self']
    from gunicorn.http import unreader
    assert _names(unreader.Unreader.unread) == ['self', 'data']
    assert _names(unreader.Unreader.take_buffered) == ['self']


def test_requests_transport_hook_and_a_body_read_from_raw():
    assert _names(direct.WSGITransport.send) == _names(requests.adapters.BaseAdapter.send)
    resp = requests.Response()
    resp.raw = io.BytesIO(b'{"a": 1}')
    assert resp.content == b'{"a": 1}' and resp.json() == {'a': 1}
    assert resp.content == b'{"a": 1}'   # read once, kept
