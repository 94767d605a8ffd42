"""Resource providers: lookup and the generation compare-and-swap.

Every write to a provider's inventories, traits, aggregates or allocations
goes through ``increment_generation``: an UPDATE guarded by the generation
the writer read, so a concurrent writer makes it touch no row and the
request fails with placement.concurrent_update instead of overwriting.
"""
import sqlalchemy as sa

from placement_server import errors
from placement_server.db import api
from placement_server.db import tables

RP = tables.resource_providers


class ConcurrentUpdate(errors.Conflict):
    code = errors.CONCURRENT_UPDATE


def get(conn, uuid, for_update=False):
    """The provider row (id, uuid, name, generation, parent/root ids) or 404."""
    query = sa.select(RP).where(RP.c.uuid == uuid)
    if for_update:
        query = query.with_for_update()
    row = conn.execute(query).mappings().first()
    if row is None:
        # Upstream gives this 404 no specific code.
        raise errors.NotFound('No resource provider with uuid %s found' % uuid)
    return row


def check_generation(row, expected):
    """409 concurrent_update unless the provider ``row`` (read for update)
    is at generation ``expected``. Compared in Python first, so an absurd
    client value (2**70) is a 409, not a database overflow."""
    if row['generation'] != expected:
        raise ConcurrentUpdate(
            "Resource provider's generation already changed. Please update "
            "the generation and try again.")


def increment_generation(conn, provider_id, expected):
    """generation += 1 if it is still ``expected``; else 409 concurrent_update.

    Returns the new generation.
    """
    if not 0 <= expected < 2 ** 31 - 1:
        # No provider has such a generation (the column is 32-bit): a
        # conflict, not a database overflow error.
        raise ConcurrentUpdate('resource provider generation conflict: no '
                               'provider has generation %d.' % expected)
    result = conn.execute(
        RP.update()
        .where(RP.c.id == provider_id, RP.c.generation == expected)
        .values(generation=expected + 1, updated_at=api.utcnow()))
    if result.rowcount != 1:
        raise ConcurrentUpdate(
            'resource provider generation conflict: the provider was updated '
            'by another request since generation %d was read; refresh and '
            'try again.' % expected)
    return expected + 1


def replace_links(conn, column, provider_id, wanted):
    """Make the provider's rows in ``column``'s table (the provider-trait or
    provider-aggregate links) name exactly the ids ``wanted``; returns
    whether anything changed."""
    link = column.table
    mine = link.c.resource_provider_id == provider_id
    have = set(conn.scalars(sa.select(column).where(mine)))
    gone, new = have - wanted, wanted - have
    if gone:
        conn.execute(link.delete().where(mine, column.in_(sorted(gone))))
    if new:
        now = api.utcnow()
        conn.execute(link.insert(), [{'resource_provider_id': provider_id, column.name: i,
                                      'created_at': now} for i in sorted(new)])
    return bool(gone or new)


RPA = tables.resource_provider_aggregates
RPT = tables.resource_provider_traits
_PARENT = RP.alias('parent')
_ROOT = RP.alias('root')


def view_query():
    """SELECT of what the API shows of a provider: its row plus the uuids
    of its parent and root (one query, two self-joins)."""
    return (sa.select(RP.c.id, RP.c.uuid, RP.c.name, RP.c.generation,
                      RP.c.created_at, RP.c.updated_at,
                      _PARENT.c.uuid.label('parent_provider_uuid'),
                      _ROOT.c.uuid.label('root_provider_uuid'))
            .select_from(RP.outerjoin(_PARENT, RP.c.parent_provider_id == _PARENT.c.id)
                         .outerjoin(_ROOT, RP.c.root_provider_id == _ROOT.c.id)))


def get_view(conn, uuid):
    """The provider as the API shows it (a Row: attribute access), or 404."""
    row = conn.execute(view_query().where(RP.c.uuid == uuid)).first()
    if row is None:
        # Upstream gives this 404 no specific code.
        raise errors.NotFound('No resource provider with uuid %s found' % uuid)
    return row


def _parent_row(conn, parent_uuid):
    # Locked: a concurrent delete of the parent, or a concurrent move that
    # would close a loop, waits for this transaction (or it for them).
    row = conn.execute(sa.select(RP).where(RP.c.uuid == parent_uuid)
                       .with_for_update()).mappings().first()
    if row is None:
        raise errors.BadRequest('The provider specified by parent_provider_uuid '
                                '(%s) does not exist.' % parent_uuid)
    return row


def _name_conflict(name):
    return errors.Conflict('Conflicting resource provider name: %s already exists.'
                           % name, code=errors.DUPLICATE_NAME)


def create(conn, uuid, name, parent_uuid=None):
    """Insert a provider (a root, or a child of ``parent_uuid``); its id.

    A uuid or name clash is 409 placement.duplicate_name; the detail says
    which, as clients tell the two apart by it.
    """
    parent = _parent_row(conn, parent_uuid) if parent_uuid else None
    try:
        with conn.begin_nested():
            provider_id = conn.execute(RP.insert().values(
                uuid=uuid, name=name, generation=0, created_at=api.utcnow(),
                parent_provider_id=parent['id'] if parent else None,
                root_provider_id=parent['root_provider_id'] if parent else None,
            )).inserted_primary_key[0]
    except sa.exc.IntegrityError:
        if conn.execute(sa.select(RP.c.id).where(RP.c.uuid == uuid)).first():
            raise errors.Conflict('Conflicting resource provider uuid: %s already '
                                  'exists.' % uuid, code=errors.DUPLICATE_NAME)
        raise _name_conflict(name)
    if parent is None:
        conn.execute(RP.update().where(RP.c.id == provider_id)
                     .values(root_provider_id=provider_id))
    return provider_id


def _subtree_ids(conn, row):
    """Ids of ``row`` and every provider below it (one query for the tree)."""
    children = {}
    for pid, parent_id in conn.execute(
            sa.select(RP.c.id, RP.c.parent_provider_id)
            .where(RP.c.root_provider_id == row['root_provider_id'])):
        children.setdefault(parent_id, []).append(pid)
    found, todo = set(), [row['id']]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, ()))
    return found


UNSET = object()


def update(conn, uuid, name, parent_uuid=UNSET, allow_reparent=False):
    """Rename and (re)parent a provider.

    Before 1.37 (``allow_reparent`` False) a parent can be set once, on a
    root, and never changed or removed. A provider cannot move below
    itself. Moving a provider moves its whole subtree to the new root.
    """
    row = get(conn, uuid, for_update=True)
    values = {'name': name, 'updated_at': api.utcnow()}
    if parent_uuid is not UNSET:
        current = row['parent_provider_id']
        parent = _parent_row(conn, parent_uuid) if parent_uuid else None
        new_parent_id = parent['id'] if parent else None
        if new_parent_id != current:
            if current is not None and not allow_reparent:
                raise errors.BadRequest('Re-parenting a provider is not currently '
                                        'allowed.')
            subtree = _subtree_ids(conn, row)
            if parent is not None and parent['id'] in subtree:
                raise errors.BadRequest('Creating a loop in the provider tree is '
                                        'not allowed.')
            new_root = parent['root_provider_id'] if parent else row['id']
            values['parent_provider_id'] = new_parent_id
            if new_root != row['root_provider_id']:
                conn.execute(RP.update().where(RP.c.id.in_(subtree))
                             .values(root_provider_id=new_root))
    try:
        with conn.begin_nested():
            conn.execute(RP.update().where(RP.c.id == row['id']).values(**values))
    except sa.exc.IntegrityError:
        raise _name_conflict(name)


def delete(conn, uuid):
    """Delete a childless provider without allocations, and what it owns
    (inventories, trait and aggregate associations)."""
    row = get(conn, uuid, for_update=True)
    has_child = conn.execute(sa.select(RP.c.id).where(
        RP.c.parent_provider_id == row['id']).limit(1)).first()
    if has_child:
        raise errors.Conflict('Unable to delete parent resource provider %s: it has '
                              'child resource providers.' % uuid,
                              code=errors.PROVIDER_CANNOT_DELETE_PARENT)
    alloc = tables.allocations
    in_use = conn.execute(sa.select(alloc.c.id).where(
        alloc.c.resource_provider_id == row['id']).limit(1)).first()
    if in_use:
        raise errors.Conflict('Unable to delete resource provider %s: resource '
                              'provider has allocations.' % uuid,
                              code=errors.PROVIDER_IN_USE)
    for table in (tables.inventories, RPT, RPA):
        conn.execute(table.delete().where(table.c.resource_provider_id == row['id']))
    # A root's root_provider_id points at itself: clear it before the delete
    # so databases that check the self-reference per row accept it.
    try:
        with conn.begin_nested():
            conn.execute(RP.update().where(RP.c.id == row['id'])
                         .values(root_provider_id=None))
            conn.execute(RP.delete().where(RP.c.id == row['id']))
    except sa.exc.IntegrityError:
        # A child or an allocation arrived since the checks above.
        raise errors.Conflict('Unable to delete resource provider %s: it is in use.'
                              % uuid, code=errors.PROVIDER_IN_USE)
