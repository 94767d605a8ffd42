"""The drift between a host and what placement holds for it.

``compute_drift`` compares two plain descriptions: the providers and
instances the host has (a driver's HostSnapshot) and the providers and
allocations placement has under the host's root. What counts as a
difference is the sync's own rule, so the two never disagree: inventories
by ``providers.diff.inventory_changes``, allocations by
``placement.allocations.host_part`` and ``normalize``.
(What the agent notifies after a cycle comes from what it wrote:
tracker/notify.py.)
"""
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
import dataclasses
import json
from typing import TYPE_CHECKING
from typing import Any
from typing import TypedDict
from typing import TypeVar

from tracker import kept as kept_mod
from tracker.drivers.base import HostSnapshot
from tracker.drivers.base import Instance
from tracker.placement import allocations as alloc_mod
from tracker.placement.allocations import normalize as normalize_allocations
from tracker.placement.errors import PlacementError
from tracker.placement.http import Write
from tracker.placement.known import ConsumerRecord
from tracker.providers import diff as diff_mod
from tracker.providers.provider import Provider
from tracker.providers.provider import keep_one_time_use
from tracker.providers.provider import keep_placement_ratios

if TYPE_CHECKING:     # commands that only read a report need no client
    from tracker.placement.client import ReportClient

_T = TypeVar('_T')

EXIT_IN_SYNC = 0
EXIT_ERROR = 1
EXIT_DRIFT = 3

# Traits and aggregates others write on the host's providers (nova's
# COMPUTE_STATUS_DISABLED, tracker-manage's aggregates) are kept by the
# sync on purpose: the audit shows them, but they are not drift.
FOREIGN = ('traits_extra', 'aggregates_extra')


@dataclasses.dataclass
class Drift:
    """One difference. ``kind`` is stable: tools match on it."""
    kind: str
    uuid: str            # the provider or the consumer
    name: str = ''
    detail: dict[str, Any] = dataclasses.field(default_factory=dict)   # JSON values

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        what = self.name or self.uuid
        return '%-22s %s %s' % (self.kind, what, _detail_text(self.detail))


def _detail_text(detail: dict[str, Any]) -> str:
    return ' '.join('%s=%s' % (key, json.dumps(value, sort_keys=True))
                    for key, value in sorted(detail.items()))


def _providers_by_uuid(providers: Iterable[Provider]) -> dict[str, Provider]:
    return {p.uuid: p for p in providers}


def _inventory_drift(want: Provider, have: Provider) -> list[Drift]:
    # what differs is the sync's rule (providers.diff): the two never disagree
    changes = diff_mod.inventory_changes(want, have)
    drift = []
    for rc in sorted(set(want.inventories) | set(have.inventories)):
        wanted, held = want.inventories.get(rc), have.inventories.get(rc)
        if held is None:
            drift.append(Drift('inventory_missing', want.uuid, want.name,
                               {'resource_class': rc, 'host': wanted}))
        elif wanted is None:
            drift.append(Drift('inventory_extra', want.uuid, want.name,
                               {'resource_class': rc, 'placement': held}))
        elif rc in changes:
            fields = {field: {'host': host, 'placement': placement}
                      for field, (host, placement) in changes[rc].items()}
            drift.append(Drift('inventory_differs', want.uuid, want.name,
                               {'resource_class': rc, 'fields': fields}))
    return drift


def _set_drift(kind: str, want: Provider, wanted: set[str], held: set[str]) -> list[Drift]:
    drift: list[Drift] = []
    if wanted - held:
        drift.append(Drift(kind + '_missing', want.uuid, want.name,
                           {kind: sorted(wanted - held)}))
    if held - wanted:
        drift.append(Drift(kind + '_extra', want.uuid, want.name,
                           {kind: sorted(held - wanted)}))
    return drift


def provider_drift(desired: Iterable[Provider], actual: Iterable[Provider]) -> list[Drift]:
    """Drift between two lists of Providers (host's, placement's)."""
    want, have = _providers_by_uuid(desired), _providers_by_uuid(actual)
    drift = []
    for uuid, provider in want.items():
        held = have.get(uuid)
        if held is None:
            drift.append(Drift('provider_missing', uuid, provider.name, {
                'parent_uuid': provider.parent_uuid,
                'inventories': sorted(provider.inventories),
                'traits': sorted(provider.traits),
                'aggregates': sorted(provider.aggregates)}))
            continue
        # a ratio nova's rule leaves to placement is not drift
        provider = keep_placement_ratios(provider, held)
        # a one-time-use device reserved by its last use is not drift
        provider = keep_one_time_use(provider, held, lambda: {})
        if provider.name != held.name:
            drift.append(Drift('provider_name_differs', uuid, provider.name,
                               {'host': provider.name, 'placement': held.name}))
        if provider.parent_uuid != held.parent_uuid:
            drift.append(Drift('provider_parent_differs', uuid, provider.name,
                               {'host': provider.parent_uuid,
                                'placement': held.parent_uuid}))
        drift += _inventory_drift(provider, held)
        drift += _set_drift('traits', provider, set(provider.traits),
                            set(held.traits))
        drift += _set_drift('aggregates', provider, set(provider.aggregates),
                            set(held.aggregates))
    for uuid in have.keys() - want.keys():
        drift.append(Drift('provider_extra', uuid, have[uuid].name,
                           {'parent_uuid': have[uuid].parent_uuid}))
    return drift


def allocation_drift(instances: Iterable[Instance],
                     allocations: dict[str, Any] | None) -> list[Drift]:
    """Drift between running instances and placement's allocations.

    ``allocations`` maps a consumer uuid to its allocations against the
    host's providers, in any shape ``normalize_allocations`` reads.
    """
    drift: list[Drift] = []
    held = {consumer: normalize_allocations(a)
            for consumer, a in (allocations or {}).items()}
    running: set[str] = set()
    for instance in instances:
        running.add(instance.uuid)
        wanted = normalize_allocations(instance.allocations)
        have = held.get(instance.uuid)
        if not wanted:
            continue
        if not have:
            drift.append(Drift('allocation_missing', instance.uuid,
                               instance.name, {'host': wanted}))
        elif have != wanted:
            drift.append(Drift('allocation_differs', instance.uuid,
                               instance.name,
                               {'host': wanted, 'placement': have}))
    for consumer in sorted(held.keys() - running):
        if held[consumer]:
            drift.append(Drift('allocation_orphan', consumer, '',
                               {'placement': held[consumer]}))
    return drift


def compute_drift(snapshot: HostSnapshot, actual_providers: Iterable[Provider],
                  actual_allocations: dict[str, Any] | None) -> list[Drift]:
    return (provider_drift(snapshot.providers, actual_providers)
            + allocation_drift(snapshot.instances, actual_allocations))


class ListedWrite(TypedDict):
    """One write as the report lists it."""
    method: str
    path: str
    subject: str        # the provider or consumer uuid it writes
    name: str


def listed(written: Iterable[Write], names: dict[str, str]) -> list[ListedWrite]:
    """The writes as the report shows them (what --dry-run prints and
    --fix made): each request's method and path, and the provider or
    consumer it writes with its name (``names``: {uuid: name})."""
    writes: list[ListedWrite] = []
    for write in written:
        parts = write.path.split('?')[0].strip('/').split('/')
        if parts == ['resource_providers'] and isinstance(write.body, dict):
            subject = write.body.get('uuid', '')          # a provider created
        else:
            subject = parts[1] if len(parts) > 1 else ''
        writes.append({'method': write.method, 'path': write.path,
                       'subject': subject, 'name': names.get(subject, '')})
    return writes


@dataclasses.dataclass
class AuditReport:
    host: str
    drift: list[Drift]
    foreign: list[Drift] = dataclasses.field(default_factory=list)
    fixed: bool = False
    writes: list[ListedWrite] = dataclasses.field(default_factory=list)
    remaining: list[Drift] = dataclasses.field(default_factory=list)
    # beside nova-compute: what nova holds for a move in flight (not drift)
    held: list[Drift] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)   # writes refused
    # the writes themselves, bodies included (http.Write): ``writes`` lists them
    written: list[Write] = dataclasses.field(default_factory=list, repr=False)
    # devices taken out of scheduling on purpose (not drift): {address: reason}
    drained: dict[str, str] = dataclasses.field(default_factory=dict)
    # devices the host no longer reports, kept while instances hold them
    kept: list[kept_mod.KeptDevice] = dataclasses.field(default_factory=list)

    @property
    def in_sync(self) -> bool:
        return not self.drift

    @property
    def exit_code(self) -> int:
        if self.in_sync or (self.fixed and not self.remaining):
            return EXIT_IN_SYNC
        return EXIT_DRIFT

    def as_dict(self) -> dict[str, Any]:
        return {'host': self.host, 'in_sync': self.in_sync,
                'drift': [d.as_dict() for d in self.drift],
                'foreign': [d.as_dict() for d in self.foreign],
                'fixed': self.fixed, 'writes': self.writes,
                'remaining': [d.as_dict() for d in self.remaining],
                'held': [d.as_dict() for d in self.held], 'errors': self.errors,
                'drained': dict(self.drained),
                'kept': [k.as_dict() for k in self.kept]}

    def as_text(self) -> str:
        lines: list[str] = []
        if self.in_sync:
            lines.append('host %s: in sync with placement' % self.host)
        else:
            lines.append('host %s: %d difference(s) with placement'
                         % (self.host, len(self.drift)))
            lines += ['  ' + d.describe() for d in self.drift]
        if self.foreign:
            lines.append('kept, written by others:')
            lines += ['  ' + d.describe() for d in self.foreign]
        if self.drained:
            lines.append('drained devices (no new allocation):')
            lines += ['  %s: %s' % item for item in sorted(self.drained.items())]
        if self.kept:
            lines.append('kept for their allocations (reserved, no new allocation):')
            lines += ['  ' + k.describe() for k in self.kept]
        if self.held:
            lines.append('left alone, nova may be moving them (see reason):')
            lines += ['  ' + d.describe() for d in self.held]
        if self.writes:
            verb = 'made' if self.fixed else 'would make'
            lines.append('writes %s:' % verb)
            lines += ['  %(method)s %(path)s' % w
                      + ('  (%s)' % (w['name'] or w['subject'])
                         if w['name'] or w['subject'] else '') for w in self.writes]
        lines += ['write refused: %s' % e for e in self.errors]
        if self.fixed and self.remaining:
            lines.append('still differing after the repair:')
            lines += ['  ' + d.describe() for d in self.remaining]
        elif self.fixed:
            lines.append('repaired: in sync with placement')
        return '\n'.join(lines)


def placement_view(client: 'ReportClient', root_uuid: str
                   ) -> tuple[list[Provider], dict[str, ConsumerRecord]]:
    """(providers, allocations) placement has under ``root_uuid``."""
    providers = client.fetch_tree(root_uuid).providers()
    allocations = client.get_allocations_for_tree(root_uuid) if providers else {}
    return providers, allocations


def write_or_record(client: 'ReportClient', dry_run: bool,
                    act: Callable[['ReportClient'], _T]) -> tuple[_T, list[Write]]:
    """``act(target)`` on the client, its writes sent and recorded, or for
    a dry run on a twin of it whose writes are recorded, not sent
    (ReportClient.dry_run): (what ``act`` returned, the writes)."""
    if dry_run:
        twin = client.dry_run()
        result = act(twin)
        assert twin.http.written is not None    # a dry run records from its start
        return result, twin.http.written
    with client.recording() as written:
        result = act(client)
    return result, written


def audit(snapshot: HostSnapshot, client: 'ReportClient', fix: bool = False,
          dry_run: bool = False, authoritative: bool = True) -> AuditReport:
    """Compare the host with placement; repair when ``fix``.

    The dry run is the repair itself on a twin of the client whose writes
    are recorded, not sent (ReportClient.dry_run): what it lists is what
    --fix sends, from the one code that writes."""
    drift, foreign, kept = _drift(snapshot, client, authoritative)
    report = AuditReport(snapshot.hostname, drift, foreign, drained=snapshot.drained,
                         kept=kept)
    if not drift or not (fix or dry_run):
        return report
    errors, report.written = write_or_record(
        client, dry_run, lambda target: repair(snapshot, target, authoritative))
    if not dry_run:
        report.errors = [str(e) for e in errors]
        report.fixed = True
        report.remaining, report.foreign, report.kept = _drift(
            snapshot, client, authoritative)
    names = {p.uuid: p.name for p in snapshot.providers}
    names.update({i.uuid: i.name for i in snapshot.instances})
    names.update({d.uuid: d.name for d in drift if d.name})
    report.writes = listed(report.written, names)
    return report


def repair(snapshot: HostSnapshot, client: 'ReportClient',
           authoritative: bool) -> list[PlacementError]:
    """The agent's own sync of the host's providers, then its instances'
    allocations; the errors of the writes placement refused."""
    providers = client.sync(snapshot.providers, snapshot.instances)
    allocations = client.sync_allocations(snapshot.root.uuid, snapshot.instances,
                                          authoritative=authoritative)
    return providers.errors + allocations.errors


def host_part(snapshot: HostSnapshot, allocations: dict[str, ConsumerRecord] | None,
              managed: set[str], kept: Collection[str] = ()
              ) -> dict[str, alloc_mod.Allocations]:
    """Each consumer's allocations restricted to what the host owns of them
    (the sync's own rule, tracker.placement.allocations.host_part; a
    running instance's part on a ``kept`` provider left out)."""
    wanted = {i.uuid: normalize_allocations(i.allocations) for i in snapshot.instances}
    return {consumer: alloc_mod.host_part(
                record, managed - set(kept) if consumer in wanted else managed,
                wanted.get(consumer, {}))
            for consumer, record in (allocations or {}).items()}


def _drift(snapshot: HostSnapshot, client: 'ReportClient', authoritative: bool
           ) -> tuple[list[Drift], list[Drift], list[kept_mod.KeptDevice]]:
    providers, allocations = placement_view(client, snapshot.root.uuid)
    kept = kept_mod.find(snapshot, providers, {
        c: normalize_allocations(r) for c, r in allocations.items()})
    uuids = {k.uuid for k in kept}
    allocations = host_part(snapshot, allocations,
                            client.managed_providers(snapshot.root.uuid), uuids)
    drift = compute_drift(snapshot, [p for p in providers if p.uuid not in uuids],
                          allocations)
    drift += [Drift('provider_kept_open', k.uuid, k.name, {
                  'reason': k.reason, 'consumers': k.consumers})
              for k in kept if not k.closed]
    if not authoritative:
        # Consumers the host does not know are not its business then.
        drift = [d for d in drift if d.kind != 'allocation_orphan']
    return ([d for d in drift if d.kind not in FOREIGN],
            [d for d in drift if d.kind in FOREIGN], kept)
