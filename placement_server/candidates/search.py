"""GET /allocation_candidates: the SQL side.

Every query returns only providers that can take part in an answer:
capacity and unit limits (``provider_filters.capacity_for``, the rule lists
use too) are checked in SQL, with usage summed per provider and class in a
derived table joined once, and trait and aggregate filters are semi-joins.
Python only combines what comes back.
"""
from collections.abc import Collection
from collections.abc import Iterable
import dataclasses
import functools
from typing import Any

import os_traits
import sqlalchemy as sa

from placement_server import errors
from placement_server.candidates.combine import Capacity
from placement_server.candidates.sql import ALLOC
from placement_server.candidates.sql import INV
from placement_server.candidates.sql import RP
from placement_server.candidates.sql import RPA
from placement_server.candidates.sql import RPT
from placement_server.candidates.sql import ByIds
from placement_server.candidates.sql import Column
from placement_server.candidates.sql import Condition
from placement_server.candidates.sql import Select
from placement_server.candidates.sql import among
from placement_server.candidates.sql import chunks
from placement_server.candidates.sql import fetch_all
from placement_server.candidates.sql import uncached
from placement_server.db import provider_filters
from placement_server.db import tables


@dataclasses.dataclass
class GroupQuery:
    """A request group with names resolved to ids."""
    suffix: str
    granular: bool
    resources: dict[int, int]           # {class: amount}
    required: list[frozenset[int]]      # any-of trait sets
    forbidden: set[int]                 # traits
    member_of: list[set[int]]           # any-of aggregate sets
    forbidden_aggs: set[int]
    tree_root: int | None = None


def _whole(total: int, reserved: int, ratio: float) -> int:
    """An inventory's capacity in whole units (rounded down, as summaries
    show it): what the sum of several groups' amounts must fit."""
    return int((total - reserved) * ratio)


def _has_any_trait(rp_col: Column, trait_ids: Iterable[int]) -> sa.Exists:
    return sa.exists().where(RPT.c.resource_provider_id == rp_col,
                             RPT.c.trait_id.in_(sorted(trait_ids)))


def _in_any_aggregate(rp_col: Column, agg_ids: Iterable[int]) -> sa.Exists:
    return sa.exists().where(RPA.c.resource_provider_id == rp_col,
                             RPA.c.aggregate_id.in_(sorted(agg_ids)))


def _in_all_aggregate_sets(rp_col: Column, member_of: Iterable[Iterable[int]]) -> Condition:
    return sa.and_(*[_in_any_aggregate(rp_col, s) for s in member_of])


def _names_statement() -> sa.CompoundSelect[Any]:
    """Ids of the names a request uses, and the deployment's shape.

    One constant statement (lists are expanding parameters, so it compiles
    once per worker): rows ('c', class name, id), ('t', trait, id),
    ('a', aggregate uuid, id), ('s', NULL, sharing provider id) and at most
    one ('n', NULL, id) if any provider has a parent.
    """
    rc, trait, agg = tables.resource_classes, tables.traits, tables.placement_aggregates
    child = (sa.select(RP.c.id).where(RP.c.parent_provider_id.is_not(None))
             .limit(1).subquery('child'))

    def named(kind: str, name_col: Column, id_col: Column, param: str) -> Select:
        return (sa.select(sa.literal(kind).label('kind'), name_col.label('name'),
                          id_col.label('id'))
                .where(name_col.in_(sa.bindparam(param, expanding=True))))
    return sa.union_all(
        named('c', rc.c.name, rc.c.id, 'classes'),
        named('t', trait.c.name, trait.c.id, 'traits'),
        named('a', agg.c.uuid, agg.c.id, 'aggregates'),
        sa.select(sa.literal('s'), sa.null(), RPT.c.resource_provider_id)
        .join(trait, trait.c.id == RPT.c.trait_id)
        .where(trait.c.name == os_traits.MISC_SHARES_VIA_AGGREGATE),
        sa.select(sa.literal('n'), sa.null(), child.c.id))


NAMES = _names_statement()


@dataclasses.dataclass
class Names:
    """What ``resolve`` found: ids by name, and the deployment's shape."""
    classes: dict[str, int]         # {class name: id}
    traits: dict[str, int]          # {trait name: id}
    aggregates: dict[str, int]      # {aggregate uuid: id}
    sharing: dict[int, set[int]]    # {sharing provider id: its aggregate ids}
    trees: bool                     # whether any tree has more than one provider


def resolve(conn: sa.Connection, classes: Collection[str], traits: Collection[str],
            aggregates: Collection[str]) -> Names:
    """Names for a request, in one round trip (two when providers share).

    An unknown class or trait is a 400; an unknown aggregate just matches
    nothing.
    """
    found: dict[str, dict[Any, int]] = {'c': {}, 't': {}, 'a': {}, 's': {}, 'n': {}}
    for kind, name, id_ in conn.execute(NAMES, {'classes': sorted(classes),
                                                'traits': sorted(traits),
                                                'aggregates': sorted(aggregates)}):
        found[kind][name if kind in 'cta' else id_] = id_
    for name in sorted(classes):
        if name not in found['c']:
            raise errors.BadRequest('Invalid resource class in resources parameter: '
                                    'No such resource class %s.' % name)
    missing = sorted(set(traits) - set(found['t']))
    if missing:
        raise errors.BadRequest('No such trait(s): %s.' % ', '.join(missing))
    sharing: dict[int, set[int]] = {rp: set() for rp in found['s']}
    if sharing:
        for rp, agg in conn.execute(sa.select(RPA.c.resource_provider_id, RPA.c.aggregate_id)
                                    .where(RPA.c.resource_provider_id.in_(sorted(sharing)))):
            sharing[rp].add(agg)
    return Names(found['c'], found['t'], found['a'], sharing, bool(found['n']))


def root_of_uuid(conn: sa.Connection, uuid: str) -> int | None:
    return conn.execute(sa.select(RP.c.root_provider_id)
                        .where(RP.c.uuid == uuid)).scalar()


def sharing_anchors(conn: sa.Connection, sharing_ids: Collection[int]) -> dict[int, set[int]]:
    """{sharing provider id: roots of the trees it shares with, its own included}."""
    anchors: dict[int, set[int]] = {s: set() for s in sharing_ids}
    if not sharing_ids:
        return anchors
    mine = RPA.alias('mine')
    theirs = RPA.alias('theirs')
    query = (sa.select(mine.c.resource_provider_id, RP.c.root_provider_id).distinct()
             .join(theirs, theirs.c.aggregate_id == mine.c.aggregate_id)
             .join(RP, RP.c.id == theirs.c.resource_provider_id))
    for chunk in chunks(sharing_ids):
        for s, root in uncached(conn).execute(
                query.where(among(mine.c.resource_provider_id, chunk))):
            anchors[s].add(root)
        for s, root in uncached(conn).execute(sa.select(RP.c.id, RP.c.root_provider_id)
                                              .where(among(RP.c.id, chunk))):
            anchors[s].add(root)
    return anchors


def _trait_filters(rp_col: Column, query: GroupQuery) -> list[Condition]:
    conds: list[Condition] = [_has_any_trait(rp_col, any_of) for any_of in query.required]
    if query.forbidden:
        conds.append(~_has_any_trait(rp_col, query.forbidden))
    return conds


def _usage(rc_ids: Iterable[int]) -> sa.Subquery:
    """Allocated amounts per provider and class, for the given classes."""
    return (sa.select(ALLOC.c.resource_provider_id.label('rp'),
                      ALLOC.c.resource_class_id.label('rc'),
                      sa.func.sum(ALLOC.c.used).label('used'))
            .where(ALLOC.c.resource_class_id.in_(sorted(rc_ids)))
            .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id)
            .subquery('usage'))


def _with_room(resources: dict[int, int]) -> Select:
    """Ids of providers with room for every (class, amount) in ``resources``.

    One pass over the inventories of the requested classes, usage joined
    once: databases plan this as hash joins, where one join per class
    (with usage per row) became nested loops of index lookups.
    """
    usage = _usage(resources)
    used = sa.func.coalesce(usage.c.used, 0)
    fits = sa.or_(*[sa.and_(INV.c.resource_class_id == rc,
                            provider_filters.capacity_for(amount, used))
                    for rc, amount in sorted(resources.items())])
    return (sa.select(INV.c.resource_provider_id)
            .select_from(INV.outerjoin(usage, sa.and_(
                usage.c.rp == INV.c.resource_provider_id,
                usage.c.rc == INV.c.resource_class_id)))
            .where(INV.c.resource_class_id.in_(sorted(resources)), fits)
            .group_by(INV.c.resource_provider_id)
            # ">=" says "=" here (one row per provider and class), and
            # is estimated as a third of the groups, not one in 200.
            .having(sa.func.count() >= len(resources)))


def _linked(column: Column, any_of_sets: Iterable[Iterable[int]],
            forbidden: Collection[int]) -> list[Condition]:
    """Conditions on RP.c.id: a link (``column``: a trait or aggregate id)
    in each of ``any_of_sets``, and none in ``forbidden``."""
    def holders(ids: Iterable[int]) -> Select:
        return sa.select(column.table.c.resource_provider_id).where(column.in_(sorted(ids)))
    conds: list[Condition] = [RP.c.id.in_(holders(any_of)) for any_of in any_of_sets]
    if forbidden:
        conds.append(RP.c.id.not_in(holders(forbidden)))
    return conds


# A group's filters, hashable: resources, required, forbidden, member_of,
# forbidden aggregates (each as sorted tuples) and the tree root.
GroupKey = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, ...], ...], tuple[int, ...],
                 tuple[tuple[int, ...], ...], tuple[int, ...], int | None]


def _group_key(query: GroupQuery) -> GroupKey:
    """A hashable form of a group's filters, for the statement memos."""
    return (tuple(sorted(query.resources.items())),
            tuple(sorted(tuple(sorted(s)) for s in query.required)),
            tuple(sorted(query.forbidden)),
            tuple(sorted(tuple(sorted(s)) for s in query.member_of)),
            tuple(sorted(query.forbidden_aggs)), query.tree_root)


@functools.lru_cache(maxsize=256)
def _single_statement(key: GroupKey, versions: bool) -> Select:
    """Providers that alone satisfy a group, as (id, root id), followed by
    (uuid, generation) when ``versions`` is asked for.

    Memoized on the group's filters: building a statement costs more
    Python than running it here, and schedulers repeat their requests.
    """
    return _single_select(key, versions)


@functools.lru_cache(maxsize=256)
def _singles_statement(keys: tuple[GroupKey, ...], versions: bool) -> sa.CompoundSelect[Any]:
    """Several groups' ``_single_statement`` as one, each row led by the
    group's index in ``keys``: one round trip instead of one per group."""
    return sa.union_all(*[_single_select(key, versions, sa.literal_column(str(index)))
                          for index, key in enumerate(keys)])


def _single_select(key: GroupKey, versions: bool, lead: Column | None = None) -> Select:
    resources, required, forbidden, member_of, forbidden_aggs, tree_root = key
    conds: list[Condition] = [RP.c.id.in_(_with_room(dict(resources)))]
    conds += _linked(RPT.c.trait_id, required, forbidden)
    conds += _linked(RPA.c.aggregate_id, member_of, forbidden_aggs)
    if tree_root is not None:
        conds.append(RP.c.root_provider_id == tree_root)
    columns: list[Column] = [RP.c.id, RP.c.root_provider_id]
    if versions:
        columns += [RP.c.uuid, RP.c.generation]
    if lead is not None:
        columns.insert(0, lead)
    return sa.select(*columns).where(*conds)


def single_providers(conn: sa.Connection, query: GroupQuery, capacity_of: Collection[int] = (),
                     versions: bool = True
                     ) -> tuple[dict[int, int], Capacity, dict[int, tuple[str, int]]]:
    """Providers that alone satisfy a group: every class, trait and aggregate.

    Returns ({provider: root}, {(provider, class): (capacity, used, max_unit)},
    {provider: (uuid, generation)}); the second only for the classes in
    ``capacity_of`` (those other groups ask for too, whose amounts may add up),
    the third only when ``versions`` is asked for (in a deployment with
    trees the summaries read them with the tree members: not reading uuids
    here spares PyMySQL decoding hundreds of them in Python).
    """
    roots: dict[int, int] = {}
    found_versions: dict[int, tuple[str, int]] = {}
    for row in fetch_all(conn, _single_statement(_group_key(query), versions)):
        roots[row[0]] = row[1]
        if versions:
            found_versions[row[0]] = (row[2], row[3])
    wanted = set(capacity_of) & set(query.resources)
    capacity = capacities(conn, roots, wanted) if wanted and roots else {}
    return roots, capacity, found_versions


def single_providers_of_groups(conn: sa.Connection, queries: list[GroupQuery],
                               capacity_of: Collection[int] = (), versions: bool = True
                               ) -> list[tuple[dict[int, int], Capacity,
                                               dict[int, tuple[str, int]]]]:
    """``single_providers`` of each of ``queries``, searched in one statement."""
    found: list[tuple[dict[int, int], Capacity, dict[int, tuple[str, int]]]] = [
        ({}, {}, {}) for _ in queries]
    statement = _singles_statement(tuple(_group_key(q) for q in queries), versions)
    for row in fetch_all(conn, statement):
        roots, _, found_versions = found[row[0]]
        roots[row[1]] = row[2]
        if versions:
            found_versions[row[1]] = (row[3], row[4])
    for query, (roots, capacity, _) in zip(queries, found):
        wanted = set(capacity_of) & set(query.resources)
        if wanted and roots:
            capacity.update(capacities(conn, roots, wanted))
    return found


def capacities(conn: sa.Connection, rp_ids: Iterable[int], rc_ids: Iterable[int]) -> Capacity:
    """{(provider, class): (capacity, used, max_unit)} for the given pairs."""
    usage = _usage(rc_ids)
    found: Capacity = {}
    for chunk in chunks(rp_ids):
        for rp, rc, total, reserved, ratio, max_unit, used in fetch_all(conn, cached=False, stmt=(
                sa.select(INV.c.resource_provider_id, INV.c.resource_class_id, INV.c.total,
                          INV.c.reserved, INV.c.allocation_ratio, INV.c.max_unit,
                          sa.func.coalesce(usage.c.used, 0))
                .select_from(INV.outerjoin(usage, sa.and_(
                    usage.c.rp == INV.c.resource_provider_id,
                    usage.c.rc == INV.c.resource_class_id)))
                .where(among(INV.c.resource_provider_id, chunk),
                       INV.c.resource_class_id.in_(sorted(rc_ids))))):
            found[rp, rc] = (_whole(total, reserved, ratio), int(used), max_unit)
    return found


@functools.lru_cache(maxsize=256)
def _per_class_statements(key: GroupKey) -> tuple[tuple[int, Select], ...]:
    """(class, statement) pairs for ``providers_per_class``, memoized on the
    group's filters like ``_single_statement``."""
    resources, required, forbidden, member_of, forbidden_aggs, tree_root = key
    base: list[Condition] = []
    if forbidden:
        base.append(~_has_any_trait(RP.c.id, forbidden))
    if member_of:
        base.append(sa.or_(_in_all_aggregate_sets(RP.c.id, member_of),
                           _in_all_aggregate_sets(RP.c.root_provider_id, member_of)))
    if forbidden_aggs:
        base.append(~_in_any_aggregate(RP.c.id, forbidden_aggs))
        base.append(~_in_any_aggregate(RP.c.root_provider_id, forbidden_aggs))
    if tree_root is not None:
        base.append(RP.c.root_provider_id == tree_root)
    trait_cols = [_has_any_trait(RP.c.id, any_of).label('t%d' % k)
                  for k, any_of in enumerate(required)]
    statements = []
    for rc_id, amount in resources:
        usage = _usage([rc_id])
        used = sa.func.coalesce(usage.c.used, 0)
        statements.append((rc_id, (
            sa.select(RP.c.id, RP.c.root_provider_id, INV.c.total, INV.c.reserved,
                      INV.c.allocation_ratio, INV.c.max_unit, used.label('used'),
                      *trait_cols)
            .join(INV, sa.and_(INV.c.resource_provider_id == RP.c.id,
                               INV.c.resource_class_id == rc_id))
            .outerjoin(usage, usage.c.rp == RP.c.id)
            .where(*base, provider_filters.capacity_for(amount, used)))))
    return tuple(statements)


def providers_per_class(conn: sa.Connection, query: GroupQuery) -> tuple[
        dict[int, list[int]], dict[int, int], Capacity, dict[int, set[int]]]:
    """For a group that may spread over a tree: per class, the providers with room.

    Provider filters: forbidden traits on the provider itself; member_of on
    the provider or its root (an aggregate on the root spans the tree);
    forbidden aggregates on neither. Required traits are judged later on the
    whole set of providers a candidate uses, so here each row only says
    which of the required any-of sets the provider meets.

    Returns ({class: [provider]}, {provider: root},
             {(provider, class): (capacity, used, max_unit)}, {provider: {set index}}).
    """
    by_class: dict[int, list[int]] = {}
    roots: dict[int, int] = {}
    capacity: Capacity = {}
    meets: dict[int, set[int]] = {}
    for rc_id, statement in _per_class_statements(_group_key(query)):
        found = by_class[rc_id] = []
        for row in fetch_all(conn, statement):
            rp = row[0]
            found.append(rp)
            roots[rp] = row[1]
            total, reserved, ratio, max_unit, used_now = row[2:7]
            capacity[rp, rc_id] = (_whole(total, reserved, ratio), int(used_now), max_unit)
            meets[rp] = {k for k, ok in enumerate(row[7:]) if ok}
        if not found:
            break
    return by_class, roots, capacity, meets


def matching_roots(conn: sa.Connection, root_ids: Iterable[int], required: Iterable[int],
                   forbidden: Collection[int]) -> set[int]:
    """Those of ``root_ids`` that have every ``required`` and no ``forbidden`` trait."""
    conds: list[Condition] = [_has_any_trait(RP.c.id, [t]) for t in required]
    if forbidden:
        conds.append(~_has_any_trait(RP.c.id, forbidden))
    found: set[int] = set()
    for chunk in chunks(root_ids):
        found.update(uncached(conn).execute(
            sa.select(RP.c.id).where(among(RP.c.id, chunk), *conds)).scalars())
    return found


def roots_in_aggregates(conn: sa.Connection, root_ids: Iterable[int],
                        agg_ids: Iterable[int]) -> set[int]:
    found: set[int] = set()
    for chunk in chunks(root_ids):
        found.update(uncached(conn).execute(
            sa.select(RPA.c.resource_provider_id).distinct()
            .where(among(RPA.c.resource_provider_id, chunk),
                   RPA.c.aggregate_id.in_(sorted(agg_ids)))).scalars())
    return found


def resourceless_providers(conn: sa.Connection, query: GroupQuery) -> dict[int, int]:
    """Providers meeting a group's trait and aggregate filters ({provider: root})."""
    conds = _trait_filters(RP.c.id, query)
    if query.member_of:
        conds.append(_in_all_aggregate_sets(RP.c.id, query.member_of))
    if query.forbidden_aggs:
        conds.append(~_in_any_aggregate(RP.c.id, query.forbidden_aggs))
    if query.tree_root is not None:
        conds.append(RP.c.root_provider_id == query.tree_root)
    return dict(conn.execute(sa.select(RP.c.id, RP.c.root_provider_id).where(*conds)).all())


def _provider_rows(holds: Condition) -> Select:
    return sa.select(RP.c.id, RP.c.uuid, RP.c.parent_provider_id,
                     RP.c.root_provider_id, RP.c.generation).where(holds)


_PROVIDERS = ByIds(lambda holds: _provider_rows(holds(RP.c.id)))


def providers_by_id(conn: sa.Connection, ids: Iterable[int]) -> list[Any]:
    """Rows (id, uuid, parent id, root id, generation) of the given providers."""
    return _PROVIDERS.rows(conn, ids)
