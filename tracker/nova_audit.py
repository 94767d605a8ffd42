"""Beside nova-compute: one check of the guests' allocations, and its repair.

The daemon's cycle and tracker-audit both come here when the agent runs
beside nova-compute (tracker/nova_compute.py): read nova's tree and the
allocations on it (GETs only), find what differs (tracker/reconcile.py),
and, when asked, repair exactly those consumers through the allocation
sync (ReportClient.repair_allocations). Nothing of nova's providers is
ever written.
"""
from collections.abc import Collection
from collections.abc import Iterable
import dataclasses
import os

from oslo_config import cfg

from tracker import audit as audit_mod
from tracker import notify
from tracker import nova_api
from tracker import nova_compute
from tracker import reconcile
from tracker.drivers import base
from tracker.placement.client import ReportClient
from tracker.placement.consumers import AllocationResult
from tracker.placement.sync import SyncResult


@dataclasses.dataclass
class Check:
    adopted: nova_compute.Adopted
    found: reconcile.Findings

    def snapshot(self) -> base.HostSnapshot:
        """The guests as notify.notifications reads them."""
        return base.HostSnapshot(hostname=self.adopted.root_name,
                                 instances=self.adopted.instances)


def ages_for(conf: cfg.ConfigOpts, host: str) -> reconcile.ConsumerAges:
    state: str | None = conf.tracker.state_path
    path = (os.path.join(state, 'nova-consumers-%s.json' % host)
            if state and os.path.isdir(state) else None)
    return reconcile.ConsumerAges(path)


def check(snapshot: base.HostSnapshot, client: ReportClient, conf: cfg.ConfigOpts,
          ages: reconcile.ConsumerAges, compute_node: str,
          nova: nova_api.Source | None = None) -> Check:
    """``nova``: nova's API (None: moves are judged from placement alone,
    and nothing they could explain is repaired)."""
    tree = client.fetch_tree(compute_node)
    adopted = nova_compute.adopt(snapshot, tree, compute_node)
    consumers = dict(client.get_allocations_for_tree(compute_node))
    for instance in adopted.instances:
        if instance.uuid not in consumers:
            # holding nothing here: does it hold elsewhere (a move)?
            consumers[instance.uuid] = client.consumer(instance.uuid)
    found = reconcile.findings(
        adopted.instances, consumers, client.managed_providers(compute_node),
        compute_node, ages, orphan_grace=conf.tracker.orphan_grace,
        migration_max_age=conf.tracker.migration_max_age, nova=nova_api.Moves(nova))
    return Check(adopted, found)


def repair(client: ReportClient, compute_node: str,
           found: reconcile.Findings) -> AllocationResult:
    """Write the findings' repairs, and only those."""
    repairs = [(r.consumer, r.wanted, r.project_id, r.user_id) for r in found.repairs]
    return client.repair_allocations(compute_node, repairs, found.protected)


def counts(drift: Iterable[audit_mod.Drift]) -> dict[str, int]:
    return {kind: sum(1 for d in drift if d.kind == kind) for kind in reconcile.KINDS}


def cycle(snapshot: base.HostSnapshot, client: ReportClient, conf: cfg.ConfigOpts,
          ages: reconcile.ConsumerAges, compute_node: str,
          reported: Collection[tuple[str, str]], nova: nova_api.Source | None = None
          ) -> tuple[reconcile.Findings, AllocationResult | None, list[notify.Event]]:
    """The daemon's cycle: (findings, the repair's AllocationResult or
    None, the notifications to send). ``reported``: the findings already
    notified ({(kind, consumer)})."""
    checked = check(snapshot, client, conf, ages, compute_node, nova)
    found, allocated = checked.found, None
    changes = notify.findings(found.drift, reported)
    if found.repairs and conf.tracker.repair_allocations:
        allocated = repair(client, compute_node, found)
        changes += notify.notifications(SyncResult(), allocated, checked.snapshot())
    return found, allocated, changes


def audit(snapshot: base.HostSnapshot, client: ReportClient, conf: cfg.ConfigOpts,
          ages: reconcile.ConsumerAges, compute_node: str, fix: bool = False,
          dry_run: bool = False, nova: nova_api.Source | None = None
          ) -> audit_mod.AuditReport:
    """The AuditReport of the guests' allocations on nova's tree. The dry
    run is the repair on a twin of the client that sends no write
    (ReportClient.dry_run): it lists what --fix sends."""
    first = check(snapshot, client, conf, ages, compute_node, nova)
    found = first.found
    # a drained device is shown, never written: nova owns its provider
    report = audit_mod.AuditReport(first.adopted.root_name, found.drift,
                                   held=found.held, drained=snapshot.drained)
    if not found.drift or not (fix or dry_run):
        return report
    result, report.written = audit_mod.write_or_record(
        client, dry_run, lambda target: repair(target, compute_node, found))
    if not dry_run:
        report.fixed = True
        report.errors = [str(e) for e in result.errors]
        client.forget_allocations()
        again = check(snapshot, client, conf, ages, compute_node, nova)
        report.remaining, report.held = again.found.drift, again.found.held
    report.writes = audit_mod.listed(report.written,
                                     {d.uuid: d.name for d in found.drift})
    return report
