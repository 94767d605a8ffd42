"""The tables the resource view reads, and how it reads ids and rows.

The view sends lists of provider ids (thousands after a busy second) and
reads back plain tuples (tens of thousands when it loads); it does both
the ways written here.
"""
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any
from typing import Unpack

import sqlalchemy as sa

from placement_server.db import tables

RP = tables.resource_providers
INV = tables.inventories
ALLOC = tables.allocations
RPT = tables.resource_provider_traits
RPA = tables.resource_provider_aggregates

Column = sa.ColumnElement[Any]
# A SELECT of any columns
Select = sa.Select[Unpack[tuple[Any, ...]]]
Condition = sa.ColumnElement[bool]
# A condition on a provider id column: ``holds(column)`` (see ByIds).
Holds = Callable[[Column], Condition]

# Ids per IN list, to keep statements a sensible size.
CHUNK = 5000


def chunks(ids: Iterable[int]) -> Iterator[list[int]]:
    ordered = sorted(ids)
    for i in range(0, len(ordered), CHUNK):
        yield ordered[i:i + CHUNK]


def fetch_all(conn: sa.Connection, stmt: sa.Executable) -> Sequence[Any]:
    """The rows of ``stmt`` as plain tuples, read from the DBAPI cursor:
    for the view's load (hundreds of thousands of rows at 100000 providers)
    SQLAlchemy's result rows cost several times the database's work."""
    result = conn.execute(stmt)
    try:
        rows: Sequence[Any] = result.cursor.fetchall()
        return rows
    finally:
        result.close()


class ByIds:
    """A statement over one list of provider ids, compiled once per dialect.

    ``build(holds)`` makes the statement, with ``holds(column)`` wherever it
    filters a provider column by the ids. The ids (integers read from the
    database) are written into the SQL text when it runs: compiling a
    statement per id list, or binding thousands of parameters, costs more
    than the query.
    """
    _MARK = '__provider_ids__'
    # PostgreSQL estimates each element of an IN list on its own when it
    # plans (2 ms per 1000 ids); the elements of one array, unnested, it
    # counts and hashes.
    _LIST = {'postgresql': "SELECT unnest('{%s}'::integer[])"}

    def __init__(self, build: Callable[[Holds], sa.ClauseElement]) -> None:
        self._build = build
        self._sql: dict[str, str] = {}

    def rows(self, conn: sa.Connection, ids: Iterable[int]) -> list[Any]:
        sql = self._sql.get(conn.dialect.name)
        if sql is None:
            stmt = self._build(
                lambda column: column.op('IN')(sa.literal_column('(%s)' % self._MARK)))
            sql = str(stmt.compile(dialect=conn.dialect,
                                   compile_kwargs={'literal_binds': True}))
            # Run without parameters, so no driver reads '%' as one.
            assert '%' not in sql, sql
            self._sql[conn.dialect.name] = sql
        id_list = self._LIST.get(conn.dialect.name, '%s')
        rows: list[Any] = []
        for chunk in chunks(ids):
            result = conn.exec_driver_sql(
                sql.replace(self._MARK, id_list % ','.join(map(str, chunk))))
            try:
                rows += result.cursor.fetchall()
            finally:
                result.close()
        return rows
