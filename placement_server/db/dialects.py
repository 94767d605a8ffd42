"""The engines' dialects: where a write's queued SQL meets the wire.

Subclasses of SQLAlchemy's own dialects (overriding ``do_execute`` and
its siblings is SQLAlchemy's extension point for how a statement is
sent), registered under names of our own (``DRIVERS``): ``api.create_engine``
asks for them in the URL, so the choice is made once, when the engine is
made. Each reads the connection's ``write.Write`` (an execution option
of the writer's connection; a reader has none) and:

- PostgreSQL (psycopg2): sends the write's BEGIN and queued statements in
  front of its next statement, and a statement marked ``prepared`` as a
  prepared statement (``placement_server.db.prepared``);
- MySQL/MariaDB (PyMySQL, its connections allowing several statements a
  round trip): sends the queued statements with the change record
  (``changes.RECORD``: it ends with COMMIT, which spares the
  transaction's own) or with a read marked ``RIDES_PENDING``, else in a
  round trip of their own before the next statement;
- all three (SQLite too) refuse what ``write.Write`` refuses.

An engine event would cost every statement an event dispatch; a method of
the dialect costs nothing more than the call it replaces.
"""
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.mysql import pymysql as sa_pymysql
from sqlalchemy.dialects.postgresql import psycopg2 as sa_psycopg2
from sqlalchemy.dialects.sqlite import pysqlite as sa_pysqlite
from sqlalchemy.engine import interfaces

from placement_server.db import prepared as prepared_mod
from placement_server.db import write as write_mod

# Execution option of a MySQL read that may carry the pending statements
# before it in its round trip (its answer is read last).
RIDES_PENDING = 'placement_rides_pending'
# Execution option of the change record whose statements end with COMMIT
# (MySQL: all of them are read here).
RECORD = 'placement_record'

Context = interfaces.ExecutionContext | None


def _write(context: Context) -> write_mod.Write | None:
    # (from the statement's execution options, where the writer puts it
    # too: a dict lookup, and there before the connection has an info)
    if context is None:
        return None
    write: write_mod.Write | None = context.execution_options.get(write_mod.KEY)
    return write


def _checked(context: Context, statement: str) -> write_mod.Write | None:
    write = _write(context)
    if write is not None:
        write.check_statement(statement)
    return write


class _Refusing:
    """What every one of our dialects refuses inside a writer: a commit
    of a write path's own, a savepoint after queued statements."""

    def do_commit(self, dbapi_connection: Any) -> None:
        # (SQLAlchemy hands over the pool's proxy, whose info is conn.info)
        write = dbapi_connection.info.get(write_mod.KEY)
        if write is not None:
            try:
                write.check_commit()
            except write_mod.RuleBroken:
                # The write is refused whole: SQLAlchemy, its commit
                # failed, would not roll it back.
                dbapi_connection.rollback()
                raise
            if write.committed:   # the record's round trip ended with COMMIT
                write.committed = False
                return
        super().do_commit(dbapi_connection)  # type: ignore[misc]

    def do_savepoint(self, connection: sa.Connection, name: str) -> None:
        write = connection.info.get(write_mod.KEY)
        if write is not None:
            write.check_savepoint()
        super().do_savepoint(connection, name)  # type: ignore[misc]


class PostgreSQL(_Refusing, sa_psycopg2.PGDialect_psycopg2):
    """psycopg2, the write's BEGIN and queued statements sent in front of
    its next statement (the writer's connection is in autocommit)."""

    supports_statement_cache = True   # (each subclass says so itself)

    def do_execute(self, cursor: Any, statement: str, parameters: Any,
                   context: Context = None) -> None:
        write = _checked(context, statement)
        # (a queued statement holds no %: see api.insert_later)
        prefix = write.take_pending() if write is not None and write.has_pending else ''
        options = context.execution_options if context is not None else {}
        if not options.get(prepared_mod.PREPARE):
            super().do_execute(cursor, prefix + statement, parameters, context)
            return
        assert context is not None
        info = context.root_connection.info
        text, new_name = prepared_mod.as_prepared(info, statement)
        try:
            super().do_execute(cursor, prefix + text + options.get(prepared_mod.THEN, ''),
                               parameters, context)
        except self.loaded_dbapi.Error as e:
            prepared_mod.failed(info, e)
            raise
        if new_name is not None:
            prepared_mod.ran(info, statement, new_name)

    def do_execute_no_params(self, cursor: Any, statement: str,
                             context: Context = None) -> None:
        write = _checked(context, statement)
        prefix = write.take_pending() if write is not None and write.has_pending else ''
        super().do_execute_no_params(cursor, prefix + statement, context)

    def do_executemany(self, cursor: Any, statement: str, parameters: Any,
                       context: Context = None) -> None:
        write = _write(context)
        if write is not None and write.has_pending:
            cursor.execute(write.take_pending())
        super().do_executemany(cursor, statement, parameters, context)


class MySQL(_Refusing, sa_pymysql.MySQLDialect_pymysql):
    """PyMySQL, several statements a round trip: queued statements go with
    the change record or a read that takes them, else alone first."""

    supports_statement_cache = True   # (each subclass says so itself)

    def connect(self, *cargs: Any, **cparams: Any) -> Any:
        # Only the writer sends several, all of them ours (no client value
        # is ever part of a statement's text: they are bound or quoted).
        from pymysql.constants import CLIENT  # (PyMySQL is the mysql extra's)
        cparams['client_flag'] = cparams.get('client_flag', 0) | CLIENT.MULTI_STATEMENTS
        return super().connect(*cargs, **cparams)

    def _send_alone(self, cursor: Any, statements: str) -> None:
        super().do_execute_no_params(cursor, statements, None)
        while cursor.nextset():
            pass

    def do_execute(self, cursor: Any, statement: str, parameters: Any,
                   context: Context = None) -> None:
        write = _checked(context, statement)
        if write is None or not write.queued:
            super().do_execute(cursor, statement, parameters, context)
            return
        prefix = write.take_pending()
        if '%' not in prefix and context is not None and (
                context.execution_options.get(RIDES_PENDING)):
            # The statements before it, then it: its answer is the last.
            super().do_execute(cursor, prefix + statement, parameters, context)
            while cursor.nextset():
                pass
            return
        self._send_alone(cursor, prefix)
        super().do_execute(cursor, statement, parameters, context)

    def do_execute_no_params(self, cursor: Any, statement: str,
                             context: Context = None) -> None:
        write = _checked(context, statement)
        record = write is not None and context is not None and bool(
            context.execution_options.get(RECORD))
        prefix = ''
        if write is not None and write.queued:
            prefix = write.take_pending()
            if not record:
                self._send_alone(cursor, prefix)
                prefix = ''
        super().do_execute_no_params(cursor, prefix + statement, context)
        if record:
            # The record's later statements are read here, so their
            # errors surface as the statement's own (oslo.db's filters
            # name them); its COMMIT spares the transaction's own.
            while cursor.nextset():
                pass
            assert write is not None
            write.committed = True


class SQLite(_Refusing, sa_pysqlite.SQLiteDialect_pysqlite):
    """pysqlite as it is, refusing what a writer refuses."""

    supports_statement_cache = True   # (each subclass says so itself)

    def do_execute(self, cursor: Any, statement: str, parameters: Any,
                   context: Context = None) -> None:
        _checked(context, statement)
        super().do_execute(cursor, statement, parameters, context)

    def do_execute_no_params(self, cursor: Any, statement: str,
                             context: Context = None) -> None:
        _checked(context, statement)
        super().do_execute_no_params(cursor, statement, context)


# URL driver names: {SQLAlchemy's: ours}.
DRIVERS = {
    'postgresql+psycopg2': 'postgresql+placement_psycopg2',
    'mysql+pymysql': 'mysql+placement_pymysql',
    'sqlite+pysqlite': 'sqlite+placement_pysqlite',
}
for _ours, _cls in zip(DRIVERS.values(), (PostgreSQL, MySQL, SQLite)):
    registry.register(_ours.replace('+', '.'), __name__, _cls.__name__)
