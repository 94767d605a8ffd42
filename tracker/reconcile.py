"""Beside nova-compute: each guest's allocations against its domain.

Placement holds what nova claimed; libvirt runs what it runs. Per consumer
with resources on nova's tree (and its sharing providers), and per domain:

- ``allocation_missing``: a domain whose instance holds nothing here;
- ``allocation_differs``: the root's share differs (VCPU, PCPU, MEMORY_MB,
  DISK_GB: a resize nova did not finish, a disk grown behind it);
- ``allocation_device_missing``: the root's share is right, a PCI device's
  or an mdev's child allocation is not;
- ``allocation_orphan``: an instance holds resources here with no domain
  here, for longer than ``[tracker] orphan_grace`` (the scheduler claims
  before nova-compute defines the guest);
- ``allocation_evacuation_leftover``: the same, while the consumer also
  holds resources on another host (an evacuation nova never cleaned up on
  the host that came back);
- ``migration_stale``: a MIGRATION consumer older than
  ``[tracker] migration_max_age``.

A MIGRATION consumer younger than that is a move in flight: it, and the
guest whose resources it holds here (same project and user, same
resources: the source of a live migration or a resize), are nova's business
until it ends. Neither is a finding, and no repair touches them
(``Findings.held``, ``Findings.protected``).

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

from tracker.audit import Drift
from tracker.drivers.base import Instance
from tracker.placement import allocations as alloc_mod
from tracker.placement.known import ConsumerRecord

LOG = logging.getLogger(__name__)

MIGRATION = 'MIGRATION'
KINDS = ('allocation_missing', 'allocation_differs', 'allocation_device_missing',
         'allocation_orphan', 'allocation_evacuation_leftover', 'migration_stale')
# findings repaired by removing the consumer's part here
REMOVED = ('allocation_orphan', 'allocation_evacuation_leftover', 'migration_stale')


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
    held: list[Drift] = dataclasses.field(default_factory=list)   # Drift('migration_in_flight')
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


def _owner(record: ConsumerRecord | None) -> tuple[str | None, str | None]:
    return (record or {}).get('project_id'), (record or {}).get('user_id')


def _elsewhere(record: ConsumerRecord, part: alloc_mod.Allocations) -> alloc_mod.Allocations:
    return {rp: res for rp, res in alloc_mod.normalize(record).items() if rp not in part}


def findings(instances: Iterable[Instance], consumers: dict[str, ConsumerRecord],
             managed: set[str], root_uuid: str, ages: ConsumerAges, *, orphan_grace: float,
             migration_max_age: float, now: float | None = None) -> Findings:
    """Findings for ``instances`` (on nova's tree, see nova_compute.adopt)
    against ``consumers`` ({consumer: record} holding resources on the
    tree) on the ``managed`` providers (the tree and its sharing ones)."""
    now = time.time() if now is None else now
    out = Findings()
    timed: set[str] = set()
    in_flight: dict[str, ConsumerRecord] = {}
    for consumer, record in sorted(consumers.items()):
        if record.get('consumer_type') != MIGRATION:
            continue
        key = 'migration:' + consumer
        timed.add(key)
        age = ages.age(key, now)
        part = alloc_mod.host_part(record, managed)
        if age >= migration_max_age:
            detail: dict[str, object] = {'placement': part, 'age_seconds': int(age)}
            elsewhere = _elsewhere(record, part)
            if elsewhere:
                detail['elsewhere'] = elsewhere
            out.drift.append(Drift('migration_stale', consumer, '', detail))
            out.repairs.append(Repair(consumer, {}))
        else:
            in_flight[consumer] = record
            out.protected.add(consumer)
            out.held.append(Drift('migration_in_flight', consumer, '', {
                'placement': part, 'age_seconds': int(age)}))

    def moving(project_id: str | None, user_id: str | None,
               part: alloc_mod.Allocations) -> str | None:
        """The in-flight migration holding this guest's resources here, if
        any: the same resources, and the same owner (nova writes a
        migration's consumer with its instance's project and user)."""
        for migration, record in in_flight.items():
            if alloc_mod.host_part(record, managed) != part:
                continue
            if not project_id or _owner(record) == (project_id, user_id):
                return migration
        return None

    domains: set[str] = set()
    for instance in instances:
        domains.add(instance.uuid)
        wanted = alloc_mod.normalize(instance.allocations)
        held = consumers.get(instance.uuid)
        have = alloc_mod.host_part(held, managed, wanted) if held else {}
        if have == wanted:
            continue
        project_id = instance.project_id or _owner(held)[0]
        user_id = instance.user_id or _owner(held)[1]
        migration = moving(project_id, user_id, wanted)
        if migration:
            out.protected.add(instance.uuid)
            continue
        if not have:
            kind, shown = 'allocation_missing', {'host': wanted}
        elif have.get(root_uuid) == wanted.get(root_uuid):
            kind = 'allocation_device_missing'
            shown = {'host': wanted, 'placement': have}
        else:
            kind, shown = 'allocation_differs', {'host': wanted, 'placement': have}
        out.drift.append(Drift(kind, instance.uuid, instance.name, shown))
        out.repairs.append(Repair(instance.uuid, wanted, project_id, user_id))

    for consumer, record in sorted(consumers.items()):
        if consumer in domains or record.get('consumer_type') == MIGRATION:
            continue
        part = alloc_mod.host_part(record, managed)
        if not part:
            continue
        if moving(*_owner(record), part):
            out.protected.add(consumer)
            continue
        key = 'orphan:' + consumer
        timed.add(key)
        age = ages.age(key, now)
        if age < orphan_grace:
            continue
        elsewhere = _elsewhere(record, part)
        if elsewhere:
            out.drift.append(Drift('allocation_evacuation_leftover', consumer, '', {
                'placement': part, 'elsewhere': elsewhere}))
        else:
            out.drift.append(Drift('allocation_orphan', consumer, '', {'placement': part}))
        out.repairs.append(Repair(consumer, {}))
    ages.keep_only(timed)
    return out
