"""Inventories: what a provider offers, per resource class.

Every write here bumps the provider's generation exactly once through
``providers.increment_generation`` (compare-and-swap against the
generation the caller read), in the caller's transaction, and notes the
provider in the change sequence itself (``changes.note``: the resource
view reads inventories; tests/unit/test_view_writes_noted.py). These are plain
functions on a connection so that the reshaper can replace inventories
and allocations together in one transaction.
"""
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import math
from typing import Any

import sqlalchemy as sa

from placement_server import errors
from placement_server.db import api
from placement_server.db import changes
from placement_server.db import providers
from placement_server.db import resource_classes
from placement_server.db import tables
from placement_server.db.prepared import prepared

INV = tables.inventories
RC = tables.resource_classes
ALLOC = tables.allocations

FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')


# An inventory's fields, as a client gives them or a row holds them.
Inventory = Mapping[Any, Any]


def usable_ratio(ratio: float) -> float:
    """A stored allocation ratio as capacity counts it: NaN or an infinity
    (the API refuses them; SQL or another service may store them) offers
    nothing."""
    return ratio if math.isfinite(ratio) else 0.0


def capacity(inv: Inventory) -> float:
    """What may be allocated: (total - reserved) * allocation_ratio."""
    return float((inv['total'] - inv['reserved']) * usable_ratio(inv['allocation_ratio']))


def check_capacity(provider_uuid: str, inventories: Mapping[str, Inventory],
                   reserved_may_equal_total: bool, action: str = 'update') -> None:
    """400 unless every inventory leaves something to allocate.

    Before 1.26 reserved must stay below total (whole capacity > 0); from
    1.26 it may equal total (capacity >= 0, a provider fully held back).
    As upstream, the capacity checked is rounded down, so the allocation
    ratio counts too. ``action`` (create, update) words the error.
    """
    for rc, inv in inventories.items():
        whole = int(capacity(inv))
        if whole < 0 or (whole == 0 and not reserved_may_equal_total):
            raise errors.BadRequest(
                "Unable to %s inventory for resource provider %s: Invalid inventory "
                "for '%s' on resource provider '%s'. The reserved value is greater "
                "than %stotal." % (action, provider_uuid, rc, provider_uuid,
                                   '' if reserved_may_equal_total else 'or equal to '))


_MINE = INV.c.resource_provider_id == sa.bindparam('provider_id')
_GET_ALL = (sa.select(RC.c.name.label('resource_class'), INV)
            .join(RC, RC.c.id == INV.c.resource_class_id)
            .where(_MINE).order_by(RC.c.name))
# For a replace, in one statement: each wanted class (its id, and the
# provider's inventory of it if any), then the inventories not wanted;
# only the columns a replace reads (each costs the driver a description).
_WANTED: sa.BindParameter[Any] = sa.bindparam('names', expanding=True)
_CURRENT = [INV.c[f] for f in FIELDS] + [INV.c.created_at, INV.c.updated_at]
_CLASSES_AND_CURRENT = prepared(sa.union_all(
    sa.select(RC.c.name.label('resource_class'), RC.c.id.label('class_id'), *_CURRENT)
    .select_from(RC.outerjoin(INV, sa.and_(INV.c.resource_class_id == RC.c.id, _MINE)))
    .where(RC.c.name.in_(_WANTED)),
    sa.select(RC.c.name, RC.c.id, *_CURRENT)
    .join(RC, RC.c.id == INV.c.resource_class_id)
    .where(_MINE, RC.c.name.not_in(_WANTED))))


def get_all(conn: sa.Connection, provider_id: int) -> dict[str, tables.RowMap]:
    """{resource class name: inventory row} of one provider."""
    rows = conn.execute(_GET_ALL, {'provider_id': provider_id}).mappings().all()
    return {r['resource_class']: r for r in rows}


class InUse(errors.Conflict):
    """Allocations hold a class a write would remove. Handlers word it
    after the call, as upstream does ("update conflict: ...")."""
    code = errors.INVENTORY_INUSE


def _in_use_error(provider_uuid: str, classes: Iterable[str]) -> InUse:
    # Clients (nova's report client) match this text: keep its shape.
    return InUse("Inventory for '%s' on resource provider '%s' in use."
                 % (', '.join(classes), provider_uuid))


def _check_not_in_use(conn: sa.Connection, provider: Mapping[str, Any],
                      class_ids_by_name: Mapping[str, int]) -> None:
    if not class_ids_by_name:
        return
    used = conn.execute(
        sa.select(ALLOC.c.resource_class_id).distinct()
        .where(ALLOC.c.resource_provider_id == provider['id'],
               ALLOC.c.resource_class_id.in_(class_ids_by_name.values()))).scalars().all()
    if used:
        # upstream names them in resource class id order (VCPU before DISK_GB)
        names = [n for n, i in sorted(class_ids_by_name.items(), key=lambda kv: kv[1])
                 if i in set(used)]
        # named as stored, as upstream (on MariaDB the path may spell it otherwise)
        stored = conn.execute(sa.select(tables.resource_providers.c.uuid).where(
            tables.resource_providers.c.id == provider['id'])).scalar_one()
        raise _in_use_error(stored, names)


def _values(inv: Inventory) -> dict[str, Any]:
    # As the column stores it: a ratio given as 16 is read back as 16.0.
    return dict({f: inv[f] for f in FIELDS}, allocation_ratio=float(inv['allocation_ratio']))


def take_with_current(conn: sa.Connection, uuid: str, generation: int,
                      inventories: Mapping[str, Inventory]
                      ) -> tuple[dict[str, Any], Sequence[tables.RowMap]]:
    """``providers.take``, and what ``write_all`` compares ``inventories``
    with (PostgreSQL: in the same round trip): (provider, current)."""
    return providers.take_and_read(conn, uuid, generation, _CLASSES_AND_CURRENT,
                                   {'names': sorted(inventories)})


def write_all(conn: sa.Connection, provider: Mapping[str, Any],
              inventories: Mapping[str, Inventory],
              current: Iterable[tables.RowMap] | None = None) -> dict[str, Inventory]:
    """Make ``inventories`` ({rc: fields}) the provider's whole inventory,
    leaving its generation to the caller; returns {rc: row} as stored.
    ``current``: what ``take_with_current`` read, if it did.

    Classes left out are removed (409 placement.inventory.inuse if they are
    allocated); a total lowered below what is allocated is accepted.
    """
    if current is None:
        current = conn.execute(_CLASSES_AND_CURRENT, {
            'provider_id': provider['id'], 'names': sorted(inventories)}).mappings()
    class_ids: dict[str, int] = {}
    present: dict[str, tables.RowMap] = {}
    for row in current:
        class_ids[row['resource_class']] = row['class_id']
        if row['total'] is not None:   # (a column no inventory leaves NULL)
            present[row['resource_class']] = row
    unknown = set(inventories) - set(class_ids)
    if unknown:
        raise errors.ResourceClassNotFound('No such resource class %s.' % min(unknown))
    gone = {rc: row['class_id'] for rc, row in present.items()
            if rc not in inventories}
    _check_not_in_use(conn, provider, gone)
    changes.note(conn, [provider['id']])
    now = api.utcnow()
    if gone:
        conn.execute(INV.delete().where(
            INV.c.resource_provider_id == provider['id'],
            INV.c.resource_class_id.in_(gone.values())))
    new_rows: list[dict[str, Any]] = []
    stored: dict[str, Inventory] = {}
    for rc, inv in inventories.items():
        values = _values(inv)
        if rc not in present:
            new_rows.append(dict(values, resource_provider_id=provider['id'],
                                 resource_class_id=class_ids[rc], created_at=now))
            stored[rc] = dict(values, created_at=now, updated_at=None)
        elif any(present[rc][f] != values[f] for f in FIELDS):
            conn.execute(INV.update().where(INV.c.resource_provider_id == provider['id'],
                                            INV.c.resource_class_id == class_ids[rc])
                         .values(updated_at=now, **values))
            stored[rc] = dict(values, created_at=present[rc]['created_at'], updated_at=now)
        else:
            stored[rc] = present[rc]
    if new_rows:
        api.insert_later(conn, INV, new_rows)
    return stored


def replace_inventories(conn: sa.Connection, provider: Mapping[str, Any],
                        inventories: Mapping[str, Inventory],
                        generation: int | None = None) -> int:
    """``write_all``, then the generation: it must be ``generation`` (by
    default the row's). Returns the new generation."""
    write_all(conn, provider, inventories)
    return providers.increment_generation(
        conn, provider['id'], provider['generation'] if generation is None else generation)


def add_inventory(conn: sa.Connection, provider: Mapping[str, Any], rc: str,
                  inv: Inventory) -> int:
    """Add one class (POST); 409 concurrent_update if it already has one."""
    class_id = resource_classes.ids_by_name(conn, [rc])[rc]
    changes.note(conn, [provider['id']])
    try:
        with conn.begin_nested():
            conn.execute(INV.insert().values(
                resource_provider_id=provider['id'], resource_class_id=class_id,
                created_at=api.utcnow(), **_values(inv)))
    except api.CONSTRAINT_VIOLATION:
        raise providers.ConcurrentUpdate(
            'Update conflict: inventory for %s on resource provider %s '
            'already exists.' % (rc, provider['uuid']))
    return providers.increment_generation(conn, provider['id'], provider['generation'])


def update_inventory(conn: sa.Connection, provider: Mapping[str, Any], rc: str,
                     inv: Inventory, generation: int) -> int:
    """Change one existing class (PUT); 404 if there is no such class, 400
    if the provider has none of it."""
    try:
        class_id = resource_classes.ids_by_name(conn, [rc])[rc]
    except errors.ResourceClassNotFound as e:
        # As upstream: the class in the path is a thing not found.
        raise errors.NotFound(e.message)
    changes.note(conn, [provider['id']])
    result = conn.execute(
        INV.update().where(INV.c.resource_provider_id == provider['id'],
                           INV.c.resource_class_id == class_id)
        .values(updated_at=api.utcnow(), **_values(inv)))
    if result.rowcount != 1:
        raise errors.BadRequest(
            'No inventory record with resource class for resource provider %s: '
            'No inventory of class %s found.' % (provider['uuid'], rc))
    return providers.increment_generation(conn, provider['id'], generation)


def delete_inventory(conn: sa.Connection, provider: Mapping[str, Any], rc: str) -> int:
    """Remove one class; 404 if absent, 409 inventory.inuse if allocated."""
    row = get_all(conn, provider['id']).get(rc)
    if row is None:
        # (upstream's words: why, after what; an unknown class says so)
        try:
            resource_classes.get(conn, rc)
            why = 'No inventory of class %s found for delete' % rc
        except errors.NotFound as e:
            why = e.message
        raise errors.NotFound('No inventory of class %s found for delete: %s' % (rc, why))
    _check_not_in_use(conn, provider, {rc: row['resource_class_id']})
    changes.note(conn, [provider['id']])
    conn.execute(INV.delete().where(INV.c.id == row['id']))
    return providers.increment_generation(conn, provider['id'], provider['generation'])
