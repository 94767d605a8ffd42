"""The WHERE clause that selects providers for GET /resource_providers.

Every filter is one condition on ``resource_providers`` (an IN over a
small subquery), so a whole list request is a single SELECT however many
filters it combines; nothing is loaded into Python to be filtered there.
Allocation candidates build their own statements (placement_server.candidates)
but judge capacity by the same rule, ``capacity_for``.
"""
import sqlalchemy as sa

from placement_server import errors
from placement_server.db import tables

RP = tables.resource_providers
RPA = tables.resource_provider_aggregates
RPT = tables.resource_provider_traits
AGG = tables.placement_aggregates
INV = tables.inventories
ALLOC = tables.allocations
RC = tables.resource_classes
TRAITS = tables.traits


def _in_aggregates(uuids):
    return RP.c.id.in_(
        sa.select(RPA.c.resource_provider_id)
        .join(AGG, AGG.c.id == RPA.c.aggregate_id)
        .where(AGG.c.uuid.in_(sorted(uuids))))


def _having_traits(trait_ids):
    return RP.c.id.in_(sa.select(RPT.c.resource_provider_id)
                       .where(RPT.c.trait_id.in_(sorted(trait_ids))))


def used(inv=INV):
    """The amount allocated of ``inv``'s class on ``inv``'s provider."""
    return sa.func.coalesce(
        sa.select(sa.func.sum(ALLOC.c.used))
        .where(ALLOC.c.resource_provider_id == inv.c.resource_provider_id,
               ALLOC.c.resource_class_id == inv.c.resource_class_id)
        .correlate(inv).scalar_subquery(), 0)


def capacity_for(amount, used, inv=INV):
    """``inv`` can take ``amount`` more, ``used`` being allocated already:
    free capacity and unit limits. The one rule for lists and candidates
    (where several groups take from one provider, candidates.combine checks
    only the sum against capacity and max_unit; each amount passed here);
    claims apply it in Python (allocations._check_capacity), held to the
    same reference by tests/functional/test_candidates_capacity.py.

    Written for the planner's estimates, which choose how the joins after
    this filter run (candidates join usage and providers after it): it
    guesses that an equality of expressions keeps 0.5% of rows, so that on
    a cloud with room it would plan for a handful of providers and join
    thousands by index lookups. "step_size = 1 OR ..." is estimated from
    the column's statistics (nearly every step is 1) instead.
    """
    return sa.and_(
        used + amount <= (inv.c.total - inv.c.reserved) * inv.c.allocation_ratio,
        inv.c.min_unit <= amount,
        inv.c.max_unit >= amount,
        sa.or_(inv.c.step_size == 1, sa.literal(amount) % inv.c.step_size == 0))


def resource_class_ids(conn, names):
    """{name: id}; an unknown class is a 400 naming it."""
    found = dict(conn.execute(sa.select(RC.c.name, RC.c.id)
                              .where(RC.c.name.in_(sorted(names)))).all())
    unknown = set(names) - set(found)
    if unknown:
        raise errors.BadRequest('Invalid resource class in resources parameter: '
                                'No such resource class %s.' % ', '.join(sorted(unknown)))
    return found


def trait_ids(conn, names,
              unknown_detail='Invalid trait(s) in "required" parameter: No such trait(s): %s.'):
    """{name: id}; unknown names are a 400 listing them (``unknown_detail``)."""
    if not names:
        return {}
    found = dict(conn.execute(sa.select(TRAITS.c.name, TRAITS.c.id)
                              .where(TRAITS.c.name.in_(sorted(names)))).all())
    unknown = set(names) - set(found)
    if unknown:
        raise errors.BadRequest(unknown_detail % ', '.join(sorted(unknown)))
    return found


def conditions(conn, name=None, uuid=None, member_of=(), forbidden_aggregates=(),
               resources=None, in_tree=None, required=(), forbidden_traits=()):
    """The list of conditions on ``resource_providers`` for these filters.

    ``member_of`` and ``required`` are lists of any-of groups (uuids, trait
    names), all of which must match; ``resources`` is {class name: amount}.
    Unknown trait or class names are 400s; unknown aggregates or an unknown
    ``in_tree`` provider simply match nothing.
    """
    where = []
    if name is not None:
        where.append(RP.c.name == name)
    if uuid is not None:
        where.append(RP.c.uuid == uuid)
    for group in member_of:
        where.append(_in_aggregates(group))
    if forbidden_aggregates:
        where.append(~_in_aggregates(forbidden_aggregates))
    if in_tree is not None:
        tree = RP.alias('tree')
        where.append(RP.c.root_provider_id == sa.select(tree.c.root_provider_id)
                     .where(tree.c.uuid == in_tree).scalar_subquery())
    ids = trait_ids(conn, set().union(forbidden_traits, *required))
    for group in required:
        where.append(_having_traits({ids[n] for n in group}))
    if forbidden_traits:
        where.append(~_having_traits({ids[n] for n in forbidden_traits}))
    if resources:
        rc_ids = resource_class_ids(conn, resources)
        for rc_name, amount in sorted(resources.items()):
            where.append(RP.c.id.in_(
                sa.select(INV.c.resource_provider_id)
                .where(INV.c.resource_class_id == rc_ids[rc_name],
                       capacity_for(amount, used()))))
    return where
