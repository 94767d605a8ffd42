"""Statements PostgreSQL plans once per connection.

Planning the small statements every write sends (the generation check,
the read of what a replace compares against, the change record) costs
the database more than running them. Marked with ``prepared``, such a
statement is sent the first time on a connection as ``PREPARE name AS
...; EXECUTE name(...)`` and from then on as ``EXECUTE name(...)``
(psycopg2 has no prepared statements of its own; the engine's dialect,
``dialects.PostgreSQL``, does the sending).

Prepared statements live as long as their connection, outside any
transaction (a rollback keeps them): which ones a connection holds is
noted in its ``info``, which the pool empties when it reconnects. Other
engines run the statement as it is.
"""
from collections.abc import Iterable
from collections.abc import MutableMapping
import re
from typing import Any
from typing import TypeVar

import sqlalchemy as sa

# Execution options: plan once; statements (without parameters) to send
# after it in the same round trip.
PREPARE = 'placement_prepare'
THEN = 'placement_then'
# conn.info keys: {statement: name} of those prepared on the connection,
# and how many names it has used.
_NAMES = 'prepared_statements'
_USED = 'prepared_names_used'
# At most this many per connection; past it statements run as they come
# (the hot ones are prepared long before).
MAX_PER_CONNECTION = 64
_PLACEHOLDER = re.compile(r'%\((\w+)\)s')
# statement -> (its text with $1..$n, its EXECUTE arguments)
_SHAPES: dict[str, tuple[str, str]] = {}
_FEATURE_NOT_SUPPORTED = '0A000'    # e.g. a plan whose table has changed


Executable = TypeVar('Executable', bound=sa.sql.base.Executable)
# A connection's info (``sa.Connection.info``).
Info = MutableMapping[Any, Any]


def prepared(statement: Executable, then: Iterable[str] = ()) -> Executable:
    """``statement`` to be planned once per connection on PostgreSQL, and
    ``then`` (statements without parameters) sent after it in the same
    round trip. Only PostgreSQL's writes send ``then``."""
    options: dict[str, Any] = {PREPARE: True}
    if then:
        options[THEN] = ';' + ';'.join(then)
    return statement.execution_options(**options)


def _shape(statement: str) -> tuple[str, str]:
    shape = _SHAPES.get(statement)
    if shape is None:
        order: list[str] = []

        def number(match: re.Match[str]) -> str:
            if match.group(1) not in order:
                order.append(match.group(1))
            return '$%d' % (order.index(match.group(1)) + 1)
        body = _PLACEHOLDER.sub(number, statement)
        arguments = '(%s)' % ','.join('%%(%s)s' % n for n in order) if order else ''
        shape = _SHAPES[statement] = (body, arguments)
    return shape


def as_prepared(info: Info, statement: str) -> tuple[str, str | None]:
    """The text (pyformat, as psycopg2 takes it) that runs ``statement``
    prepared on the connection whose ``info`` this is, and the name to
    note with ``ran`` once it ran (None: nothing to note)."""
    names = info.get(_NAMES)
    if names is None:
        names = info[_NAMES] = {}
    body, arguments = _shape(statement)
    name = names.get(statement)
    if name is not None:
        return 'EXECUTE %s%s' % (name, arguments), None
    if len(names) >= MAX_PER_CONNECTION:
        return statement, None
    # Never a name used before on this connection: a PREPARE sent in a
    # round trip that failed may or may not have run.
    used = info[_USED] = info.get(_USED, 0) + 1
    name = 'placement_%d' % used
    return 'PREPARE %s AS %s;EXECUTE %s%s' % (name, body, name, arguments), name


def ran(info: Info, statement: str, name: str) -> None:
    info[_NAMES][statement] = name


def failed(info: Info, error: BaseException) -> None:
    if getattr(error, 'pgcode', None) == _FEATURE_NOT_SUPPORTED:
        # A plan no longer fits its tables (a schema upgrade ran under this
        # server): plan every statement again.
        info.pop(_NAMES, None)
