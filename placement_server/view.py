"""The resource view each worker keeps: providers as lists and candidates read them.

Everything GET /resource_providers and GET /allocation_candidates read --
providers and their trees, inventories, usage, traits, aggregates, the
names of classes and traits -- is held in memory, one view per database
and process, and brought up to date at the start of every request from
the change sequence
(``placement_server.db.changes``): one indexed statement when nothing
changed, plus one statement reloading just the providers that did. A
write that committed before a request began is in that request's answer,
as it was when every request ran its own SQL. An idle worker brings it
up to date after a write before the next request comes
(``placement_server.catch_up``).

The view only proposes: a claim still commits under the providers'
generation check against the database, the only truth.

``candidates.search`` and ``candidates.summaries`` answer from it.
"""
import collections
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
import datetime
import threading
from typing import Any
from typing import NamedTuple
from typing import Unpack
import weakref

import os_traits
import sqlalchemy as sa

from placement_server.db import api
from placement_server.db import changes
from placement_server.db import inventories
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
    # counts and hashes -- by scanning every table whole, which for the
    # handful of providers a claim changed costs ten times the index
    # lookups an IN list gets.
    _LIST = {'postgresql': "SELECT unnest('{%s}'::integer[])"}
    _SHORT = 100

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
        rows: list[Any] = []
        for chunk in chunks(ids):
            id_list = (self._LIST.get(conn.dialect.name, '%s') if len(chunk) > self._SHORT
                       else '%s')
            result = conn.exec_driver_sql(
                sql.replace(self._MARK, id_list % ','.join(map(str, chunk))))
            try:
                rows += result.cursor.fetchall()
            finally:
                result.close()
        return rows


class Row(NamedTuple):
    """A provider as the view holds it."""
    id: int
    uuid: str
    parent: int | None
    root: int
    generation: int


class Inv(NamedTuple):
    """An inventory as the search checks it."""
    capacity: float     # (total - reserved) * allocation_ratio
    min_unit: int
    max_unit: int
    step_size: int


def _rows(holds: Holds) -> sa.CompoundSelect[Any]:
    """Everything the view holds of the providers ``holds(column)`` selects,
    as rows (kind, provider, i1, i2, i3, i4, i5, i6, ratio, text, name,
    created, updated): 'p' (parent, root, generation; uuid; name, created,
    updated), 'i' (class, total, reserved, min_unit, max_unit, step_size;
    allocation ratio), 'u' (class, used), 't' (trait), 'a' (aggregate;
    its uuid)."""
    null = sa.null()

    def kind(name: str) -> sa.Label[str]:
        return sa.literal(name).label('kind')
    agg = tables.placement_aggregates
    return sa.union_all(
        sa.select(kind('p'), RP.c.id.label('rp'), RP.c.parent_provider_id.label('i1'),
                  RP.c.root_provider_id.label('i2'), RP.c.generation.label('i3'),
                  null.label('i4'), null.label('i5'), null.label('i6'),
                  null.label('ratio'), RP.c.uuid.label('text'), RP.c.name.label('name'),
                  RP.c.created_at.label('created'), RP.c.updated_at.label('updated'))
        .where(holds(RP.c.id)),
        sa.select(kind('i'), INV.c.resource_provider_id, INV.c.resource_class_id, INV.c.total,
                  INV.c.reserved, INV.c.min_unit, INV.c.max_unit, INV.c.step_size,
                  INV.c.allocation_ratio, null, null, null, null)
        .where(holds(INV.c.resource_provider_id)),
        sa.select(kind('u'), ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id,
                  sa.cast(sa.func.sum(ALLOC.c.used), sa.BigInteger), null, null, null, null,
                  null, null, null, null, null)
        .where(holds(ALLOC.c.resource_provider_id))
        .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id),
        sa.select(kind('t'), RPT.c.resource_provider_id, RPT.c.trait_id, null, null, null,
                  null, null, null, null, null, null, null)
        .where(holds(RPT.c.resource_provider_id)),
        sa.select(kind('a'), RPA.c.resource_provider_id, RPA.c.aggregate_id, null, null,
                  null, null, null, null, agg.c.uuid, null, null, null)
        .join(agg, agg.c.id == RPA.c.aggregate_id)
        .where(holds(RPA.c.resource_provider_id)))


_OF_PROVIDERS = ByIds(_rows)
# The whole view is loaded this many provider ids at a time: what is read
# in one go is held twice for a moment (driver rows, then the view's own).
LOAD_CHUNK = 10000
_ID_RANGE = _rows(lambda column: column.between(sa.bindparam('low'), sa.bindparam('high')))
_TOP_ID = sa.select(sa.func.max(RP.c.id))
_NAMES = sa.union_all(
    sa.select(sa.literal('c').label('kind'), tables.resource_classes.c.id,
              tables.resource_classes.c.name),
    sa.select(sa.literal('t'), tables.traits.c.id, tables.traits.c.name))


class ResourceView:
    """One database's providers as lists and candidates see them, in memory."""

    # Refreshes whose changed trees are remembered (``trees_changed_since``)
    HISTORY = 256

    def __init__(self, folds_case: bool = False) -> None:
        # Whether uuids are compared ignoring case, as the database does
        # (``db.api.folds_case``); stored ones are lower case.
        self.folds_case = folds_case
        self.lock = threading.Lock()
        self.position: changes.Position | None = None
        # Read since the last catch-up while idle (``catch_up``)
        self.read = False
        # Counts the refreshes that changed something; with the roots of
        # the trees each changed, for what is kept per tree (``answers``).
        self.version = 0
        self._changed_trees: collections.deque[tuple[int, set[int]]] = collections.deque(
            maxlen=self.HISTORY)
        # Whatever answers a reader keeps per tree, dropped whenever the
        # view is loaded whole or names change (candidates' use it).
        self.answers: dict[Any, Any] = {}
        # Whole answers kept while nothing changes (``kept``).
        self._kept: dict[Any, tuple[int, Any, int]] = {}
        self._clear()

    def provider_of(self, uuid: str) -> int | None:
        """The provider a client's ``uuid`` names, as the database would
        find it (an upper-case uuid only on MariaDB), or None."""
        return self.by_uuid.get(uuid.lower() if self.folds_case else uuid)

    def _clear(self) -> None:
        self.rows: dict[int, Row] = {}
        # {provider: (name, created_at, updated_at)}, for lists
        self.details: dict[int, tuple[str, Any, Any]] = {}
        self.by_uuid: dict[str, int] = {}
        self.members: dict[int, set[int]] = {}        # {root: providers of the tree}
        self.children = 0                              # providers with a parent
        self.inventories: dict[int, dict[int, Inv]] = {}   # {class: {provider: Inv}}
        self.classes_of: dict[int, frozenset[int]] = {}   # {provider: classes in inventory}
        self.used: dict[int, dict[int, int]] = {}     # {class: {provider: used}}
        self.used_of: dict[int, frozenset[int]] = {}  # {provider: classes used}
        # One object for each distinct inventory, set of classes, traits or
        # aggregates: most of a cloud's providers are alike, and memory per
        # provider is what a worker pays 100000 times.
        self._shared: dict[Any, Any] = {}
        self.traits: dict[int, frozenset[int]] = {}
        self.aggregates: dict[int, frozenset[int]] = {}
        self.in_aggregate: dict[int, set[int]] = {}   # {aggregate: providers}
        self.aggregate_ids: dict[str, int] = {}
        self.sharing: set[int] = set()
        self.class_ids: dict[str, int] = {}
        self.class_names: dict[int, str] = {}
        self.trait_ids: dict[str, int] = {}
        self.trait_names: dict[int, str] = {}
        # {shape: {provider: its summary's JSON text}} (see summaries.py)
        self.summaries: dict[Any, dict[int, str]] = {}

    # -- keeping up ---------------------------------------------------------

    def refresh(self, conn: sa.Connection) -> None:
        """Bring the view up to what ``conn`` sees committed."""
        self.read = True
        if self.position is not None:
            found = changes.since(conn, self.position)
            if found is not None:
                position, changed = found
                if changes.NAMES in changed:
                    self._load_names(conn)
                    changed.discard(changes.NAMES)
                if changed:
                    self._reload(conn, changed)
                self.position = position
                return
        # Where the sequence stands first: whatever is read after it is at
        # least that new, and what changes meanwhile comes again next time.
        position = changes.position(conn)
        self._clear()
        self._load_names(conn)
        top = conn.execute(_TOP_ID).scalar() or 0
        for low in range(0, top + 1, LOAD_CHUNK):
            # Providers created after ``top`` was read come with the changes.
            self._add(fetch_all(conn, _ID_RANGE.params(low=low, high=low + LOAD_CHUNK - 1)))
        self.position = position
        self._changed_trees.clear()
        self.version += 1

    def _load_names(self, conn: sa.Connection) -> None:
        classes: dict[str, int] = {}
        traits: dict[str, int] = {}
        for kind, id_, name in conn.execute(_NAMES):
            (classes if kind == 'c' else traits)[name] = id_
        self.class_ids, self.trait_ids = classes, traits
        self.class_names = {v: k for k, v in classes.items()}
        self.trait_names = {v: k for k, v in traits.items()}
        self.summaries.clear()   # class and trait names show in them
        self.answers.clear()
        self._kept.clear()
        sharing_trait = traits.get(os_traits.MISC_SHARES_VIA_AGGREGATE)
        self.sharing = {rp for rp, ts in self.traits.items() if sharing_trait in ts}

    # Whole answers kept: at most this many, of at most this many bytes in
    # all (a list of 1000 providers is about 770 KB).
    KEPT_ANSWERS = 8
    KEPT_BYTES = 8 * 2 ** 20

    def kept(self, key: Any, compute: Callable[[], tuple[bytes, Any]]) -> tuple[bytes, Any]:
        """``compute()``'s answer (its body, and what goes with it) to the
        request named ``key``, kept while the view stays as it is: any
        change to a provider, or to the names of classes and traits,
        makes the next request compute it again."""
        entry = self._kept.pop(key, None)
        answer: tuple[bytes, Any]
        if entry is not None and entry[0] == self.version:
            answer = entry[1]
        else:
            answer = compute()
        size = len(answer[0])
        if size <= self.KEPT_BYTES:
            kept = self._kept
            kept[key] = (self.version, answer, size)   # the most recent last
            while (len(kept) > self.KEPT_ANSWERS
                   or sum(entry[2] for entry in kept.values()) > self.KEPT_BYTES):
                del kept[next(iter(kept))]
        return answer

    def last_modified(self, providers: Iterable[int]) -> datetime.datetime | None:
        """The newest creation or update time of these providers."""
        details = self.details
        newest = max((details[rp][2] or details[rp][1] for rp in providers), default=None)
        if isinstance(newest, str):   # SQLite's text, which sorts as it compares
            newest = datetime.datetime.fromisoformat(newest)
        return newest

    def _reload(self, conn: sa.Connection, ids: Collection[int]) -> None:
        trees = {self.rows[rp].root for rp in ids if rp in self.rows}
        for rp in ids:
            self._forget(rp)
        self._add(_OF_PROVIDERS.rows(conn, ids))
        trees.update(self.rows[rp].root for rp in ids if rp in self.rows)
        self.version += 1
        self._changed_trees.append((self.version, trees))

    def trees_changed_since(self, version: int) -> set[int] | None:
        """Roots of the trees changed after ``version`` (before a move,
        and after), or None when that is further back than remembered."""
        if version == self.version:
            return set()
        if not self._changed_trees or self._changed_trees[0][0] > version + 1:
            return None
        return set().union(*(trees for v, trees in self._changed_trees if v > version))

    def subset(self, roots: Collection[int]) -> 'ResourceView':
        """The view of just these trees (sharing the names): what searches
        of the providers in them see. Nothing in it is kept up to date."""
        part = ResourceView.__new__(ResourceView)
        part._clear()
        members = {root: self.members[root] for root in roots if root in self.members}
        providers = set().union(*members.values()) if members else set()
        part.members = members
        part.rows = {rp: self.rows[rp] for rp in providers}
        part.details = {rp: self.details[rp] for rp in providers}
        part.children = self.children    # the deployment's shape, not the part's
        for rp in providers:
            for rc in self.classes_of.get(rp, ()):
                part.inventories.setdefault(rc, {})[rp] = self.inventories[rc][rp]
            if rp in self.classes_of:
                part.classes_of[rp] = self.classes_of[rp]
            for rc in self.used_of.get(rp, ()):
                part.used.setdefault(rc, {})[rp] = self.used[rc][rp]
            if rp in self.used_of:
                part.used_of[rp] = self.used_of[rp]
            if rp in self.traits:
                part.traits[rp] = self.traits[rp]
            if rp in self.aggregates:
                part.aggregates[rp] = self.aggregates[rp]
        part.aggregate_ids, part.sharing = self.aggregate_ids, self.sharing
        part.class_ids, part.class_names = self.class_ids, self.class_names
        part.trait_ids, part.trait_names = self.trait_ids, self.trait_names
        return part

    def _forget(self, rp: int) -> None:
        row = self.rows.pop(rp, None)
        self.details.pop(rp, None)
        if row is not None:
            del self.by_uuid[row.uuid]
            tree = self.members.get(row.root)
            if tree is not None:
                tree.discard(rp)
                if not tree:
                    del self.members[row.root]
            if row.parent is not None:
                self.children -= 1
        for rc in self.classes_of.pop(rp, ()):
            del self.inventories[rc][rp]
        for rc in self.used_of.pop(rp, ()):
            del self.used[rc][rp]
        self.traits.pop(rp, None)
        for agg in self.aggregates.pop(rp, ()):
            self.in_aggregate[agg].discard(rp)
        self.sharing.discard(rp)
        for texts in self.summaries.values():
            texts.pop(rp, None)

    def _add(self, rows: Iterable[Any]) -> None:
        if len(self._shared) > 100000 + 4 * len(self.rows):
            self._shared.clear()   # left over from values changed since: start again
        shared = self._shared.setdefault
        classes: dict[int, set[int]] = {}
        used: dict[int, set[int]] = {}
        traits: dict[int, set[int]] = {}
        aggregates: dict[int, set[int]] = {}
        for kind, rp, i1, i2, i3, i4, i5, i6, ratio, text, name, created, updated in rows:
            if kind == 'p':
                self.rows[rp] = Row(rp, text, i1, i2, i3)
                self.details[rp] = (name, created, updated)
                self.by_uuid[text] = rp
                self.members.setdefault(i2, set()).add(rp)
                if i1 is not None:
                    self.children += 1
            elif kind == 'i':
                inv = Inv((i2 - i3) * inventories.usable_ratio(ratio), i4, i5, i6)
                self.inventories.setdefault(i1, {})[rp] = shared(inv, inv)
                classes.setdefault(rp, set()).add(i1)
            elif kind == 'u':
                self.used.setdefault(i1, {})[rp] = int(i2)
                used.setdefault(rp, set()).add(i1)
            elif kind == 't':
                traits.setdefault(rp, set()).add(i1)
            else:
                aggregates.setdefault(rp, set()).add(i1)
                self.in_aggregate.setdefault(i1, set()).add(rp)
                self.aggregate_ids[text] = i1
        for into, found_sets in ((self.classes_of, classes), (self.used_of, used),
                                 (self.traits, traits), (self.aggregates, aggregates)):
            for rp, found in found_sets.items():
                frozen = frozenset(found)
                into[rp] = shared(frozen, frozen)
        sharing_trait = self.trait_ids.get(os_traits.MISC_SHARES_VIA_AGGREGATE)
        self.sharing.update(rp for rp, found in traits.items() if sharing_trait in found)


_VIEWS: 'weakref.WeakKeyDictionary[sa.Engine, ResourceView]' = weakref.WeakKeyDictionary()
_VIEWS_LOCK = threading.Lock()


def existing(engine: sa.Engine) -> ResourceView | None:
    """This process's view of ``engine``'s database, if it has one."""
    return _VIEWS.get(engine)


def of(conn: sa.Connection) -> ResourceView:
    """This process's view of ``conn``'s database (not yet refreshed)."""
    view = _VIEWS.get(conn.engine)
    if view is None:
        with _VIEWS_LOCK:
            view = _VIEWS.setdefault(conn.engine, ResourceView(api.folds_case(conn)))
    return view
