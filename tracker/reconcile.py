"""Beside nova-compute: each guest's allocations against its domain, and
what the agent may write about them.

Placement holds what nova claimed; libvirt runs what it runs. Per consumer
with resources on nova's tree (and its sharing providers), and per domain:

- ``allocation_missing``: a domain whose instance holds nothing anywhere;
- ``allocation_differs``: the root's share differs (VCPU, PCPU, MEMORY_MB,
  DISK_GB: a resize nova did not finish, a disk grown behind it);
- ``allocation_device_missing``: the root's share is right, a PCI device's
  or an mdev's child allocation is not;
- ``allocation_orphan``: a consumer holds resources here with no domain
  here, for longer than ``[tracker] orphan_grace``;
- ``allocation_evacuation_leftover``: the same, while it also holds
  resources on another host;
- ``migration_stale``: a migration's consumer still holding resources here
  after nova ended the migration (or, when nova cannot be asked, a consumer
  typed MIGRATION older than ``[tracker] migration_max_age``).

What nova holds for a move is held, not a finding (``Findings.held``, kind
``migration_in_flight``, each with its reason; ``Findings.protected``: no
repair touches them).

Why it is decided this way. The danger is one-sided: a write that frees or
shrinks what nova holds for a move lets the scheduler put another guest on
it (over-commit, found when the move is reverted or the host fills up); a
finding left unrepaired costs a line in a report. So: when in doubt, report
and do not write. nova 34 writes every consumer untyped (its report client
stays below microversion 1.38), so a consumer's type says nothing; what
nova's moves look like in placement does:

- cold migration, resize, live migration: the scheduler moves the source's
  allocation to a consumer named by the migration's uuid (same project and
  user as the instance) and gives the instance's consumer the destination.
  On the source the domain stays (shut off up to VERIFY_RESIZE and for a
  revert) while its instance holds only elsewhere, and a consumer with no
  domain holds the source (the old flavour's amounts: a resize changes
  them, so nothing is matched by amounts). On the destination the
  instance's consumer holds resources before any domain exists (a long
  disk copy outlives any grace);
- evacuation: the instance's consumer holds both hosts until nova-compute
  starts again on the source and cleans up; shelve offload removes the
  allocation after the domain; unshelve claims before the domain.

Rules from placement alone, which hold whatever nova's API says:

1. A consumer that also holds resources on another root is never written
   (an evacuation's source: nova-compute cleans it when it starts; or a
   move between two writes of nova's): reported, never repaired.
2. A domain whose instance holds nothing here but holds elsewhere is in a
   move (leaving, or arriving before the swap): held. Any consumer with no
   domain here of the same project and user is held with it (the
   migration's consumer: nova gives it its instance's owner).
3. A consumer with no domain here is never removed unless nova's API says
   it is neither a server nor a migration nova knows (a deleted instance's
   leftover), after ``orphan_grace``. A server's consumer (shelving,
   unshelving, arriving, or nova's own mess) and a migration's (in flight,
   or ended with an error nova may still be sorting out) are nova's.
4. A domain whose allocation differs is repaired only when nothing points
   at a move: nova's server has no task and no moving status, no
   migration nova has in flight is its, and (nova not asked) no consumer
   without a domain here has its owner (a resize on the same host).
5. A repair only adds to what nova holds: a guest holding more than its
   domain shows (a device part, an amount) is reported, not shrunk. The
   agent may not see all a guest uses (an mdev its libvirt does not list,
   storage it does not count); holding too much wastes, freeing too much
   over-commits.
6. A repair keeps what nova wrote as nova wrote it: an untyped consumer is
   written untyped (below microversion 1.38), the consumer's generation as
   read is sent, and a 409 is not retried (placement.consumers); project
   and user come from the domain's ``<nova:owner>``, else placement's
   record, else nova's server: never placeholder ids (no owner known: not
   repaired).

A consumer typed MIGRATION (a nova that types its consumers) is a
migration like any other: it holds only what rule 2 or nova's answer ties
to it, and is never removed; it shields no other consumer by its type.

Placement keeps no creation time, so an age is counted from the first time
the agent saw the consumer in that state (``ConsumerAges``, kept in
``[tracker] state_path`` across restarts).

What differs is the sync's rule (placement.allocations: ``normalize``,
``host_part``) and a repair is the allocation sync's reconcile
(placement.consumers): one rule each, for the audit, the daemon and --fix.
"""
from collections.abc import Callable
from collections.abc import Iterable
import dataclasses
import json
import logging
import os
import time

from tracker import nova_api
from tracker.audit import Drift
from tracker.drivers.base import Instance
from tracker.placement import allocations as alloc_mod
from tracker.placement.known import ConsumerRecord

LOG = logging.getLogger(__name__)

MIGRATION = 'MIGRATION'
HELD = 'migration_in_flight'
KINDS = ('allocation_missing', 'allocation_differs', 'allocation_device_missing',
         'allocation_orphan', 'allocation_evacuation_leftover', 'migration_stale')

Owner = tuple[str | None, str | None]


@dataclasses.dataclass
class Repair:
    """One consumer's allocations brought to ``wanted`` on the host's
    providers (empty: its part here removed, the rest kept)."""
    consumer: str
    wanted: alloc_mod.Allocations
    project_id: str | None = None
    user_id: str | None = None


@dataclasses.dataclass
class Findings:
    drift: list[Drift] = dataclasses.field(default_factory=list)
    repairs: list[Repair] = dataclasses.field(default_factory=list)
    held: list[Drift] = dataclasses.field(default_factory=list)   # Drift(HELD)
    protected: set[str] = dataclasses.field(default_factory=set)


class ConsumerAges:
    """When the agent first saw each consumer in a state worth timing
    ({consumer: unix time}); a JSON file, or memory when ``path`` is None."""

    def __init__(self, path: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self.first_seen = self._load()

    def _load(self) -> dict[str, float]:
        if not self.path:
            return {}
        try:
            with open(self.path) as f:
                data = json.load(f)
            return {str(k): float(v) for k, v in data.items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, AttributeError) as exc:
            LOG.warning('ignoring unreadable %s (%s): ages start again', self.path, exc)
            return {}

    def age(self, key: str, now: float) -> float:
        return now - self.first_seen.setdefault(key, now)

    def keep_only(self, keys: set[str]) -> None:
        """Forget the consumers no longer in a timed state, then save."""
        self.first_seen = {k: v for k, v in self.first_seen.items() if k in keys}
        if not self.path:
            return
        tmp = self.path + '.tmp'
        try:
            with open(tmp, 'w') as f:
                json.dump(self.first_seen, f, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError as exc:
            LOG.warning('consumer ages not saved to %s: %s', self.path, exc.strerror)


def _owner(record: ConsumerRecord | None) -> Owner:
    return (record or {}).get('project_id'), (record or {}).get('user_id')


def _elsewhere(record: ConsumerRecord, part: alloc_mod.Allocations) -> alloc_mod.Allocations:
    return {rp: res for rp, res in alloc_mod.normalize(record).items() if rp not in part}


@dataclasses.dataclass
class _Guest:
    """A domain whose allocation here is not what it runs."""
    instance: Instance
    kind: str
    shown: dict[str, object]
    wanted: alloc_mod.Allocations
    owner: Owner
    have: alloc_mod.Allocations = dataclasses.field(default_factory=dict)


def _frees(have: alloc_mod.Allocations, wanted: alloc_mod.Allocations) -> bool:
    """Whether writing ``wanted`` over ``have`` would free anything."""
    return any(n > wanted.get(rp, {}).get(rc, 0)
               for rp, amounts in have.items() for rc, n in amounts.items())


class _Judge:
    """One check's findings; see the module's rules."""

    def __init__(self, consumers: dict[str, ConsumerRecord], managed: set[str],
                 root: str, ages: 'ConsumerAges', nova: nova_api.Moves, now: float,
                 orphan_grace: float, migration_max_age: float) -> None:
        self.consumers = consumers
        self.managed = managed
        self.root = root
        self.ages = ages
        self.nova = nova
        self.now = now
        self.orphan_grace = orphan_grace
        self.migration_max_age = migration_max_age
        self.out = Findings()
        self.timed: set[str] = set()
        self.moving_owners: set[Owner] = set()    # rule 2
        self.shielded: dict[str, str] = {}        # instance: its migration in flight

    def hold(self, consumer: str, name: str, reason: str,
             detail: dict[str, object]) -> None:
        self.out.protected.add(consumer)
        self.out.held.append(Drift(HELD, consumer, name, dict(detail, reason=reason)))

    def report(self, kind: str, consumer: str, name: str, detail: dict[str, object],
               repair: Repair | None, why_not: str = '') -> None:
        if repair is None:
            detail = dict(detail, not_repaired=why_not)
        self.out.drift.append(Drift(kind, consumer, name, detail))
        if repair is not None:
            self.out.repairs.append(repair)

    def age(self, key: str) -> float:
        self.timed.add(key)
        return self.ages.age(key, self.now)

    # -- domains -----------------------------------------------------------
    def guest(self, instance: Instance) -> _Guest | None:
        """None when the domain's allocation is right or it is moving."""
        wanted = alloc_mod.normalize(instance.allocations)
        record = self.consumers.get(instance.uuid)
        have = alloc_mod.host_part(record, self.managed, wanted) if record else {}
        if have == wanted:
            return None
        owner = (instance.project_id or _owner(record)[0],
                 instance.user_id or _owner(record)[1])
        if not have and record and alloc_mod.normalize(record):
            self.moving_owners.add(_owner(record))
            self.hold(instance.uuid, instance.name, 'its instance holds resources only on '
                      'another host: a move in flight',
                      {'host': wanted, 'elsewhere': alloc_mod.normalize(record)})
            return None
        if not have:
            return _Guest(instance, 'allocation_missing', {'host': wanted}, wanted, owner)
        kind = ('allocation_device_missing' if have.get(self.root) == wanted.get(self.root)
                else 'allocation_differs')
        return _Guest(instance, kind, {'host': wanted, 'placement': have}, wanted, owner,
                      have)

    def settle(self, guest: _Guest, owners_without_domain: set[Owner]) -> None:
        instance = guest.instance
        if instance.uuid in self.shielded:
            self.hold(instance.uuid, instance.name, 'nova\'s migration %s of this server '
                      'is in flight' % self.shielded[instance.uuid], guest.shown)
            return
        verdict = self.nova.server(instance.uuid)
        if verdict.moving:
            self.hold(instance.uuid, instance.name, verdict.reason, guest.shown)
            return
        if verdict.kind == nova_api.UNASKED and guest.owner in owners_without_domain:
            self.hold(instance.uuid, instance.name, 'a consumer of its owner holds '
                      'resources here without a domain (a resize on this host?); '
                      + verdict.reason, guest.shown)
            return
        project_id = guest.owner[0] or verdict.owner[0]
        user_id = guest.owner[1] or verdict.owner[1]
        if verdict.kind == nova_api.NONE:
            self.report(guest.kind, instance.uuid, instance.name, guest.shown, None,
                        verdict.reason)
        elif _frees(guest.have, guest.wanted):
            self.report(guest.kind, instance.uuid, instance.name, guest.shown, None,
                        'the repair would free what nova allocated (a device or an '
                        'amount the agent may not see)')
        elif not project_id or not user_id:
            self.report(guest.kind, instance.uuid, instance.name, guest.shown, None,
                        'no owner known (no <nova:owner>, no record in placement)')
        else:
            self.report(guest.kind, instance.uuid, instance.name, guest.shown,
                        Repair(instance.uuid, guest.wanted, project_id, user_id))

    # -- consumers without a domain here -----------------------------------
    def without_domain(self, consumer: str, record: ConsumerRecord,
                       drifting: set[Owner]) -> None:
        part = alloc_mod.host_part(record, self.managed)
        elsewhere = _elsewhere(record, part)
        owner = _owner(record)
        verdict = self.nova.consumer(consumer, *owner)
        if verdict.moving:
            if verdict.instance:
                self.shielded[verdict.instance] = consumer
            self.hold(consumer, '', verdict.reason, {'placement': part})
            return
        if owner in self.moving_owners:
            self.hold(consumer, '', 'a guest of its owner here is moving; '
                      + verdict.reason, {'placement': part})
            return
        if verdict.kind == nova_api.UNASKED and owner in drifting:
            self.hold(consumer, '', 'a guest of its owner here differs from its '
                      'allocation (a resize on this host?); ' + verdict.reason,
                      {'placement': part})
            return
        detail: dict[str, object] = {'placement': part}
        if elsewhere:
            detail['elsewhere'] = elsewhere
        if verdict.kind == nova_api.MIGRATION:
            self.report('migration_stale', consumer, '', detail, None, verdict.reason)
            return
        if verdict.kind == nova_api.UNASKED and record.get('consumer_type') == MIGRATION:
            age = self.age('migration:' + consumer)
            if age < self.migration_max_age:
                self.hold(consumer, '', 'typed MIGRATION; ' + verdict.reason,
                          {'placement': part, 'age_seconds': int(age)})
            else:
                self.report('migration_stale', consumer, '',
                            dict(detail, age_seconds=int(age)), None, verdict.reason)
            return
        if self.age('orphan:' + consumer) < self.orphan_grace:
            return
        if elsewhere:
            self.report('allocation_evacuation_leftover', consumer, '', detail, None,
                        'it holds resources on another host too: nova-compute '
                        'removes them here when it starts; ' + verdict.reason)
        elif verdict.kind == nova_api.NONE:
            self.report('allocation_orphan', consumer, '', detail, Repair(consumer, {}))
        else:
            self.report('allocation_orphan', consumer, '', detail, None, verdict.reason)


def findings(instances: Iterable[Instance], consumers: dict[str, ConsumerRecord],
             managed: set[str], root_uuid: str, ages: 'ConsumerAges', *,
             orphan_grace: float, migration_max_age: float,
             nova: nova_api.Moves | None = None, now: float | None = None) -> Findings:
    """Findings for ``instances`` (on nova's tree, see nova_compute.adopt)
    against ``consumers`` ({consumer: record} holding resources on the
    tree, and the guests' own records wherever they hold) on the
    ``managed`` providers (the tree and its sharing ones). ``nova``: what
    nova's API says (None: not asked)."""
    judge = _Judge(consumers, managed, root_uuid, ages, nova or nova_api.Moves(None),
                   time.time() if now is None else now, orphan_grace, migration_max_age)
    domains = {instance.uuid for instance in instances}
    guests = [g for g in (judge.guest(i) for i in instances) if g is not None]
    drifting = {g.owner for g in guests}
    without: set[Owner] = set()
    for consumer, record in sorted(consumers.items()):
        if consumer in domains or not alloc_mod.host_part(record, managed):
            continue
        without.add(_owner(record))
        judge.without_domain(consumer, record, drifting)
    for guest in guests:
        judge.settle(guest, without)
    ages.keep_only(judge.timed)
    return judge.out
