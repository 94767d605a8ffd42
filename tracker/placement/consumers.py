"""One allocation sync: the host's instances against placement's consumers.

Each instance's allocations are compared with the consumer's record as the
client last knew it; only a difference is written, with the consumer
generation. The host's part of a consumer is what it holds on the host's
tree and on the sharing providers the host uses (KnownPlacement.
managed_providers); a part elsewhere (another host's, during a migration)
is kept as it is. Consumers that hold resources in the tree but run no
instance here are orphans: when the caller is authoritative the host's part
is removed (the whole consumer is deleted if nothing else is left).
A running instance's part on a provider kept for its allocations
(KnownPlacement.kept: a device gone from the host or the spec) is left
as it is; an orphan's goes with the rest.

Beside nova-compute (``nova_rules``) a write is as nova makes it and never
outruns what the audit judged: a consumer the agent creates is untyped,
as nova 34 writes all of its consumers; a removal is an empty PUT with the
consumer's generation (1.28), not a DELETE, which would remove whatever
nova wrote meanwhile; and a 409 is not retried: the consumer changed after
the audit read it, so the next check judges it again.
"""
from collections.abc import Iterable
import dataclasses
import logging

from tracker.placement import allocations as alloc_mod
from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.placement.errors import PlacementError
from tracker.placement.known import ConsumerRecord
from tracker.placement.known import KnownPlacement

LOG = logging.getLogger(__name__)

# (consumer, allocations wanted on the host's providers, project_id, user_id)
Repair = tuple[str, alloc_mod.Allocations, str | None, str | None]


@dataclasses.dataclass
class AllocationResult:
    """What one allocation sync did, by consumer uuid."""
    created: list[str] = dataclasses.field(default_factory=list)
    updated: list[str] = dataclasses.field(default_factory=list)
    deleted: list[str] = dataclasses.field(default_factory=list)
    kept: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (consumer, reason)
    conflicts: int = 0
    errors: list[PlacementError] = dataclasses.field(default_factory=list)
    requests: int = 0


class AllocationSync:
    """Writes the instances' allocations over ``known.consumers[root_uuid]``."""

    def __init__(self, http: http_mod.Transport, known: KnownPlacement, root_uuid: str,
                 result: AllocationResult, conflict_retries: int,
                 nova_rules: bool = False) -> None:
        self.http = http
        self.nova_rules = nova_rules
        self.known = known
        self.root_uuid = root_uuid
        self.result = result
        self.conflict_retries = conflict_retries
        self.cache = known.consumers[root_uuid]
        self.tree = known.tree_uuids(root_uuid)
        self.managed = known.managed_providers(root_uuid)
        self.kept = set(known.kept)

    def run(self, instances: Iterable[alloc_mod.Instance], authoritative: bool) -> None:
        seen = set()
        for instance in instances:
            seen.add(instance.uuid)
            self.reconcile(instance.uuid, alloc_mod.normalize(instance.allocations),
                           instance.project_id, instance.user_id)
        if not authoritative:
            return
        for consumer in sorted(set(self.cache) - seen):
            if alloc_mod.on_tree(self.cache[consumer]['allocations'], self.tree):
                self.reconcile(consumer, {}, None, None, orphan=True)

    def repair(self, repairs: Iterable[Repair], protected: set[str]) -> None:
        """Bring each named consumer's part here to what it wants (nothing:
        its part removed, the rest kept); never a ``protected`` one (a
        migration in flight holds it)."""
        for consumer, wanted, project_id, user_id in repairs:
            if consumer in protected:
                self.result.kept.append((consumer, 'a migration is in flight'))
                continue
            self.reconcile(consumer, alloc_mod.normalize(wanted), project_id, user_id,
                           orphan=not wanted)

    def reconcile(self, consumer: str, wanted: alloc_mod.Allocations,
                  project_id: str | None, user_id: str | None, orphan: bool = False) -> None:
        """Bring one consumer's allocations in the tree to ``wanted``."""
        for attempt in range(self.conflict_retries + 1):
            record = self.cache.get(consumer)
            held = (record or {}).get('allocations', {})
            managed = self.managed if orphan else self.managed - self.kept
            have = alloc_mod.host_part(held, managed, wanted)
            if have == wanted:
                return
            others = {rp: res for rp, res in held.items() if rp not in have}
            new = dict(others, **wanted)
            if record is None and not new:
                return
            if new or (self.nova_rules and self.http.supports('consumer_generation')):
                resp = alloc_mod.put(
                    self.http, consumer, new,
                    project_id or (record or {}).get('project_id'),
                    user_id or (record or {}).get('user_id'),
                    (record or {}).get('consumer_generation'), self._type(record))
            else:
                resp = alloc_mod.delete(self.http, consumer)
            if resp.code == errors.CONCURRENT_UPDATE and self.nova_rules:
                self.result.conflicts += 1
                self.result.kept.append((consumer, 'changed since it was read: '
                                                   'judged again at the next check'))
                self.known.forget_allocations()
                return
            if resp.code == errors.CONCURRENT_UPDATE:
                self.result.conflicts += 1
                self.cache[consumer] = fresh = alloc_mod.get_consumer(self.http, consumer)
                if not fresh['allocations']:
                    self.cache.pop(consumer)
                continue
            if not resp.ok and resp.status != 404:
                self.result.errors.append(errors.PlacementError(
                    'allocations of consumer %s not written: %d %s: %s'
                    % (consumer, resp.status, resp.code or '', resp.detail),
                    resp.status, resp.code))
                self.result.kept.append((consumer, resp.detail))
                return
            self.record(consumer, record, new, project_id, user_id, orphan)
            return
        self.result.errors.append(errors.ConsumerConflict(
            'consumer %s kept changing behind the tracker' % consumer, 409,
            errors.CONCURRENT_UPDATE))

    def _type(self, record: ConsumerRecord | None) -> str | None:
        """The type a write gives the consumer: the one it has (None:
        untyped), a new one nova's way (untyped) or the agent's."""
        if record is not None:
            return record.get('consumer_type')
        return None if self.nova_rules else alloc_mod.DEFAULT_CONSUMER_TYPE

    def record(self, consumer: str, record: ConsumerRecord | None, new: alloc_mod.Allocations,
               project_id: str | None, user_id: str | None, orphan: bool) -> None:
        """Remember what placement holds now, and what that bumped."""
        if not new:
            self.cache.pop(consumer, None)
            self.result.deleted.append(consumer)
            return
        generation = (record or {}).get('consumer_generation')
        self.cache[consumer] = {
            'allocations': new,
            'project_id': project_id or (record or {}).get('project_id'),
            'user_id': user_id or (record or {}).get('user_id'),
            # a consumer starts at generation 1; each write adds one. A wrong
            # guess costs one 409 and a reread, never a wrong write.
            'consumer_generation': 1 if generation is None else generation + 1,
            'consumer_type': (record or {}).get('consumer_type'),
        }
        if orphan:
            self.result.deleted.append(consumer)
        elif record is None:
            self.result.created.append(consumer)
        else:
            self.result.updated.append(consumer)
        # the allocation write bumped each provider it was written against
        tree = self.known.tree
        for rp in new:
            if rp in tree:
                found = tree.get(rp)
                if found.generation is not None:
                    tree.update(rp, generation=found.generation + 1)
