"""GET /allocation_candidates: the SQL side.

Every query returns only providers that can take part in an answer:
capacity ((total - reserved) * allocation_ratio - used), min_unit, max_unit
and step_size are checked in SQL, with usage summed per provider and class
in a derived table joined once, and trait and aggregate filters are
semi-joins. Python only combines what comes back.
"""
import os_traits
import sqlalchemy as sa

from placement_server import errors
from placement_server.db import tables

RP = tables.resource_providers
INV = tables.inventories
ALLOC = tables.allocations
RPT = tables.resource_provider_traits
RPA = tables.resource_provider_aggregates

# Ids per IN list, to keep statements a sensible size.
CHUNK = 5000


def chunks(ids):
    ids = sorted(ids)
    for i in range(0, len(ids), CHUNK):
        yield ids[i:i + CHUNK]


def among(column, ids):
    """``column IN (ids)`` with the integer ids written into the SQL.

    Bound parameters cost SQLAlchemy real time per element (thousands per
    request here); ids are integers we read from the database, formatted
    with %d, so inlining them is safe.
    """
    if not ids:
        return sa.false()
    return column.op('IN')(sa.literal_column('(%s)' % ','.join(map(str, map(int, ids)))))


def uncached(conn):
    """``conn`` for statements with ids written in (see ``among``)."""
    return conn.execution_options(compiled_cache=None)


def fetch_all(conn, stmt, cached=True):
    """The rows of ``stmt`` as plain tuples, read from the DBAPI cursor.

    For the large reads of a request (tens of thousands of rows at 10000
    providers) SQLAlchemy's result rows cost four times the database work;
    the statement still goes through SQLAlchemy (compiled-statement cache,
    parameters), only the fetching skips its row layer. Statements with
    ids written in (``among``) are never the same twice: ``cached=False``
    keeps them out of the compiled-statement cache, which would otherwise
    hold hundreds of them per worker.
    """
    if not cached:
        conn = uncached(conn)
    result = conn.execute(stmt)
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


def _has_any_trait(rp_col, trait_ids):
    return sa.exists().where(RPT.c.resource_provider_id == rp_col,
                             RPT.c.trait_id.in_(sorted(trait_ids)))


def _in_any_aggregate(rp_col, agg_ids):
    return sa.exists().where(RPA.c.resource_provider_id == rp_col,
                             RPA.c.aggregate_id.in_(sorted(agg_ids)))


def _in_all_aggregate_sets(rp_col, member_of):
    return sa.and_(*[_in_any_aggregate(rp_col, s) for s in member_of])


def resolve_names(conn, classes, traits, aggregates):
    """Ids of resource classes, traits and aggregates, in one round trip.

    Returns ({class: id}, {trait: id}, {aggregate uuid: id}); an unknown
    class or trait is a 400 (an unknown aggregate just matches nothing).
    """
    rc, trait, agg = tables.resource_classes, tables.traits, tables.placement_aggregates
    parts = [sa.select(sa.literal('c').label('kind'), rc.c.name, rc.c.id)
             .where(rc.c.name.in_(sorted(classes)))]
    if traits:
        parts.append(sa.select(sa.literal('t'), trait.c.name, trait.c.id)
                     .where(trait.c.name.in_(sorted(traits))))
    if aggregates:
        parts.append(sa.select(sa.literal('a'), agg.c.uuid, agg.c.id)
                     .where(agg.c.uuid.in_(sorted(aggregates))))
    found = {'c': {}, 't': {}, 'a': {}}
    for kind, name, id_ in conn.execute(sa.union_all(*parts)):
        found[kind][name] = id_
    for name in sorted(classes):
        if name not in found['c']:
            raise errors.BadRequest('Invalid resource class in resources parameter: '
                                    'No such resource class %s.' % name)
    missing = sorted(set(traits) - set(found['t']))
    if missing:
        raise errors.BadRequest('No such trait(s): %s.' % ', '.join(missing))
    return found['c'], found['t'], found['a']


def root_of_uuid(conn, uuid):
    return conn.execute(sa.select(RP.c.root_provider_id)
                        .where(RP.c.uuid == uuid)).scalar()


def deployment_shape(conn):
    """(sharing providers as {id: set of aggregate ids}, whether any tree
    has more than one provider), in one round trip when nothing shares."""
    shares = (sa.select(sa.literal('s').label('kind'), RPT.c.resource_provider_id)
              .join(tables.traits, tables.traits.c.id == RPT.c.trait_id)
              .where(tables.traits.c.name == os_traits.MISC_SHARES_VIA_AGGREGATE))
    child = (sa.select(RP.c.id).where(RP.c.parent_provider_id.is_not(None))
             .limit(1).subquery('child'))
    sharing, trees = {}, False
    for kind, rp in conn.execute(sa.union_all(
            shares, sa.select(sa.literal('t'), child.c.id))):
        if kind == 's':
            sharing[rp] = set()
        else:
            trees = True
    if sharing:
        for rp, agg in conn.execute(sa.select(RPA.c.resource_provider_id, RPA.c.aggregate_id)
                                    .where(RPA.c.resource_provider_id.in_(sorted(sharing)))):
            sharing[rp].add(agg)
    return sharing, trees


def sharing_anchors(conn, sharing_ids):
    """{sharing provider id: roots of the trees it shares with, its own included}."""
    anchors = {s: set() for s in sharing_ids}
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


def _trait_filters(rp_col, query):
    conds = [_has_any_trait(rp_col, any_of) for any_of in query.required]
    if query.forbidden:
        conds.append(~_has_any_trait(rp_col, query.forbidden))
    return conds


def _usage(rc_ids):
    """Allocated amounts per provider and class, for the given classes."""
    return (sa.select(ALLOC.c.resource_provider_id.label('rp'),
                      ALLOC.c.resource_class_id.label('rc'),
                      sa.func.sum(ALLOC.c.used).label('used'))
            .where(ALLOC.c.resource_class_id.in_(sorted(rc_ids)))
            .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id)
            .subquery('usage'))


def _with_room(resources):
    """Ids of providers with room for every (class, amount) in ``resources``.

    One pass over the inventories of the requested classes, usage joined
    once: databases plan this as hash joins, where one join per class
    (with usage per row) became nested loops of index lookups.
    """
    usage = _usage(resources)
    used = sa.func.coalesce(usage.c.used, 0)
    fits = sa.or_(*[sa.and_(INV.c.resource_class_id == rc, *_fits(INV, used, amount))
                    for rc, amount in sorted(resources.items())])
    return (sa.select(INV.c.resource_provider_id)
            .select_from(INV.outerjoin(usage, sa.and_(
                usage.c.rp == INV.c.resource_provider_id,
                usage.c.rc == INV.c.resource_class_id)))
            .where(INV.c.resource_class_id.in_(sorted(resources)), fits)
            .group_by(INV.c.resource_provider_id)
            .having(sa.func.count() == len(resources)))


def _linked(column, any_of_sets, forbidden):
    """Conditions on RP.c.id: a link (``column``: a trait or aggregate id)
    in each of ``any_of_sets``, and none in ``forbidden``."""
    def holders(ids):
        return sa.select(column.table.c.resource_provider_id).where(column.in_(sorted(ids)))
    conds = [RP.c.id.in_(holders(any_of)) for any_of in any_of_sets]
    if forbidden:
        conds.append(RP.c.id.not_in(holders(forbidden)))
    return conds


def single_providers(conn, query, capacity_of=()):
    """Providers that alone satisfy a group: every class, trait and aggregate.

    Returns ({provider: root}, {(provider, class): (capacity, used, max_unit)},
    {provider: uuid}); the second only for the classes in ``capacity_of``
    (those other groups ask for too, whose amounts may add up).
    """
    conds = [RP.c.id.in_(_with_room(query.resources))]
    conds += _linked(RPT.c.trait_id, query.required, query.forbidden)
    conds += _linked(RPA.c.aggregate_id, query.member_of, query.forbidden_aggs)
    if query.tree_root is not None:
        conds.append(RP.c.root_provider_id == query.tree_root)
    roots, uuids = {}, {}
    for rp, root, uuid in fetch_all(conn, sa.select(RP.c.id, RP.c.root_provider_id, RP.c.uuid)
                                    .where(*conds)):
        roots[rp] = root
        uuids[rp] = uuid
    wanted = set(capacity_of) & set(query.resources)
    capacity = capacities(conn, roots, wanted) if wanted and roots else {}
    return roots, capacity, uuids


def capacities(conn, rp_ids, rc_ids):
    """{(provider, class): (capacity, used, max_unit)} for the given pairs."""
    usage = _usage(rc_ids)
    found = {}
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
            found[rp, rc] = (int((total - reserved) * ratio), int(used), max_unit)
    return found


def _fits(inv, used, amount):
    return [used + amount <= (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio,
            inv.c.min_unit <= amount,
            inv.c.max_unit >= amount,
            sa.literal(amount) % inv.c.step_size == 0]


def providers_per_class(conn, query):
    """For a group that may spread over a tree: per class, the providers with room.

    Provider filters: forbidden traits on the provider itself; member_of on
    the provider or its root (an aggregate on the root spans the tree);
    forbidden aggregates on neither. Required traits are judged later on the
    whole set of providers a candidate uses, so here each row only says
    which of the required any-of sets the provider meets.

    Returns ({class: [provider]}, {provider: root},
             {(provider, class): (capacity, used, max_unit)}, {provider: {set index}}).
    """
    base = []
    if query.forbidden:
        base.append(~_has_any_trait(RP.c.id, query.forbidden))
    if query.member_of:
        base.append(sa.or_(_in_all_aggregate_sets(RP.c.id, query.member_of),
                           _in_all_aggregate_sets(RP.c.root_provider_id, query.member_of)))
    if query.forbidden_aggs:
        base.append(~_in_any_aggregate(RP.c.id, query.forbidden_aggs))
        base.append(~_in_any_aggregate(RP.c.root_provider_id, query.forbidden_aggs))
    if query.tree_root is not None:
        base.append(RP.c.root_provider_id == query.tree_root)
    trait_cols = [_has_any_trait(RP.c.id, any_of).label('t%d' % k)
                  for k, any_of in enumerate(query.required)]
    by_class, roots, capacity, meets = {}, {}, {}, {}
    for rc_id, amount in sorted(query.resources.items()):
        usage = _usage([rc_id])
        used = sa.func.coalesce(usage.c.used, 0)
        sel = (sa.select(RP.c.id, RP.c.root_provider_id, INV.c.total, INV.c.reserved,
                         INV.c.allocation_ratio, INV.c.max_unit, used.label('used'),
                         *trait_cols)
               .join(INV, sa.and_(INV.c.resource_provider_id == RP.c.id,
                                  INV.c.resource_class_id == rc_id))
               .outerjoin(usage, usage.c.rp == RP.c.id)
               .where(*base, *_fits(INV, used, amount)))
        found = by_class[rc_id] = []
        for row in fetch_all(conn, sel):
            rp = row[0]
            found.append(rp)
            roots[rp] = row[1]
            total, reserved, ratio, max_unit, used_now = row[2:7]
            capacity[rp, rc_id] = (int((total - reserved) * ratio), int(used_now), max_unit)
            meets[rp] = {k for k, ok in enumerate(row[7:]) if ok}
        if not found:
            break
    return by_class, roots, capacity, meets


def matching_roots(conn, root_ids, required, forbidden):
    """Those of ``root_ids`` that have every ``required`` and no ``forbidden`` trait."""
    conds = [_has_any_trait(RP.c.id, [t]) for t in required]
    if forbidden:
        conds.append(~_has_any_trait(RP.c.id, forbidden))
    found = set()
    for chunk in chunks(root_ids):
        found.update(uncached(conn).execute(
            sa.select(RP.c.id).where(among(RP.c.id, chunk), *conds)).scalars())
    return found


def roots_in_aggregates(conn, root_ids, agg_ids):
    found = set()
    for chunk in chunks(root_ids):
        found.update(uncached(conn).execute(
            sa.select(RPA.c.resource_provider_id).distinct()
            .where(among(RPA.c.resource_provider_id, chunk),
                   RPA.c.aggregate_id.in_(sorted(agg_ids)))).scalars())
    return found


def resourceless_providers(conn, query):
    """Providers meeting a group's trait and aggregate filters ({provider: root})."""
    conds = _trait_filters(RP.c.id, query)
    if query.member_of:
        conds.append(_in_all_aggregate_sets(RP.c.id, query.member_of))
    if query.forbidden_aggs:
        conds.append(~_in_any_aggregate(RP.c.id, query.forbidden_aggs))
    if query.tree_root is not None:
        conds.append(RP.c.root_provider_id == query.tree_root)
    return dict(conn.execute(sa.select(RP.c.id, RP.c.root_provider_id).where(*conds)).all())


def tree_members(conn, root_ids):
    """Rows (id, uuid, parent id, root id) of every provider in the given trees."""
    return _provider_rows(conn, RP.c.root_provider_id, root_ids)


def providers_by_id(conn, ids):
    """The same rows for the given providers."""
    return _provider_rows(conn, RP.c.id, ids)


def _provider_rows(conn, column, values):
    rows = []
    for chunk in chunks(values):
        rows += fetch_all(conn, sa.select(RP.c.id, RP.c.uuid, RP.c.parent_provider_id,
                                          RP.c.root_provider_id)
                          .where(among(column, chunk)), cached=False)
    return rows


def summaries_data(conn, rp_ids):
    """Inventories with usage, and trait names, of the given providers.

    Two queries per chunk of providers (each one round trip to the
    database). Returns ({provider: {class name: (capacity, used)}},
    {provider: [trait]}).
    """
    rc, trait = tables.resource_classes, tables.traits
    resources = {rp: {} for rp in rp_ids}
    traits = {rp: [] for rp in rp_ids}
    for chunk in chunks(rp_ids):
        usage = (sa.select(ALLOC.c.resource_provider_id.label('rp'),
                           ALLOC.c.resource_class_id.label('rc'),
                           sa.func.sum(ALLOC.c.used).label('used'))
                 .where(among(ALLOC.c.resource_provider_id, chunk))
                 .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id)
                 .subquery('usage'))
        for rp, name, total, reserved, ratio, used in fetch_all(conn, cached=False, stmt=(
                sa.select(INV.c.resource_provider_id, rc.c.name, INV.c.total, INV.c.reserved,
                          INV.c.allocation_ratio, sa.func.coalesce(usage.c.used, 0))
                .select_from(INV.join(rc, rc.c.id == INV.c.resource_class_id)
                             .outerjoin(usage, sa.and_(
                                 usage.c.rp == INV.c.resource_provider_id,
                                 usage.c.rc == INV.c.resource_class_id)))
                .where(among(INV.c.resource_provider_id, chunk)))):
            resources[rp][name] = (int((total - reserved) * ratio), int(used))
        for rp, name in fetch_all(conn, cached=False, stmt=(
                sa.select(RPT.c.resource_provider_id, trait.c.name)
                .join(trait, trait.c.id == RPT.c.trait_id)
                .where(among(RPT.c.resource_provider_id, chunk)))):
            traits[rp].append(name)
    for names in traits.values():
        names.sort()
    return resources, traits
