"""Resource providers: lookup and the generation compare-and-swap.

Every write to a provider's inventories, traits, aggregates or allocations
goes through ``increment_generation`` or ``take``: an UPDATE guarded by the
generation the writer read (or was given), so a concurrent writer makes it
touch no row and the request fails with placement.concurrent_update
instead of overwriting.
"""
import collections
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql import visitors

from placement_server import errors
from placement_server.db import api
from placement_server.db import changes
from placement_server.db import tables
from placement_server.db.prepared import prepared

RP = tables.resource_providers


class ConcurrentUpdate(errors.Conflict):
    code = errors.CONCURRENT_UPDATE


_GET = prepared(sa.select(RP).where(RP.c.uuid == sa.bindparam('uuid')))
_GET_FOR_UPDATE = _GET.with_for_update()


def get(conn: sa.Connection, uuid: str, for_update: bool = False,
        lead: str | None = None) -> tables.RowMap:
    """The provider row (id, uuid, name, generation, parent/root ids) or 404.

    ``lead`` (with ``%s`` for the uuid) goes before the 404's message: some
    of upstream's reads say what they looked for first (``READ_LEADS``)."""
    row = conn.execute(_GET_FOR_UPDATE if for_update else _GET,
                       {'uuid': uuid}).mappings().first()
    if row is None:
        # Upstream gives this 404 no specific code.
        raise errors.NotFound(((lead % uuid) if lead else '')
                              + 'No resource provider with uuid %s found' % uuid)
    return row


# What upstream's reads of a provider's parts put before "No resource
# provider with uuid X found" when the provider is missing.
READ_LEADS = {
    'usages': 'No resource provider with uuid %s found: ',
    'traits': 'No resource provider with uuid %s found: ',
    'inventories': 'No resource provider with uuid %s found : ',
    'allocations': "Resource provider '%s' not found: ",
}


# How a 409 concurrent_update is worded, as upstream words it (inventories;
# CHANGED: traits and aggregates). Clients compare the texts.
CONFLICT = 'resource provider generation conflict'
CHANGED = ("Resource provider's generation already changed. Please update the "
           "generation and try again.")


# The statements every write sends, built once: building one costs
# SQLAlchemy more CPU than the database takes to run it.
_BUMP = (RP.update()
         .where(RP.c.id == sa.bindparam('provider_id'),
                RP.c.generation == sa.bindparam('expected'))
         .values(generation=sa.bindparam('next'), updated_at=sa.bindparam('now')))
_INSERT = RP.insert()
# ``take``: the compare-and-swap by uuid, handing back the provider's id.
# MariaDB has no UPDATE ... RETURNING: LAST_INSERT_ID(id) leaves the id in
# the statement's answer (the driver's lastrowid) instead.
_TAKE = (RP.update()
         .where(RP.c.uuid == sa.bindparam('provider_uuid'),
                RP.c.generation == sa.bindparam('expected'))
         .values(generation=RP.c.generation + 1, updated_at=sa.bindparam('now')))
_TAKE_RETURNING = prepared(_TAKE.returning(RP.c.id))
_TAKE_MYSQL = _TAKE.values(id=sa.func.last_insert_id(RP.c.id))


def _check_range(conn: sa.Connection, uuid: str, expected: int, conflict: str) -> None:
    if not 0 <= expected < 2 ** 31 - 1:
        # No provider has such a generation (the column is 32-bit): a
        # conflict, not a database overflow error; a missing provider is
        # still a 404 first.
        raise ConcurrentUpdate(conflict.format(
            expected=expected, actual=get(conn, uuid)['generation']))


def take(conn: sa.Connection, uuid: str, expected: int,
         conflict: str = CONFLICT) -> dict[str, Any]:
    """The first statement of a write that always bumps the generation:
    generation += 1 on the provider ``uuid`` if it is at ``expected``.

    Returns {'id', 'uuid', 'generation'} (the new one); the provider's row
    stays locked until the transaction ends, as ``get(for_update=True)``
    leaves it. 404 if there is no such provider, 409 concurrent_update
    (worded by ``conflict``) if it is at another generation. One
    statement where ``get`` then ``increment_generation`` would be two.
    """
    _check_range(conn, uuid, expected, conflict)
    params = {'provider_uuid': uuid, 'expected': expected, 'now': api.utcnow()}
    if conn.dialect.name == 'mysql':
        result = conn.execute(_TAKE_MYSQL, params)
        provider_id = result.lastrowid if result.rowcount == 1 else None
    else:
        provider_id = conn.execute(_TAKE_RETURNING, params).scalar()
    if provider_id is None:
        raise ConcurrentUpdate(conflict.format(
            expected=expected, actual=get(conn, uuid)['generation']))
    changes.note(conn, [provider_id])
    return {'id': provider_id, 'uuid': uuid, 'generation': expected + 1}


def _swapped(read: visitors.ExternallyTraversible, provider_id: Any) -> Any:
    """``read`` with ``provider_id`` for its ``provider_id`` parameter."""
    def swap(element: Any, **_kw: Any) -> Any:
        if isinstance(element, sa.BindParameter) and element.key == 'provider_id':
            return provider_id
        return None
    opts: dict[str, Any] = {}
    return visitors.replacement_traverse(read, opts, swap)


def _taken_and_read(read: sa.Select[Any]) -> sa.Select[Any]:
    """PostgreSQL: ``take``'s UPDATE as a CTE and ``read`` joined to it
    laterally, for the row taken: one statement, no row at all when
    nothing was taken. (The read sees the tables as they were before the
    UPDATE, which changes none of what it reads.)"""
    taken = _TAKE.returning(RP.c.id.label('taken_id')).cte('taken')
    rows = _swapped(read, taken.c.taken_id).subquery('read').lateral()
    return prepared(sa.select(taken.c.taken_id, rows)
                    .select_from(taken.outerjoin(rows, sa.true())))


def _read_after_take(read: Any) -> sa.CompoundSelect[Any]:
    """MySQL: ``read`` for the provider the statement before took (its id
    is LAST_INSERT_ID(), see ``_TAKE_MYSQL``), after one row saying
    whether it took one (ROW_COUNT()) and which, NULLs for the read's
    columns. Sent with the take in one round trip (``api.RIDES_PENDING``).
    (A UNION of the row and the read, not a join of the two: MariaDB
    materialises a derived table, a tenth of the statement's cost.)"""
    swapped = _swapped(read, sa.func.last_insert_id())
    parts: list[Any] = (list(swapped.selects) if isinstance(swapped, sa.CompoundSelect)
                        else [swapped])
    taken = sa.select(*[sa.null().label(c.key) for c in read.selected_columns],
                      sa.func.row_count().label('taken'),
                      sa.func.last_insert_id().label('taken_id'))
    return (sa.union_all(taken, *[part.add_columns(sa.null(), sa.null()) for part in parts])
            .execution_options(**{api.RIDES_PENDING: True}))


_TAKEN_AND_READ: dict[tuple[str, Any], Any] = {}
_TAKE_TEXT: dict[str, Any] = {}


def take_and_read(conn: sa.Connection, uuid: str, expected: int, read: Any,
                  params: Mapping[str, Any], conflict: str = CONFLICT
                  ) -> tuple[dict[str, Any], Sequence[tables.RowMap]]:
    """``take``, and ``read`` (a SELECT whose ``provider_id`` parameter is
    the provider's id, whose first column is never NULL) for the provider
    taken, with ``params``: (the provider as ``take`` gives it, the read's
    rows as mappings). One round trip on PostgreSQL (one statement) and
    on MariaDB through PyMySQL (two)."""
    dialect = conn.dialect.name
    if dialect != 'postgresql' and not api.folds_the_record(conn):
        provider = take(conn, uuid, expected, conflict)
        return provider, conn.execute(read, dict(params, provider_id=provider['id'])
                                      ).mappings().all()
    _check_range(conn, uuid, expected, conflict)
    statement = _TAKEN_AND_READ.get((dialect, read))
    if statement is None:
        statement = _TAKEN_AND_READ[dialect, read] = (
            _taken_and_read(read) if dialect == 'postgresql' else _read_after_take(read))
    take_params = {'provider_uuid': uuid, 'expected': expected, 'now': api.utcnow()}
    if dialect == 'postgresql':
        rows = conn.execute(statement, dict(params, **take_params)).mappings().all()
    else:
        compiled = _TAKE_TEXT.get(dialect)
        if compiled is None:
            compiled = _TAKE_TEXT[dialect] = _TAKE_MYSQL.compile(dialect=conn.dialect)
        api.send_later(conn, api.rendered(conn, compiled.string,
                                          compiled.construct_params(take_params)))
        rows = conn.execute(statement, params).mappings().all()
        marker = next(row for row in rows if row['taken'] is not None)
        rows = rows if marker['taken'] == 1 else []
        provider_id = marker['taken_id']
    if not rows:
        raise ConcurrentUpdate(conflict.format(
            expected=expected, actual=get(conn, uuid)['generation']))
    if dialect == 'postgresql':
        provider_id = rows[0]['taken_id']
    changes.note(conn, [provider_id])
    first = read.selected_columns[0].key
    return ({'id': provider_id, 'uuid': uuid, 'generation': expected + 1},
            [row for row in rows if row[first] is not None])


def increment_generation(conn: sa.Connection, provider_id: int, expected: int) -> int:
    """generation += 1 if it is still ``expected``; else 409 concurrent_update.

    Returns the new generation.
    """
    if not 0 <= expected < 2 ** 31 - 1:
        raise ConcurrentUpdate(CONFLICT)
    changes.note(conn, [provider_id])
    result = conn.execute(_BUMP, {'provider_id': provider_id, 'expected': expected,
                                  'next': expected + 1, 'now': api.utcnow()})
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            'resource provider generation conflict: the provider was updated '
            'by another request since generation %d was read; refresh and '
            'try again.' % expected)
    return expected + 1


def bump_locked(conn: sa.Connection, rows: Iterable[Mapping[str, Any]]) -> None:
    """generation += 1 on providers this transaction holds locked
    (``get(..., for_update=True)``; rows with their id and generation).

    No other writer can move a locked row, so in a folded write the
    UPDATE, whose answer nobody needs, waits for the change record's
    round trip (``api.send_later``); a Galera node's conflicting commit
    still fails this one at its COMMIT, which is replayed. Elsewhere each
    is ``increment_generation``, checked at once.
    """
    if not api.folded(conn):
        for row in rows:
            increment_generation(conn, row['id'], row['generation'])
        return
    ids = sorted(row['id'] for row in rows)
    changes.note(conn, ids)
    api.send_later(conn, api.rendered(
        conn, 'UPDATE resource_providers SET generation = generation + 1, '
              'updated_at = %%(now)s WHERE id IN (%s)' % ', '.join(map(str, ids)),
        {'now': api.utcnow()}))


def _links_query(column: sa.Column[Any], key: sa.Column[Any]) -> Any:
    """One statement for ``replace_links``: (key, id, linked) for each wanted
    key that exists, and for each key linked but not wanted."""
    link, names = column.table, key.table
    mine = link.c.resource_provider_id == sa.bindparam('provider_id')
    wanted: sa.BindParameter[Any] = sa.bindparam('wanted', expanding=True)
    return prepared(sa.union_all(
        sa.select(key.label('key'), names.c.id.label('id'),
                  sa.exists().where(mine, column == names.c.id)
                  .correlate_except(link).label('linked'))
        .where(key.in_(wanted)),
        sa.select(key, names.c.id, sa.true())
        .join(link, column == names.c.id).where(mine, key.not_in(wanted))))


_LINKS: dict[sa.Column[Any], Any] = {}


def _links(column: sa.Column[Any], key: sa.Column[Any]) -> Any:
    query = _LINKS.get(column)
    if query is None:
        query = _LINKS[column] = _links_query(column, key)
    return query


# What a link write calls for wanted keys not stored yet: {key: id} (or raises).
Unknown = Callable[[set[str]], Mapping[str, int]]


def replace_links(conn: sa.Connection, column: sa.Column[Any], key: sa.Column[Any],
                  provider_id: int, wanted: set[str], unknown: Unknown) -> bool:
    """Make the provider's rows in ``column``'s table (the provider-trait or
    provider-aggregate links) name exactly the ``wanted`` keys (trait
    names, aggregate uuids: ``key`` is that column of the named table).
    ``unknown(keys)`` gives {key: id} for wanted keys not stored yet (or
    raises). Returns whether anything changed."""
    rows = conn.execute(_links(column, key), {'provider_id': provider_id,
                                              'wanted': sorted(wanted)}).mappings()
    return _replace_links(conn, column, provider_id, wanted, unknown, rows)


def take_and_replace_links(conn: sa.Connection, uuid: str, expected: int,
                           column: sa.Column[Any], key: sa.Column[Any], wanted: set[str],
                           unknown: Unknown,
                           conflict: str = CONFLICT) -> tuple[dict[str, Any], bool]:
    """``take`` and ``replace_links`` (PostgreSQL: the take and the read in
    one round trip); returns (the provider as ``take`` gives it, whether
    the links changed)."""
    provider, rows = take_and_read(conn, uuid, expected, _links(column, key),
                                   {'wanted': sorted(wanted)}, conflict)
    return provider, _replace_links(conn, column, provider['id'], wanted, unknown, rows)


def _replace_links(conn: sa.Connection, column: sa.Column[Any], provider_id: int,
                   wanted: set[str], unknown: Unknown, rows: Iterable[tables.RowMap]) -> bool:
    ids: dict[str, int] = {}
    have: set[int] = set()
    for row in rows:
        if row['key'] in wanted:
            ids[row['key']] = row['id']
        if row['linked']:
            have.add(row['id'])
    if len(ids) < len(wanted):
        ids.update(unknown(wanted - set(ids)))
    want = set(ids.values())
    gone, new = have - want, want - have
    link = column.table
    if gone:
        conn.execute(link.delete().where(link.c.resource_provider_id == provider_id,
                                         column.in_(sorted(gone))))
    if new:
        now = api.utcnow()
        api.insert_later(conn, link, [{'resource_provider_id': provider_id, column.name: i,
                                       'created_at': now} for i in sorted(new)])
    if gone or new:
        changes.note(conn, [provider_id])
    return bool(gone or new)


RPA = tables.resource_provider_aggregates
RPT = tables.resource_provider_traits
_PARENT = RP.alias('parent')
_ROOT = RP.alias('root')


def view_query() -> sa.Select[Any]:
    """SELECT of what the API shows of a provider: its row plus the uuids
    of its parent and root (one query, two self-joins)."""
    return (sa.select(RP.c.id, RP.c.uuid, RP.c.name, RP.c.generation,
                      RP.c.created_at, RP.c.updated_at,
                      _PARENT.c.uuid.label('parent_provider_uuid'),
                      _ROOT.c.uuid.label('root_provider_uuid'))
            .select_from(RP.outerjoin(_PARENT, RP.c.parent_provider_id == _PARENT.c.id)
                         .outerjoin(_ROOT, RP.c.root_provider_id == _ROOT.c.id)))


def get_view(conn: sa.Connection, uuid: str) -> Any:
    """The provider as the API shows it (a Row: attribute access), or 404."""
    row = conn.execute(view_query().where(RP.c.uuid == uuid)).first()
    if row is None:
        # Upstream gives this 404 no specific code.
        raise errors.NotFound('No resource provider with uuid %s found' % uuid)
    return row


class Refused(errors.BadRequest):
    """A create or update the tree's rules refuse (400). The handler says
    which provider; the detail is worded as upstream's, which operators and
    upstream's tests match on."""

    def __init__(self, action: str, reason: str) -> None:
        super().__init__('Object action %s failed because: %s' % (action, reason))


def _parent_row(conn: sa.Connection, parent_uuid: str, action: str) -> tables.RowMap:
    # Locked: a concurrent delete of the parent, or a concurrent move that
    # would close a loop, waits for this transaction (or it for them).
    row = conn.execute(sa.select(RP).where(RP.c.uuid == parent_uuid)
                       .with_for_update()).mappings().first()
    if row is None:
        raise Refused(action, 'parent provider UUID does not exist.')
    return row


def _name_conflict(name: str) -> errors.Conflict:
    return errors.Conflict('Conflicting resource provider name: %s already exists.'
                           % name, code=errors.DUPLICATE_NAME)


# A provider as ``view_query`` reads it, for one built without reading it.
ViewRow = collections.namedtuple('ViewRow', 'id uuid name generation created_at updated_at '
                                            'parent_provider_uuid root_provider_uuid')


def clash_error(conn: sa.Connection, uuid: str, name: str) -> errors.Conflict:
    """The 409 placement.duplicate_name for a create that broke a unique
    constraint; the detail says whether the uuid or the name is taken, as
    clients tell the two apart by it."""
    if conn.execute(sa.select(RP.c.id).where(RP.c.uuid == uuid)).first():
        return errors.Conflict('Conflicting resource provider uuid: %s already '
                               'exists.' % uuid, code=errors.DUPLICATE_NAME)
    return _name_conflict(name)


# The id the connection's last INSERT drew, per dialect.
_LAST_ID = {'postgresql': 'lastval()', 'mysql': 'LAST_INSERT_ID()',
            'sqlite': 'last_insert_rowid()'}


def create(conn: sa.Connection, uuid: str, name: str, parent_uuid: str | None = None) -> Any:
    """Insert a provider (a root, or a child of ``parent_uuid``); its row as
    ``get_view`` reads it, without the id for a new root.

    A taken uuid or name raises one of ``api.CONSTRAINT_VIOLATION``, for a
    new root when its write commits (``clash_error`` words the 409): the
    insert runs without a savepoint (two round trips fewer on every
    create), so its transaction is lost either way.
    """
    if parent_uuid == uuid:
        raise Refused('create', 'parent provider UUID cannot be same as UUID. Please '
                                'set parent provider UUID to None if there is no parent.')
    now = api.utcnow()
    if not parent_uuid:
        # Nothing reads a new root before its write ends: its row, made its
        # own root, waits for the change record's round trip, which finds
        # it by uuid. Everything the view shows is known.
        api.insert_later(conn, RP, [{'uuid': uuid, 'name': name, 'generation': 0,
                                     'created_at': now}])
        api.send_later(conn, 'UPDATE resource_providers SET root_provider_id = id '
                             'WHERE id = %s' % _LAST_ID[conn.dialect.name])
        changes.note_created(conn, uuid)
        return ViewRow(None, uuid, name, 0, now, None, None, uuid)
    parent = _parent_row(conn, parent_uuid, 'create')
    key = conn.execute(_INSERT, {
        'uuid': uuid, 'name': name, 'generation': 0, 'created_at': now,
        'parent_provider_id': parent['id'], 'root_provider_id': parent['root_provider_id'],
    }).inserted_primary_key
    assert key is not None
    provider_id = key[0]
    changes.note(conn, [provider_id])
    return get_view(conn, uuid)


def _subtree_ids(conn: sa.Connection, row: Mapping[str, Any]) -> set[int]:
    """Ids of ``row`` and every provider below it (one query for the tree)."""
    children: dict[int | None, list[int]] = {}
    for pid, parent_id in conn.execute(
            sa.select(RP.c.id, RP.c.parent_provider_id)
            .where(RP.c.root_provider_id == row['root_provider_id'])):
        children.setdefault(parent_id, []).append(pid)
    found: set[int] = set()
    todo = [row['id']]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


UNSET = object()


def update(conn: sa.Connection, uuid: str, name: str, parent_uuid: Any = UNSET,
           allow_reparent: bool = False) -> None:
    """Rename and (re)parent a provider.

    Before 1.37 (``allow_reparent`` False) a parent can be set once, on a
    root, and never changed or removed. A provider cannot move below
    itself. Moving a provider moves its whole subtree to the new root.
    """
    row = get(conn, uuid, for_update=True)
    values: dict[str, Any] = {'name': name, 'updated_at': api.utcnow()}
    changes.note(conn, [row['id']])
    if parent_uuid is not UNSET:
        current = row['parent_provider_id']
        # (upstream calls a missing parent a failed 'create' here too)
        parent = _parent_row(conn, parent_uuid, 'create') if parent_uuid else None
        new_parent_id = parent['id'] if parent else None
        if new_parent_id != current:
            if current is not None and not allow_reparent:
                raise Refused('update', '%s a provider is not currently allowed.'
                              % ('re-parenting' if parent else 'un-parenting'))
            subtree = _subtree_ids(conn, row)
            if parent is not None and parent['id'] in subtree:
                raise Refused('update', 'creating loop in the provider tree is not '
                                        'allowed.')
            new_root = parent['root_provider_id'] if parent else row['id']
            values['parent_provider_id'] = new_parent_id
            if new_root != row['root_provider_id']:
                changes.note(conn, subtree)
                conn.execute(RP.update().where(RP.c.id.in_(subtree))
                             .values(root_provider_id=new_root))
    try:
        with conn.begin_nested():
            conn.execute(RP.update().where(RP.c.id == row['id']).values(**values))
    except api.CONSTRAINT_VIOLATION:
        raise _name_conflict(name)


def delete(conn: sa.Connection, uuid: str) -> None:
    """Delete a childless provider without allocations, and what it owns
    (inventories, trait and aggregate associations)."""
    row = get(conn, uuid, for_update=True)
    has_child = conn.execute(sa.select(RP.c.id).where(
        RP.c.parent_provider_id == row['id']).limit(1)).first()
    if has_child:
        raise errors.Conflict('Unable to delete parent resource provider %s: It has '
                              'child resource providers.' % uuid,
                              code=errors.PROVIDER_CANNOT_DELETE_PARENT)
    alloc = tables.allocations
    in_use = conn.execute(sa.select(alloc.c.id).where(
        alloc.c.resource_provider_id == row['id']).limit(1)).first()
    if in_use:
        raise errors.Conflict('Unable to delete resource provider %s: Resource '
                              'provider has allocations.' % uuid,
                              code=errors.PROVIDER_IN_USE)
    changes.note(conn, [row['id']])
    for table in (tables.inventories, RPT, RPA):
        conn.execute(table.delete().where(table.c.resource_provider_id == row['id']))
    # A root's root_provider_id points at itself: clear it before the delete
    # so databases that check the self-reference per row accept it.
    try:
        with conn.begin_nested():
            conn.execute(RP.update().where(RP.c.id == row['id'])
                         .values(root_provider_id=None))
            conn.execute(RP.delete().where(RP.c.id == row['id']))
    except api.CONSTRAINT_VIOLATION:
        # A child or an allocation arrived since the checks above.
        raise errors.Conflict('Unable to delete resource provider %s: it is in use.'
                              % uuid, code=errors.PROVIDER_IN_USE)
