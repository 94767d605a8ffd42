"""Usages: sums of allocations, per provider or per project/user."""
from typing import Any

import sqlalchemy as sa

from placement_server.db import tables

ALLOC = tables.allocations
INV = tables.inventories
RC = tables.resource_classes
CONSUMER = tables.consumers
PROJECT = tables.projects
USER = tables.users
CTYPE = tables.consumer_types

# The name 1.38 gives consumers without a type.
UNKNOWN = 'unknown'


def for_provider(conn: sa.Connection, provider_id: int) -> dict[str, int]:
    """{class: used} for every class the provider has inventory of (0 if unused)."""
    rows = conn.execute(
        sa.select(RC.c.name, sa.func.coalesce(sa.func.sum(ALLOC.c.used), 0))
        .select_from(INV.join(RC, RC.c.id == INV.c.resource_class_id)
                     .outerjoin(ALLOC, sa.and_(
                         ALLOC.c.resource_provider_id == INV.c.resource_provider_id,
                         ALLOC.c.resource_class_id == INV.c.resource_class_id)))
        .where(INV.c.resource_provider_id == provider_id)
        .group_by(RC.c.name))
    return {name: int(used) for name, used in rows}


def _owned_by(query: sa.Select[Any], project_id: str,
              user_id: str | None) -> sa.Select[Any]:
    query = query.join(PROJECT, PROJECT.c.id == CONSUMER.c.project_id).where(
        PROJECT.c.external_id == project_id)
    if user_id is not None:
        query = query.join(USER, USER.c.id == CONSUMER.c.user_id).where(
            USER.c.external_id == user_id)
    return query


def for_project(conn: sa.Connection, project_id: str,
                user_id: str | None = None) -> dict[str, int]:
    """{class: used} summed over the project's (and user's) consumers."""
    query = _owned_by(
        sa.select(RC.c.name, sa.func.sum(ALLOC.c.used))
        .select_from(ALLOC.join(RC, RC.c.id == ALLOC.c.resource_class_id)
                     .join(CONSUMER, CONSUMER.c.uuid == ALLOC.c.consumer_id)),
        project_id, user_id).group_by(RC.c.name)
    return {name: int(used) for name, used in conn.execute(query)}


def by_consumer_type(conn: sa.Connection, project_id: str, user_id: str | None = None,
                     consumer_type: str | None = None) -> dict[str, Any]:
    """{type: {class: used, ..., 'consumer_count': n}} (microversion 1.38).

    ``consumer_type`` None groups by every type (untyped consumers under
    'unknown'); 'all' sums everything under 'all'; 'unknown' only the
    untyped consumers; any other name only that type.
    """
    type_name = sa.func.coalesce(CTYPE.c.name, UNKNOWN)
    group = sa.literal('all') if consumer_type == 'all' else type_name
    source = (ALLOC.join(RC, RC.c.id == ALLOC.c.resource_class_id)
              .join(CONSUMER, CONSUMER.c.uuid == ALLOC.c.consumer_id)
              .outerjoin(CTYPE, CTYPE.c.id == CONSUMER.c.consumer_type_id))

    def select(*columns: Any) -> sa.Select[Any]:
        query = _owned_by(sa.select(*columns).select_from(source), project_id, user_id)
        if consumer_type == UNKNOWN:
            query = query.where(CONSUMER.c.consumer_type_id.is_(None))
        elif consumer_type not in (None, 'all'):
            query = query.where(CTYPE.c.name == consumer_type)
        return query

    # Consumers are counted apart: one holding two classes counts once.
    counts = select(group.label('grp'),
                    sa.func.count(sa.distinct(ALLOC.c.consumer_id))).group_by('grp')
    sums = select(group.label('grp'), RC.c.name,
                  sa.func.sum(ALLOC.c.used)).group_by('grp', RC.c.name)
    result = {grp: {'consumer_count': int(n)} for grp, n in conn.execute(counts)}
    for grp, rc, used in conn.execute(sums):
        result[grp][rc] = int(used)
    return result
