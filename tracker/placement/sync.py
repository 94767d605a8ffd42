"""One provider sync: from the desired tree and the known one to writes.

Order matters and is fixed: delete a provider whose name a new one takes,
create the new providers (parents first, bare), reshape when allocated
inventory moves, then write what differs on each
provider (name and parent, inventories, traits, aggregates, each with its
generation), then delete what the host no longer has (children first).
A 409 concurrent_update refreshes only that provider and tries again, a
bounded number of times.

A provider the host no longer has but whose resources an instance still
holds (a device removed from [pci] device_spec or gone from the host)
cannot be deleted: placement refuses (409), and the guest's allocation
must not go with it. It is kept instead, every inventory reserved at its
total so nothing new lands on it (KnownPlacement.kept), and deleted at
the first sync that knows its last allocation gone.
"""
from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses
import logging

from tracker.placement import allocations as alloc_mod
from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.placement import reshape
from tracker.placement import resources
from tracker.placement.errors import PlacementError
from tracker.placement.known import ConsumerRecord
from tracker.placement.known import KnownPlacement
from tracker.providers import diff as diff_mod
from tracker.providers import provider as provider_mod
from tracker.providers import tree as tree_mod
from tracker.providers.provider import Provider

LOG = logging.getLogger(__name__)


@dataclasses.dataclass
class SyncResult:
    """What one provider sync did, by provider uuid."""
    created: list[str] = dataclasses.field(default_factory=list)
    updated: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # uuid -> fields
    deleted: list[str] = dataclasses.field(default_factory=list)
    kept: list[tuple[str, str]] = dataclasses.field(default_factory=list)   # (uuid, reason)
    reshaped: bool = False
    conflicts: int = 0
    errors: list[PlacementError] = dataclasses.field(default_factory=list)
    requests: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.created or self.updated or self.deleted or self.reshaped)


class Restart(Exception):
    """The tree changed under a whole-tree write: refresh and start again."""


class ProviderSync:
    """Writes ``desired`` over ``known.tree`` for one call of sync()."""

    def __init__(self, http: http_mod.Transport, known: KnownPlacement,
                 desired: tree_mod.ProviderTree, instances: Sequence[alloc_mod.Instance] | None,
                 result: SyncResult, conflict_retries: int) -> None:
        self.http = http
        self.known = known
        self.tree = known.tree
        self.desired = desired
        self.instances = instances
        self.result = result
        self.conflict_retries = conflict_retries

    # -- associations written by others ---------------------------------

    def effective(self, provider: Provider) -> Provider:
        """The desired provider plus the traits/aggregates others wrote,
        and the allocation ratios placement keeps (nova's rule).

        What the tracker wrote before and no longer wants goes; what it
        never wrote (an operator's aggregate, a scheduler's trait) stays.
        """
        known = self.tree.find(provider.uuid)
        provider = provider_mod.keep_placement_ratios(provider, known)
        provider = provider_mod.keep_one_time_use(
            provider, known, lambda: resources.usages(self.http, provider.uuid)).copy()
        if known is not None:
            owned = self.known.owned.get(provider.uuid, {})
            for part in ('traits', 'aggregates'):
                foreign = getattr(known, part) - owned.get(part, set())
                if part == 'traits':
                    foreign -= provider.retired_traits
                setattr(provider, part, getattr(provider, part) | foreign)
        return provider

    def own(self, uuid: str, parts: tuple[str, ...] = ('traits', 'aggregates')) -> None:
        """Remember that placement now holds the host's ``parts`` of ``uuid``."""
        desired = self.desired.get(uuid)
        owned = self.known.owned.setdefault(uuid, {})
        for part in parts:
            owned[part] = set(getattr(desired, part))

    def known_subset(self) -> list[Provider]:
        """What the diff compares with: our trees, and any provider we want."""
        uuids = self.desired.uuids() & self.tree.uuids()
        for root in self.desired.roots():
            uuids.update(self.known.tree_uuids(root.uuid))
        subset = []
        for provider in self.tree.providers():      # parents first
            if provider.uuid in uuids:
                if provider.parent_uuid not in uuids:   # its parent is not ours
                    provider = dataclasses.replace(provider, parent_uuid=None)
                subset.append(provider)
        return subset

    def effective_tree(self) -> tree_mod.ProviderTree:
        wanted = [self.effective(p) for p in self.desired.providers()]
        return tree_mod.ProviderTree(wanted + self.still_kept())

    def still_kept(self) -> list[Provider]:
        """The kept providers some allocation still holds (and the kept
        parents of those), as placement has them (reserved = total),
        parents first; the others are let go, to be deleted."""
        alive: set[str] = set()
        for uuid in sorted(self.known.kept):
            if uuid not in self.tree or uuid in self.desired:      # gone, or back
                continue
            holders = self.known.holders(uuid, self.tree.root_of(uuid))
            if holders is None:          # not known now: ask placement
                holders = set(resources.provider_allocations(self.http, uuid))
            if holders:
                alive.add(uuid)
        for uuid in list(alive):
            parent = self.tree.get(uuid).parent_uuid
            while parent in self.known.kept and parent not in self.desired:
                alive.add(parent)
                parent = self.tree.get(parent).parent_uuid
        for uuid in set(self.known.kept) - alive:
            del self.known.kept[uuid]
        return [p for p in self.tree.providers() if p.uuid in alive]

    # -- the steps -------------------------------------------------------

    def run(self) -> None:
        wanted = self.effective_tree()
        plan = diff_mod.diff(wanted, self.known_subset())
        changing = {c.uuid for c in plan.update} | {p.uuid for p in plan.create}
        for uuid in self.desired.uuids() - changing:
            self.own(uuid)
        if not plan:
            return
        try:
            resources.ensure_custom_names(
                self.http,
                {rc for p in wanted.providers() for rc in p.inventories},
                {t for p in wanted.providers() for t in p.traits},
                self.known.ensured)
        except errors.PlacementUnreachable:
            raise
        except errors.PlacementError as e:   # the writes that need it fail and say so
            self.result.errors.append(e)
        moves = self.moves_needing_reshape(plan, wanted)
        retyped = self.retypes_needing_reshape(plan)
        # a provider replaced by a new one of the same name must go first
        names = {p.name for p in plan.create}
        self.delete([p for p in plan.delete if p.name in names])
        failed = set()
        for provider in plan.create:
            if provider.parent_uuid in failed:
                failed.add(provider.uuid)
                continue
            if not self.create(provider):
                failed.add(provider.uuid)
        if (moves or retyped) and not self.reshape(moves, wanted, retyped):
            return      # the inventory that must move stays as it is: next sync retries
        plan = diff_mod.diff(wanted, self.known_subset())
        for change in plan.update:
            self.write(change)
        self.delete(plan.delete)

    def create(self, provider: Provider) -> bool:
        try:
            generation = resources.create(self.http, provider)
        except errors.DuplicateProviderName as e:
            existing = resources.fetch_provider(self.http, provider.uuid)
            if existing is None:
                self.result.errors.append(e)
                LOG.error('provider %s (%s) not created: %s', provider.name,
                          provider.uuid, e)
                return False
            if existing.parent_uuid not in self.tree:
                # it hangs in another tree: the parent write below moves it
                existing = dataclasses.replace(existing, parent_uuid=None)
            self.tree.put(existing)      # ours already, from an earlier life
            return True
        except errors.PlacementUnreachable:
            raise
        except errors.PlacementError as e:
            self.result.errors.append(e)
            return False
        bare = dataclasses.replace(provider, inventories={}, traits=set(),
                                   aggregates=set(), generation=generation)
        self.tree.put(bare)
        self.result.created.append(provider.uuid)
        return True

    def write(self, change: diff_mod.ProviderChange) -> None:
        """Write one provider's changed parts; refresh and retry on 409."""
        conflicts = 0
        written: list[str] = []
        refused: set[str] = set()
        while change.fields:
            field = change.fields[0]
            resp = self.send(field, change.desired, change.known)
            if resp.code == errors.CONCURRENT_UPDATE:
                self.result.conflicts += 1
                conflicts += 1
                if conflicts > self.conflict_retries:
                    self.result.errors.append(errors.GenerationConflict(
                        'provider %s kept changing behind the tracker; gave up '
                        'after %d attempts' % (change.uuid, conflicts), 409,
                        errors.CONCURRENT_UPDATE, change.uuid))
                    break
                fresh = resources.fetch_provider(self.http, change.uuid)
                if fresh is None:     # deleted behind our back: next sync recreates
                    self.tree.remove(change.uuid)
                    break
                self.tree.put(fresh)
                if change.uuid not in self.desired:    # kept: judged next sync
                    break
                desired = self.effective(self.desired.get(change.uuid))
                change = diff_mod.ProviderChange(
                    desired, fresh, diff_mod.changed_fields(desired, fresh))
                continue
            if resp.code == errors.INVENTORY_INUSE:
                retried = self.keep_in_use(change)
                if retried is None:      # nothing else changed in the inventory
                    change = dataclasses.replace(change, fields=change.fields[1:])
                    continue
                resp = retried
            # one PUT of the provider writes both its name and its parent
            same_put = ('name', 'parent') if field in ('name', 'parent') else (field,)
            if not resp.ok:
                # Refused (a 400): the provider's other parts are still
                # written, so that one bad value never blocks the rest.
                self.result.errors.append(resources.unexpected(
                    resp, 'writing %s of provider %s' % (field, change.desired.name),
                    change.uuid))
                change = dataclasses.replace(change, fields=tuple(
                    f for f in change.fields if f not in same_put))
                refused.add(field)
                continue
            self.apply(change, field, resp)
            if field in ('traits', 'aggregates'):
                self.own(change.uuid, (field,))
            written.append(field)
            change = diff_mod.ProviderChange(
                change.desired, self.tree.get(change.uuid),
                tuple(f for f in change.fields if f not in same_put))
        for part in {'traits', 'aggregates'} - set(change.fields) - refused:
            self.own(change.uuid, (part,))      # already as the host wants
        if written and change.uuid not in self.result.created:
            self.result.updated.setdefault(change.uuid, []).extend(written)

    def send(self, field: str, desired: Provider, known: Provider) -> http_mod.Response:
        if field in ('name', 'parent'):
            return resources.put_provider(self.http, desired)
        writer = {'inventories': resources.put_inventories,
                  'traits': resources.put_traits,
                  'aggregates': resources.put_aggregates}[field]
        return writer(self.http, desired.uuid, known.generation, getattr(desired, field))

    def apply(self, change: diff_mod.ProviderChange, field: str,
              resp: http_mod.Response) -> None:
        """Record a successful write in the known tree."""
        body = resp.body if isinstance(resp.body, dict) else {}
        generation = body.get('resource_provider_generation', body.get('generation'))
        fields: dict[str, object] = {
            'generation': change.known.generation if generation is None else generation}
        if field in ('name', 'parent'):
            fields.update(name=change.desired.name, parent_uuid=change.desired.parent_uuid)
        elif field == 'inventories' and 'inventories' in body:
            fields[field] = resources.read_inventories(body)
        else:
            fields[field] = getattr(change.desired, field)
        self.tree.update(change.uuid, **fields)

    def keep_in_use(self, change: diff_mod.ProviderChange) -> http_mod.Response | None:
        """Retry an inventory write keeping the classes that hold allocations."""
        used = resources.usages(self.http, change.uuid)
        removed = change.removed_resource_classes() & set(used)
        kept = dict(change.desired.inventories)
        kept.update({rc: change.known.inventories[rc] for rc in removed})
        err = errors.InventoryInUse(
            'provider %s: cannot remove %s: allocations hold %s'
            % (change.desired.name, ', '.join(sorted(removed)),
               ', '.join('%s=%d' % (rc, used[rc]) for rc in sorted(removed))),
            provider=change.uuid, resource_classes=removed, status=409,
            code=errors.INVENTORY_INUSE)
        self.result.errors.append(err)
        self.result.kept.extend((change.uuid, 'inventory %s in use' % rc)
                                for rc in sorted(removed))
        LOG.warning('%s', err)
        if not diff_mod.inventories_differ(
                dataclasses.replace(change.desired, inventories=kept), change.known):
            return None
        return resources.put_inventories(self.http, change.uuid,
                                         change.known.generation, kept)

    def delete(self, providers: Iterable[Provider]) -> None:
        kept: set[str] = set()
        for provider in providers:            # children first
            if any(c.uuid in kept for c in self.tree.children(provider.uuid)):
                kept.add(provider.uuid)
                if not self.keep(provider, 'has children that are kept'):
                    self.result.kept.append((provider.uuid, 'has children that are kept'))
                continue
            resp = resources.delete(self.http, provider.uuid)
            if resp.ok or resp.status == 404:
                self.tree.remove(provider.uuid)
                self.known.owned.pop(provider.uuid, None)
                self.result.deleted.append(provider.uuid)
                continue
            kept.add(provider.uuid)
            if resp.code == errors.PROVIDER_IN_USE and self.keep(provider,
                                                                 'holds allocations'):
                continue
            reason = {errors.PROVIDER_IN_USE: 'holds allocations',
                      errors.CANNOT_DELETE_PARENT: 'has children'}.get(
                          resp.code or '', 'placement answered %d' % resp.status)
            self.result.kept.append((provider.uuid, reason))
            self.result.errors.append(errors.ProviderInUse(
                'provider %s (%s) gone from the host but kept: %s'
                % (provider.name, provider.uuid, reason), resp.status, resp.code,
                provider.uuid))
            LOG.warning('provider %s kept: %s', provider.name, reason)

    def keep(self, provider: Provider, why: str) -> bool:
        """Keep a provider placement refused to delete for its allocations:
        no new allocation (reserved = total), the old ones untouched."""
        held = self.tree.get(provider.uuid)
        closed = {rc: dict(record, reserved=record['total'])
                  for rc, record in held.inventories.items()}
        if closed != held.inventories:
            resp = resources.put_inventories(self.http, held.uuid, held.generation, closed)
            if not resp.ok:        # a 409 too: the next sync tries again
                return False
            body = resp.body if isinstance(resp.body, dict) else {}
            self.tree.update(held.uuid, inventories=resources.read_inventories(body)
                             if 'inventories' in body else closed,
                             generation=body.get('resource_provider_generation',
                                                 held.generation))
        self.known.kept[provider.uuid] = why
        self.result.kept.append((provider.uuid, why))
        LOG.warning('provider %s (%s) gone from the host but kept, reserved, '
                    'while allocations hold it', provider.name, provider.uuid)
        return True

    # -- reshape ---------------------------------------------------------

    def moves_needing_reshape(self, plan: diff_mod.TreeDiff,
                              wanted: tree_mod.ProviderTree) -> list[reshape.Move]:
        moves = reshape.candidate_moves(plan, wanted)
        used: dict[str, dict[str, int]] = {}
        for source in sorted({m.source for m in moves}):
            used[source] = resources.usages(self.http, source)
        moves = [m for m in moves if used[m.source].get(m.rc)]
        if moves and not self.http.supports('reshaper'):
            self.result.errors.append(errors.ReshapeUnsupported(
                'allocated %s must move but placement predates POST /reshaper '
                '(1.30)' % ', '.join(sorted({m.rc for m in moves}))))
            return []
        return moves

    def retypes_needing_reshape(self, plan: diff_mod.TreeDiff) -> dict[str, set[str]]:
        """{consumer: {provider}}: instances whose allocation on a provider
        changes class as that provider gains the class (pinned guests'
        VCPU becoming PCPU when [compute] cpu_dedicated_set appears).
        nova moves them in the same reshape as the inventory."""
        wanted = {i.uuid: i.allocations for i in self.instances or ()}
        retyped: dict[str, set[str]] = {}
        for change in plan.update:
            gained = set(change.desired.inventories) - set(change.known.inventories)
            if 'inventories' not in change.fields or not gained or not wanted:
                continue
            held = resources.provider_allocations(self.http, change.uuid)
            for consumer, amounts in held.items():
                want = wanted.get(consumer, {}).get(change.uuid, {})
                if any(want.get(rc) and not amounts.get(rc) for rc in gained):
                    retyped.setdefault(consumer, set()).add(change.uuid)
        if retyped and not self.http.supports('reshaper'):
            self.result.errors.append(errors.ReshapeUnsupported(
                'allocations must change class but placement predates POST '
                '/reshaper (1.30)'))
            return {}
        return retyped

    def reshape(self, moves: list[reshape.Move], wanted: tree_mod.ProviderTree,
                retyped: dict[str, set[str]] | None = None) -> bool:
        retyped = retyped or {}
        consumers: dict[str, ConsumerRecord] = {
            c: alloc_mod.get_consumer(self.http, c) for c in sorted(retyped)}
        for source in sorted({m.source for m in moves}):
            held = resources.provider_allocations(self.http, source)
            for consumer, amounts in held.items():
                if any(amounts.get(m.rc) for m in moves if m.source == source) \
                        and consumer not in consumers:
                    consumers[consumer] = alloc_mod.get_consumer(self.http, consumer)
        try:
            body = reshape.plan(moves, wanted, self.tree, consumers, self.instances,
                                retyped)
        except errors.InventoryInUse as e:     # the new providers are too small
            self.result.errors.append(e)
            return False
        resp = self.http.request('POST', '/reshaper', body)
        if resp.code == errors.CONCURRENT_UPDATE:
            self.result.conflicts += 1
            raise Restart()
        if not resp.ok:
            self.result.errors.append(resources.unexpected(resp, 'reshaping'))
            return False
        self.result.reshaped = True
        for uuid, entry in body['inventories'].items():
            self.tree.update(uuid, inventories=entry['inventories'])
        for root in self.desired.roots():
            self.known.learn_generations(resources.generations(self.http, root.uuid))
        self.known.forget_allocations()
        return True
