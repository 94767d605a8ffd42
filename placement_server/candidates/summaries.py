"""GET /allocation_candidates: provider summaries, the SQL side.

A summary is a provider's capacity and usage per resource class, and its
traits. Capacities and traits change only with the provider's generation
(every inventory and trait write bumps it), so each worker keeps them per
provider and generation (``StaticCache``) and reads only usage, which
allocations change without a bump, on every request.
"""
from collections.abc import Collection
from collections.abc import Iterable
from typing import Any
import weakref

import sqlalchemy as sa

from placement_server.candidates.sql import ALLOC
from placement_server.candidates.sql import INV
from placement_server.candidates.sql import RP
from placement_server.candidates.sql import RPT
from placement_server.candidates.sql import ByIds
from placement_server.candidates.sql import Holds
from placement_server.candidates.sql import Select
from placement_server.db import tables

# (uuid, generation): while it stays, so do a provider's inventories and traits
Version = tuple[str, int]
# {class name: (capacity, used)}
Resources = dict[str, tuple[int, int]]
# (version, resources with nothing used, trait names)
Entry = tuple[Version, Resources, list[str]]


def _static_rows(holds: Holds) -> tuple[Select, Select]:
    """Rows ('i', provider, class name, capacity) for the inventories
    (capacity is (total - reserved) * allocation_ratio, not yet rounded
    down) and ('t', provider, trait, trait id) for the traits of the
    providers ``holds(column)`` selects."""
    rc, trait = tables.resource_classes, tables.traits
    inventories = (
        sa.select(sa.literal('i').label('kind'), INV.c.resource_provider_id, rc.c.name,
                  (INV.c.total - INV.c.reserved) * INV.c.allocation_ratio)
        .join(rc, rc.c.id == INV.c.resource_class_id)
        .where(holds(INV.c.resource_provider_id)))
    traits = (sa.select(sa.literal('t'), RPT.c.resource_provider_id, trait.c.name, trait.c.id)
              .join(trait, trait.c.id == RPT.c.trait_id)
              .where(holds(RPT.c.resource_provider_id)))
    return inventories, traits


def _usage_rows(holds: Holds) -> Select:
    """Rows ('u', provider, class name, amount used)."""
    rc = tables.resource_classes
    return (sa.select(sa.literal('u').label('kind'), ALLOC.c.resource_provider_id, rc.c.name,
                      sa.func.sum(ALLOC.c.used))
            .join(rc, rc.c.id == ALLOC.c.resource_class_id)
            .where(holds(ALLOC.c.resource_provider_id))
            .group_by(ALLOC.c.resource_provider_id, rc.c.name))


def _in_trees(holds: Holds) -> Holds:
    """``holds`` for the members of the trees whose roots ``holds`` selects."""
    return lambda column: column.in_(sa.select(RP.c.id).where(holds(RP.c.root_provider_id)))


def _all_rows(holds: Holds) -> sa.CompoundSelect[Any]:
    # Usage comes as rows of its own rather than joined to the inventories:
    # with the providers given by a subquery, planners badly underestimate
    # how many there are and would match every inventory against every
    # usage row.
    return sa.union_all(*_static_rows(holds), _usage_rows(holds))


def _members_and_usage_rows(holds: Holds) -> sa.CompoundSelect[Any]:
    """Rows ('m', id, uuid, parent id, root id, generation, NULL) of every
    provider in the trees whose roots ``holds`` selects, and ('u', provider,
    class name, NULL, NULL, NULL, amount used) of their usage."""
    rc = tables.resource_classes
    members = sa.select(sa.literal('m').label('kind'), RP.c.id, RP.c.uuid,
                        RP.c.parent_provider_id, RP.c.root_provider_id, RP.c.generation,
                        sa.null().label('used')).where(holds(RP.c.root_provider_id))
    usage = (sa.select(sa.literal('u'), ALLOC.c.resource_provider_id, rc.c.name, sa.null(),
                       sa.null(), sa.null(), sa.func.sum(ALLOC.c.used))
             .join(rc, rc.c.id == ALLOC.c.resource_class_id)
             .where(_in_trees(holds)(ALLOC.c.resource_provider_id))
             .group_by(ALLOC.c.resource_provider_id, rc.c.name))
    return sa.union_all(members, usage)


_MEMBERS_AND_USAGE = ByIds(_members_and_usage_rows)

# {(provider, class name): amount used}
Used = dict[tuple[int, str], int]


def tree_members_and_usage(conn: sa.Connection, root_ids: Iterable[int]
                           ) -> tuple[list[Any], Used]:
    """Rows (id, uuid, parent id, root id, generation) of every provider in
    the given trees, and their usage: the summaries of trees a request
    shows need both, and one round trip brings them."""
    members, used = [], {}
    for row in _MEMBERS_AND_USAGE.rows(conn, root_ids):
        if row[0] == 'm':
            members.append(row[1:6])
        else:
            used[row[1], row[2]] = int(row[6])
    return members, used


_ALL = ByIds(_all_rows)
_ALL_IN_TREES = ByIds(lambda holds: _all_rows(_in_trees(holds)))
_STATIC = ByIds(lambda holds: sa.union_all(*_static_rows(holds)))
_USAGE = ByIds(_usage_rows)
_USAGE_IN_TREES = ByIds(lambda holds: _usage_rows(_in_trees(holds)))


class StaticCache:
    """{provider id: (version, {class name: (capacity, 0)}, [trait])} of one
    database: the summary of the provider while nothing is allocated on it.

    ``version`` is (uuid, generation): an entry serves only while the
    provider's generation is unchanged. That needs provider ids never to be
    used twice, which PostgreSQL's sequences, MariaDB's and MySQL's
    persistent auto-increment and SQLite's AUTOINCREMENT promise. A SQLite
    database made before the schema asked for AUTOINCREMENT gives a deleted
    newest provider's id to the next one (which could come back with the
    same uuid and generation and other inventories): it gets no cache.

    Bounded: when full it starts again empty, which costs one cold request
    and no bookkeeping on every hit.
    """
    LIMIT = 100000

    def __init__(self) -> None:
        self.entries: dict[int, Entry] = {}
        # One object per distinct figures and per distinct trait list, shared
        # by every provider that shows them (most of a cloud's providers are
        # alike): less memory, and the rendering works out each once.
        self._interned: dict[tuple[type, tuple[Any, ...]], Any] = {}

    def split(self, versions: dict[int, Version]) -> tuple[dict[int, Entry], list[int]]:
        """(entries that are current, providers to read)."""
        entries: dict[int, Entry] = {}
        stale = []
        get = self.entries.get
        for rp, version in versions.items():
            entry = get(rp)
            if entry is not None and entry[0] == version:
                entries[rp] = entry
            else:
                stale.append(rp)
        return entries, stale

    def store(self, found: dict[int, Entry]) -> dict[int, Entry]:
        """Keep the entries ``found``; returns them as kept (interned)."""
        if len(self.entries) + len(found) > self.LIMIT:
            self.entries, self._interned = {}, {}
        kept = {rp: (version, self._intern(idle), self._intern(traits))
                for rp, (version, idle, traits) in found.items()}
        self.entries.update(kept)
        return kept

    def _intern(self, value: Any) -> Any:
        key = (type(value), tuple(value.items()) if isinstance(value, dict) else tuple(value))
        return self._interned.setdefault(key, value)


_CACHES: 'weakref.WeakKeyDictionary[sa.Engine, StaticCache | None]' = weakref.WeakKeyDictionary()


def _ids_never_reused(conn: sa.Connection) -> bool:
    if conn.dialect.name != 'sqlite':
        return True
    sql = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' "
                               "AND name = 'resource_providers'").scalar()
    return 'AUTOINCREMENT' in (sql or '').upper()


def _cache_of(conn: sa.Connection) -> StaticCache | None:
    try:
        return _CACHES[conn.engine]
    except KeyError:
        cache = _CACHES[conn.engine] = StaticCache() if _ids_never_reused(conn) else None
        return cache


def _parse(versions: dict[int, Version], rows: Iterable[Any]
           ) -> tuple[dict[int, Entry], dict[tuple[int, str], int]]:
    """Cache entries for ``versions`` from the 'i' and 't' rows, and the 'u'
    rows as {(provider, class name): used}."""
    idle: dict[int, Resources] = {rp: {} for rp in versions}
    traits: dict[int, list[tuple[int, str]]] = {rp: [] for rp in versions}
    used = {}
    for kind, rp, name, amount in rows:
        if kind == 'i':
            idle[rp][name] = (int(amount), 0)
        elif kind == 't':
            traits[rp].append((amount, name))
        else:
            used[rp, name] = int(amount)
    # in trait id order (standard traits before custom ones), as upstream lists them
    return {rp: (versions[rp], idle[rp], [name for _, name in sorted(traits[rp])])
            for rp in versions}, used


def summaries_data(conn: sa.Connection, versions: dict[int, Version],
                   roots: Collection[int] | None = None, known_usage: Used | None = None
                   ) -> tuple[dict[int, Resources], dict[int, list[str]]]:
    """Capacities with usage, and trait names, of the providers in
    ``versions`` ({provider: (uuid, generation)}). When they are whole
    trees, ``roots`` names them instead: a tenth of the ids to send and
    match. ``known_usage``, when given, is the usage of (at least) those
    providers, already read in this request.

    Returns ({provider: {class name: (capacity, used)}}, {provider: [trait]}).
    """
    cache = _cache_of(conn)
    if cache is None:
        entries, used = _parse(versions, _ALL_IN_TREES.rows(conn, roots) if roots is not None
                                else _ALL.rows(conn, versions))
    else:
        entries, stale = cache.split(versions)
        if stale:
            found, _ = _parse({rp: versions[rp] for rp in stale}, _STATIC.rows(conn, stale))
            entries.update(cache.store(found))
        if known_usage is not None:
            used = {key: amount for key, amount in known_usage.items() if key[0] in versions}
        else:
            _, used = _parse({}, _USAGE_IN_TREES.rows(conn, roots) if roots is not None
                              else _USAGE.rows(conn, versions))
    resources = {rp: entry[1] for rp, entry in entries.items()}
    for rp in {rp for rp, _ in used}:
        resources[rp] = {name: (capacity, used.get((rp, name), 0))
                         for name, (capacity, _) in resources[rp].items()}
    return resources, {rp: entry[2] for rp, entry in entries.items()}
