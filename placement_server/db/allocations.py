"""Allocations: what consumers hold of providers' inventories.

``write`` replaces the allocations of one or more consumers in the
caller's transaction: it locks the providers involved, checks every
claim against capacity and min_unit/max_unit/step_size in one query,
writes, and bumps each provider's generation once and each consumer's
generation once. ``write_or_replay`` runs it in a fresh transaction, and
has the request replayed (``placement_server.retry``) when a provider
generation moved under it (another writer won, or a consumer, project or
user it creates was created meanwhile), so concurrent claims serialize
instead of failing.
"""
import collections
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import logging
from typing import Any

import sqlalchemy as sa

from placement_server import errors
from placement_server import retry
from placement_server.db import api
from placement_server.db import changes
from placement_server.db import consumers
from placement_server.db import inventories
from placement_server.db import providers
from placement_server.db import tables
from placement_server.db.prepared import prepared

LOG = logging.getLogger(__name__)

ALLOC = tables.allocations
INV = tables.inventories
RP = tables.resource_providers
RC = tables.resource_classes

# A consumer_generation nobody checks (requests before 1.28).
UNCHECKED = object()


class ProviderGenerationConflict(providers.ConcurrentUpdate):
    """A provider changed between our read and our write: replay the write."""


@dataclasses.dataclass
class ConsumerAllocations:
    """One consumer's wanted allocations: {provider uuid: {class: used}}.

    Empty ``allocations`` removes the consumer's allocations (and the
    consumer). ``generation`` is what the client expects (None: a new
    consumer; UNCHECKED: no expectation). ``consumer_type`` None keeps
    the consumer's type.
    """
    consumer_uuid: str
    allocations: dict[str, dict[str, int]]
    project_id: str
    user_id: str
    generation: object = UNCHECKED
    consumer_type: str | None = None


# The statements of every claim, built once (lists are expanding
# parameters): building them costs SQLAlchemy more CPU than the database
# takes to run them.
# key_share: PostgreSQL's FOR NO KEY UPDATE, which still lets other
# transactions insert rows referencing these providers (traits...).
# (MySQL: a new consumer's row rides with the reads after the first,
# see ``consumers.create``)
_LOCK_PROVIDERS = (sa.select(RP).where(RP.c.uuid.in_(sa.bindparam('uuids', expanding=True)))
                   .order_by(RP.c.id).with_for_update(key_share=True)
                   .execution_options(**{api.RIDES_PENDING: True}))
# Returning the providers that lose allocations: the change sequence notes them.
# What they held comes back too: a replacement may keep an over-capacity
# provider over capacity as long as its usage does not grow.
_DELETE = (ALLOC.delete().where(ALLOC.c.consumer_id.in_(sa.bindparam('uuids', expanding=True)))
           .returning(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id, ALLOC.c.used))


def _capacity_statement() -> sa.Select[Any]:
    """Inventories of the providers and classes with what is allocated of
    them (parameters rp_ids and rc_ids)."""
    rp_ids: sa.BindParameter[Any] = sa.bindparam('rp_ids', expanding=True)
    rc_ids: sa.BindParameter[Any] = sa.bindparam('rc_ids', expanding=True)
    usage = (sa.select(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id,
                       sa.func.sum(ALLOC.c.used).label('used'))
             .where(ALLOC.c.resource_provider_id.in_(rp_ids),
                    ALLOC.c.resource_class_id.in_(rc_ids))
             .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id)
             .subquery())
    return (sa.select(INV, usage.c.used)
            .select_from(INV.outerjoin(usage, sa.and_(
                usage.c.resource_provider_id == INV.c.resource_provider_id,
                usage.c.resource_class_id == INV.c.resource_class_id)))
            .where(INV.c.resource_provider_id.in_(rp_ids),
                   INV.c.resource_class_id.in_(rc_ids)))


_CAPACITY = _capacity_statement().execution_options(**{api.RIDES_PENDING: True})


def _check_generation(request: ConsumerAllocations, consumer: Mapping[str, Any] | None) -> None:
    """409 concurrent_update when the client's consumer_generation is stale."""
    want = request.generation
    if want is UNCHECKED:
        return
    have = consumer['generation'] if consumer else None
    if want != have:
        # upstream's words: a null given to an existing consumer is "None"
        raise providers.ConcurrentUpdate(
            'consumer generation conflict - expected %s but got %s'
            % ('null' if have is None else have, want))


def _ensure_consumer(conn: sa.Connection, request: ConsumerAllocations,
                     existing: tables.RowMap | None,
                     known: dict[tuple[str, str], int]) -> tuple[Mapping[str, Any], bool]:
    """The consumer row, created (at generation 1) or updated to the
    request's project/user/type; and whether it was created.

    ``known`` is {(kind, name): id} of the names read so far (see
    ``_names_and_consumers``); projects, users and types missing from it are made.
    """
    _check_generation(request, existing)
    project = consumers.named_id(conn, 'project', request.project_id, known)
    user = consumers.named_id(conn, 'user', request.user_id, known)
    type_id = (consumers.named_id(conn, 'consumer_type', request.consumer_type, known)
               if request.consumer_type else None)
    if existing is None:
        return consumers.create(conn, request.consumer_uuid, project, user, type_id), True
    consumers.update(conn, existing, project, user, type_id)
    return existing, False


def _first_read_statement() -> sa.CompoundSelect[Any]:
    """A write's first statement, one round trip where each part would
    take one. Its rows are (kind, name, id, n1 .. n6, ratio):

    - 'consumer': the write's consumers that exist, locked (writers on a
      consumer queue here): uuid, id, then ``consumers.LOCKED_COLUMNS``'
      generation and the ids it points at;
    - 'resource_class', 'project', 'user', 'consumer_type': the ids of
      the names it uses that exist;
    - 'provider': the providers its body names, locked after the
      consumers, in id order (parameter ``providers``, empty when the
      write must lock more; see ``write``): uuid, id, generation as
      locked, generation as this statement's snapshot saw it;
    - 'inventory': what those providers hold, as the snapshot saw it:
      the columns ``_check_capacity`` reads but ``used``,
      ``allocation_ratio`` last;
    - 'usage': what is allocated of them, as the snapshot saw it:
      provider id, class id, used.

    Lists are expanding parameters: a constant statement. The locks are
    taken in CTEs, as a UNION cannot take one. A lock that waited for
    another writer gets the row as that writer left it, but the rest of
    the statement may read from before (PostgreSQL's snapshot is the
    statement's start): the two generations of a provider then differ,
    and its capacity is read again (``write``). Every write that lets a
    provider's usage grow moves its generation.

    Read before the lock was granted, a name created meanwhile by another
    request is missing here: inserting it then fails on its unique key,
    and the write is replayed (``consumers.InsertRace``)."""
    consumer = consumers.CONSUMER
    locked = (sa.select(*[consumer.c[name] for name in consumers.LOCKED_COLUMNS])
              .where(consumer.c.uuid.in_(sa.bindparam('consumer', expanding=True)))
              .with_for_update().cte('locked'))
    providers_given: sa.BindParameter[Any] = sa.bindparam('providers', expanding=True)
    held = (sa.select(RP.c.id, RP.c.uuid, RP.c.generation)
            .where(RP.c.uuid.in_(providers_given)).order_by(RP.c.id)
            .with_for_update(key_share=True).cte('held'))
    seen = RP.alias('seen')
    # The providers' inventories, and what is allocated of them by class,
    # found by provider alone: given the class too, MariaDB (whose
    # statistics of a young table say that a class has one inventory and
    # one allocation) reaches them through the class's index, all of a
    # cloud's. ``_first_read`` keeps the classes the write names.
    provider_ids = sa.select(RP.c.id).where(RP.c.uuid.in_(providers_given))

    def row(kind: str, name: Any, id_: Any, *numbers: Any, ratio: Any = None) -> sa.Select[Any]:
        # Typed: PostgreSQL types a UNION's columns branch by branch, and
        # takes the first branches' NULLs for text.
        padding = [sa.cast(sa.null(), sa.BigInteger)] * (
            len(_INVENTORY_COLUMNS) - 2 - len(numbers))
        return sa.select(sa.literal(kind), name, id_, *numbers, *padding,
                         sa.cast(sa.null(), sa.Numeric) if ratio is None else ratio)
    named = [('resource_class', RC, RC.c.name)] + [
        (kind, table, column) for kind, (table, column) in consumers.NAMED.items()]
    return sa.union_all(
        row('consumer', locked.c.uuid, locked.c.id, *[
            locked.c[name] for name in consumers.LOCKED_COLUMNS[2:]]),
        *[row(kind, column, table.c.id).where(column.in_(sa.bindparam(kind, expanding=True)))
          for kind, table, column in named],
        row('provider', held.c.uuid, held.c.id, held.c.generation, seen.c.generation)
        .select_from(held.join(seen, seen.c.id == held.c.id)),
        row('inventory', sa.null(), *[INV.c[name] for name in _INVENTORY_COLUMNS[:-1]],
            ratio=INV.c.allocation_ratio)
        .where(INV.c.resource_provider_id.in_(provider_ids)),
        row('usage', sa.null(), ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id,
            sa.cast(sa.func.sum(ALLOC.c.used), sa.BigInteger))
        .where(ALLOC.c.resource_provider_id.in_(provider_ids))
        .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id))


# An 'inventory' row of the first read, from its id column on.
_INVENTORY_COLUMNS = ('resource_provider_id', 'resource_class_id', 'total', 'reserved',
                      'min_unit', 'max_unit', 'step_size', 'allocation_ratio')
# (PostgreSQL plans it once per connection and shape of its lists: the
# plan costs more than the run)
_FIRST_READ = prepared(_first_read_statement())


@dataclasses.dataclass
class _FirstRead:
    """What a write's first statement found (``_first_read_statement``)."""
    known: dict[tuple[str, str], int]   # {(kind, name): id} of the names that exist
    unknown_classes: set[str]           # resource classes named that do not
    consumers: dict[str, tables.RowMap]  # {uuid as given: row} of those that exist
    providers: list[tables.RowMap]      # locked: id, uuid, generation
    stale: bool                         # a provider moved between snapshot and lock
    inventory: list[tables.RowMap]      # rows as ``_CAPACITY``'s


def _first_read(conn: sa.Connection, requests: Sequence[ConsumerAllocations],
                providers_to_lock: Collection[str]) -> _FirstRead:
    wanted = {'resource_class': {rc for r in requests for res in r.allocations.values()
                                 for rc in res},
              'project': {r.project_id for r in requests},
              'user': {r.user_id for r in requests},
              'consumer_type': {r.consumer_type for r in requests if r.consumer_type}}
    read = _FirstRead({}, set(), {}, [], False, [])
    found_consumers = []
    inventory = []
    used: dict[tuple[int, int], int] = {}
    for kind, name, id_, *numbers in conn.execute(_FIRST_READ, dict(
            {kind: sorted(names) for kind, names in wanted.items()},
            consumer=[r.consumer_uuid for r in requests],
            providers=sorted(providers_to_lock))):
        if kind == 'consumer':
            found_consumers.append(dict(zip(consumers.LOCKED_COLUMNS,
                                            [id_, name, *numbers[:4]])))
        elif kind == 'provider':
            generation, seen = numbers[:2]
            read.providers.append({'id': id_, 'uuid': name, 'generation': generation})
            read.stale = read.stale or generation != seen
        elif kind == 'inventory':
            inventory.append(dict(zip(_INVENTORY_COLUMNS, [id_, *numbers[:6], numbers[-1]])))
        elif kind == 'usage':
            used[id_, numbers[0]] = numbers[1]
        else:
            read.known[kind, name] = id_
    read.unknown_classes = {rc for rc in wanted['resource_class']
                            if ('resource_class', rc) not in read.known}
    named = {id_ for (kind, _), id_ in read.known.items() if kind == 'resource_class'}
    read.inventory = [dict(r, used=used.get((r['resource_provider_id'], r['resource_class_id'])))
                      for r in inventory if r['resource_class_id'] in named]
    read.consumers = consumers.by_given(
        conn, [r.consumer_uuid for r in requests], found_consumers)
    return read


def _lock_providers(conn: sa.Connection, uuids: Collection[str]) -> list[tables.RowMap]:
    """The rows of the providers, locked in id order."""
    if not uuids:
        return []
    return list(conn.execute(_LOCK_PROVIDERS, {'uuids': sorted(uuids)}).mappings().all())


def _by_given(conn: sa.Connection, uuids: Collection[str], rows: Sequence[tables.RowMap]
              ) -> dict[str, tables.RowMap]:
    """{uuid as given: row} of the providers ``uuids``; 400 naming the
    first missing one in ``uuids``' order (the body's, as upstream).
    Found as the database compares uuids (``api.uuid_key``)."""
    found: dict[str, tables.RowMap] = {api.uuid_key(conn, r['uuid']): r for r in rows}
    for uuid in uuids:
        if api.uuid_key(conn, uuid) not in found:
            raise errors.BadRequest("Allocation for resource provider '%s' that "
                                    "does not exist." % uuid)
    return {uuid: found[api.uuid_key(conn, uuid)] for uuid in uuids}


def _check_capacity(conn: sa.Connection, claims: Sequence[tuple[str, str, int]],
                    provider_rows: Mapping[str, tables.RowMap], class_ids: Mapping[str, int],
                    freed: Mapping[tuple[int, int], int],
                    rows: Sequence[tables.RowMap] | None) -> None:
    """409 unless every claim fits.

    ``claims`` is [(provider uuid, class, used)], after the consumers' old
    allocations were deleted in this transaction; ``freed`` is what those
    held, by (provider id, class id); ``rows`` the providers' inventories
    of those classes with what is allocated of them before that deletion
    (the write's first read), or None to read them now, after it, in one
    query for all providers and classes. Beyond capacity (an operator lowered
    the total or the ratio), a write is still accepted as long as it does
    not make the provider's usage of the class grow. The rule is
    ``candidates.search.fits``', judged here on the locked rows because the
    answer must say which limit failed; tests/functional/
    test_candidates_capacity.py holds the two to the same reference.
    """
    # (what ``used`` still counts of what the deletion freed)
    before: collections.Counter[tuple[int, int]] = collections.Counter()
    if rows is None:
        rows = list(conn.execute(_CAPACITY, {
            'rp_ids': sorted({provider_rows[u]['id'] for u, _, _ in claims}),
            'rc_ids': sorted({class_ids[rc] for _, rc, _ in claims})}).mappings())
    else:
        before.update(freed)
    inventory = {(r['resource_provider_id'], r['resource_class_id']): r for r in rows}
    _check_some_inventory(claims, provider_rows, class_ids, {rp for rp, _ in inventory})
    # Claim by claim in the body's order, each with what the write claims
    # of its class on its provider so far: the first failure is named, as
    # upstream names it (the last claim of a pair sees their whole amount).
    wanted: collections.Counter[tuple[int, int]] = collections.Counter()
    for given, rc, used in claims:
        key = (provider_rows[given]['id'], class_ids[rc])
        uuid = provider_rows[given]['uuid']   # named as stored, as upstream
        inv = inventory.get(key)
        if inv is None:
            raise errors.Conflict("Unable to allocate inventory: Inventory for '%s' "
                                  "on resource provider '%s' invalid." % (rc, uuid))
        if (used < inv['min_unit'] or used > inv['max_unit']
                or used % inv['step_size']):
            raise errors.Conflict(
                "Unable to allocate inventory: Unable to create allocation for '%s' on "
                "resource provider '%s'. The requested amount would violate inventory "
                "constraints." % (rc, uuid))
        wanted[key] += used
        amount = wanted[key]
        capacity = inventories.capacity(inv)
        if ((inv['used'] or 0) - before[key] + amount > capacity
                and amount > freed.get(key, 0)):
            raise errors.Conflict(
                "Unable to allocate inventory: Unable to create allocation for '%s' on "
                "resource provider '%s'. The requested amount would exceed the capacity."
                % (rc, uuid))


def _check_some_inventory(claims: Sequence[tuple[str, str, int]],
                          provider_rows: Mapping[str, tables.RowMap],
                          class_ids: Mapping[str, int], with_inventory: set[int]) -> None:
    """409 when a provider has no inventory of any class the write claims,
    worded as upstream: every class of the write, then those providers.
    The classes come in the order upstream's set of their ids gives them
    (CPython's, for the same ids added in the same order: fixed), which
    clients see in the text; ours are upstream's (db/resource_classes.py)."""
    missing = [provider_rows[uuid]['uuid'] for uuid in dict.fromkeys(uuid for uuid, _, _ in claims)
               if provider_rows[uuid]['id'] not in with_inventory]
    if missing:
        names = {class_ids[rc]: rc for _, rc, _ in claims}
        ids = set(class_ids[rc] for _, rc, _ in claims)
        raise errors.Conflict("Unable to allocate inventory: Inventory for '%s' on resource "
                              "provider '%s' invalid." % (', '.join(names[i] for i in ids),
                                                          ', '.join(missing)))


def write(conn: sa.Connection, requests: Sequence[ConsumerAllocations]) -> None:
    """Replace the allocations of every consumer in ``requests`` at once.

    Raises 400 (unknown provider or resource class), 409 (capacity,
    constraints, missing inventory: placement.undefined_code; stale consumer
    generation: placement.concurrent_update) or ProviderGenerationConflict.

    A claim for new consumers is two round trips: the first read (locks,
    names, capacity) and the change record that carries the rows.
    """
    # Lock order, the same for every writer: consumers, then providers.
    # (dict: a set with the body's order)
    wanted_rps = dict.fromkeys(u for r in requests for u in r.allocations)
    # Providers losing a consumer's whole allocation also change: their
    # generation moves too. Which they are is known once the consumer is
    # locked, so then the providers are locked after, by themselves.
    emptied = [r.consumer_uuid for r in requests if not r.allocations]
    first = _first_read(conn, requests, () if emptied else wanted_rps)
    class_ids = {name: id_ for (kind, name), id_ in first.known.items()
                 if kind == 'resource_class'}
    had_allocations = []
    # {uuid as given: as stored}: allocations name the consumer's row
    stored: dict[str, str] = {}
    for request in requests:
        consumer, created = _ensure_consumer(
            conn, request, first.consumers.get(request.consumer_uuid), first.known)
        stored[request.consumer_uuid] = consumer['uuid']
        if not created:
            consumers.increment_generation(conn, consumer)
            # (A consumer this write created has none: every allocation
            # has its consumer's row, and the insert found no row.)
            had_allocations.append(request.consumer_uuid)
    if emptied:
        wanted_rps.update(dict.fromkeys(conn.execute(
            sa.select(RP.c.uuid).distinct()
            .join(ALLOC, ALLOC.c.resource_provider_id == RP.c.id)
            .where(ALLOC.c.consumer_id.in_(emptied))).scalars()))
    freed: collections.Counter[tuple[int, int]] = collections.Counter()
    if had_allocations:
        held = conn.execute(_DELETE, {'uuids': had_allocations}).all()
        changes.note(conn, {rp_id for rp_id, _, _ in held})
        for rp_id, rc_id, used in held:
            freed[rp_id, rc_id] += used
    locked = _lock_providers(conn, wanted_rps) if emptied else first.providers
    # As upstream: a stale consumer generation (409), then a missing
    # provider (400), before an unknown class (400).
    provider_rows = _by_given(conn, wanted_rps, locked)
    if first.unknown_classes:
        raise errors.ResourceClassNotFound(
            'No such resource class %s.' % min(first.unknown_classes))
    claims = [(rp, rc, used) for r in requests
              for rp, res in r.allocations.items() for rc, used in res.items()]
    if claims:
        _check_capacity(conn, claims, provider_rows, class_ids, freed,
                        None if emptied or first.stale else first.inventory)
        now = api.utcnow()
        # Nothing reads them before the write ends: with the record.
        api.insert_later(conn, ALLOC, [
            {'consumer_id': stored[r.consumer_uuid],
             'resource_provider_id': provider_rows[rp]['id'],
             'resource_class_id': class_ids[rc], 'used': used, 'created_at': now}
            for r in requests for rp, res in r.allocations.items()
            for rc, used in res.items()])
    if provider_rows:
        try:
            # (once each, however many spellings named it)
            providers.bump_locked(conn, {r['id']: r for r in provider_rows.values()}.values())
        except providers.ConcurrentUpdate as e:
            raise ProviderGenerationConflict(e.message)
    consumers.delete_if_no_allocations(conn, emptied)


def replace_allocations(conn: sa.Connection, consumer_uuid: str,
                        allocations: dict[str, dict[str, int]], project_id: str,
                        user_id: str, consumer_generation: object = UNCHECKED,
                        consumer_type: str | None = None) -> None:
    """One consumer's allocations ({provider uuid: {class: used}}); see ``write``."""
    write(conn, [ConsumerAllocations(consumer_uuid, allocations, project_id, user_id,
                                     consumer_generation, consumer_type)])


def write_or_replay(db: api.Database, requests: Sequence[ConsumerAllocations]) -> None:
    """``write`` in its own transaction. A provider generation that moved
    under it (another writer won) or a consumer, project or user created
    meanwhile asks the request's retry policy to run the request again
    (``retry.Replay``): the client named none of those, so concurrent
    claims serialize instead of failing."""
    try:
        with consumers.raced('consumer'), db.writer() as conn:
            write(conn, requests)
    except (ProviderGenerationConflict, consumers.InsertRace) as e:
        raise retry.Replay(e)


def delete_for_consumer(conn: sa.Connection, consumer_uuid: str) -> None:
    """Remove a consumer's allocations and the consumer; 404 if it has none."""
    consumers.lock(conn, [consumer_uuid])   # the lock order of ``write``
    losing = set(conn.execute(_DELETE, {'uuids': [consumer_uuid]}).scalars())
    changes.note(conn, losing)
    if not losing:
        raise errors.NotFound("No allocations for consumer '%s'" % consumer_uuid)
    consumers.delete_if_no_allocations(conn, [consumer_uuid])


def get_by_consumer(conn: sa.Connection, consumer_uuid: str) -> Sequence[tables.RowMap]:
    """The consumer's allocations with their providers' uuid and generation."""
    return conn.execute(
        sa.select(RP.c.uuid.label('resource_provider_uuid'),
                  RP.c.generation.label('resource_provider_generation'),
                  RC.c.name.label('resource_class'), ALLOC.c.used,
                  ALLOC.c.created_at, ALLOC.c.updated_at)
        .select_from(ALLOC.join(RP, RP.c.id == ALLOC.c.resource_provider_id)
                     .join(RC, RC.c.id == ALLOC.c.resource_class_id))
        .where(ALLOC.c.consumer_id == consumer_uuid)).mappings().all()


def get_by_provider(conn: sa.Connection, provider_id: int) -> Sequence[tables.RowMap]:
    """The provider's allocations with their consumers' generation."""
    return conn.execute(
        sa.select(ALLOC.c.consumer_id.label('consumer_uuid'),
                  consumers.CONSUMER.c.generation.label('consumer_generation'),
                  RC.c.name.label('resource_class'), ALLOC.c.used,
                  ALLOC.c.created_at, ALLOC.c.updated_at)
        .select_from(ALLOC.join(RC, RC.c.id == ALLOC.c.resource_class_id)
                     .outerjoin(consumers.CONSUMER,
                                consumers.CONSUMER.c.uuid == ALLOC.c.consumer_id))
        .where(ALLOC.c.resource_provider_id == provider_id)).mappings().all()
