"""The report client: the agent's one entry point to placement.

``ReportClient`` keeps what it believes placement holds for this host (a
KnownPlacement: the providers, the consumers' allocations) and writes only
the difference, so that a host that did not change costs no HTTP at all. What
others write (traits, aggregates, sharing providers, generations) is learnt
on a 409 and refreshed every ``[placement] association_refresh_interval``.

Placement is found in the service catalog (service type ``placement``)
through the standard keystoneauth options of the ``[placement]`` group, or
an Adapter is handed in (PlacementDirect, tests). Reshapes need the
``service`` role (placement's default policy for POST /reshaper).

Who owns what: inventories, names and parents of the host's providers are
the host's, written as discovered. Traits and aggregates are shared: the
client removes only those it wrote itself and the host no longer reports;
anything another writer added stays. What it wrote is kept in a state file
across restarts (tracker.placement.ownership).
"""
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import copy
import logging
import threading
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg

from tracker import conf as tracker_conf
from tracker.placement import allocations as alloc_mod
from tracker.placement import consumers as consumers_mod
from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.placement import known as known_mod
from tracker.placement import membership
from tracker.placement import options
from tracker.placement import ownership
from tracker.placement import resources
from tracker.placement import sync as sync_mod
from tracker.placement import watch
from tracker.placement.allocations import Instance
from tracker.placement.consumers import AllocationResult
from tracker.placement.errors import GenerationConflict
from tracker.placement.errors import PlacementError
from tracker.placement.errors import PlacementUnreachable
from tracker.placement.sync import SyncResult
from tracker.providers import tree as tree_mod
from tracker.providers.provider import Provider

LOG = logging.getLogger(__name__)
class ReportClient:

    def __init__(self, conf: cfg.ConfigOpts | None = None,
                 adapter: ks_adapter.Adapter | None = None, *,
                 microversion: str | None = None, state_file: str | None = None) -> None:
        """``state_file``: where what the tracker owns is kept across
        restarts (see tracker.placement.ownership); None: in memory."""
        group: Any = conf[options.GROUP] if conf is not None else None
        if adapter is None:
            if conf is None:
                raise ValueError('ReportClient needs a conf or an adapter')
            if not group.auth_type:
                # Without a plugin keystoneauth fails at the first request,
                # which would read as an outage of placement.
                raise errors.PlacementConfigError(
                    'configuration: [placement] auth_type is not set, so there '
                    'are no credentials for placement (%s)' % tracker_conf.sources(conf))
            try:
                adapter = options.adapter_from_conf(conf)
            except (ks_exc.ClientException, TypeError) as e:
                raise errors.PlacementConfigError(
                    'configuration: [placement] options do not describe a way to '
                    'reach placement: %s (%s)' % (e, tracker_conf.sources(conf))) from e
        retries = group.connect_retries if group is not None else None
        delay = group.connect_retry_delay if group is not None else None
        self.http = http_mod.Transport(
            adapter, want=microversion,
            attempts=1 + (3 if retries is None else retries),
            retry_delay=0.5 if delay is None else delay)
        self.conflict_retries: int = group.generation_conflict_retries if group else 3
        self._ownership = ownership.OwnershipFile(state_file) if state_file else None
        self.known = known_mod.KnownPlacement(
            refresh_interval=group.association_refresh_interval if group else 300,
            owned=self._ownership.load() if self._ownership else {})
        self._checks = 0       # steady checks made (they take turns)
        self._lock = threading.RLock()

    # -- counters the agent reports ----------------------------------------

    @property
    def counters(self) -> http_mod.Counters:
        return self.http.counters

    @property
    def writes(self) -> int:
        return self.http.counters.writes

    @property
    def microversion(self) -> str:
        return http_mod.version_text(self.http.negotiate())

    # -- what the writes are ------------------------------------------------

    @contextlib.contextmanager
    def recording(self) -> Iterator[list[http_mod.Write]]:
        """Every write this client sends meanwhile, in order."""
        with self._lock, self.http.recording() as written:
            yield written

    def dry_run(self) -> 'ReportClient':
        """A twin of this client that sends no write (http.DryRun): it
        knows what this one knows of placement, reads what this one would
        read, and its ``http.written`` lists each write this client would
        send for the same calls. Nothing it pretends to write reaches this
        client's knowledge or the ownership file."""
        with self._lock:
            twin = copy.copy(self)
            twin.http = http_mod.DryRun(self.http)
            twin.known = copy.deepcopy(self.known)
            twin._ownership = None
            twin._lock = threading.RLock()
            return twin

    def new_request_id(self) -> str:
        """Start a new global request id (one per agent cycle)."""
        self.http.global_request_id = http_mod.new_request_id()
        return self.http.global_request_id

    # -- providers ----------------------------------------------------------

    def sync(self, desired: tree_mod.ProviderTree | list[Provider],
             instances: Sequence[Instance] | None = None) -> SyncResult:
        """Make placement hold ``desired``; returns a SyncResult.

        ``instances`` (optional) tells a reshape where each instance's moved
        resources are now.
        """
        with self._lock:
            desired = tree_mod.as_tree(desired).snapshot()
            before = self.http.counters.snapshot()
            result = SyncResult()
            roots = desired.roots()
            try:
                for root in roots:
                    if self.known.tree_stale(root.uuid):
                        self._read_tree(root.uuid, reuse=True)
                for attempt in range(self.conflict_retries + 1):
                    try:
                        sync_mod.ProviderSync(self.http, self.known, desired, instances,
                                              result, self.conflict_retries).run()
                        break
                    except sync_mod.Restart:
                        for root in roots:
                            self._read_tree(root.uuid)
                else:
                    result.errors.append(GenerationConflict(
                        'the tree kept changing during the reshape'))
            except PlacementUnreachable:
                for root in roots:     # start from placement's word next time
                    self.known.mark_tree_stale(root.uuid)
                raise
            finally:
                if self._ownership is not None:
                    self._ownership.save(self.known.owned)
            result.requests = self.http.counters.requests - before.requests
            return result

    def check(self, root_uuid: str) -> str:
        """One cheap GET, for a cycle that would otherwise send none:
        placement still answers and holds what we think
        (tracker.placement.watch); what differs is read again now.
        Returns what changed ('' when nothing). Raises PlacementUnreachable."""
        with self._lock:
            if self.known.tree_stale(root_uuid):
                return ''        # the sync reads the whole tree anyway
            changed = watch.check(self.http, self.known, root_uuid, self._checks)
            self._checks += 1
            if changed:
                self.reread(root_uuid)
                LOG.info('placement changed behind the tracker (%s); rereading '
                         'the tree and its allocations', changed)
            return changed

    def reread(self, root_uuid: str) -> None:
        """Forget what we know of the tree's providers and allocations: the
        next read of each asks placement again."""
        self._read_tree(root_uuid, reuse=True)
        self.known.mark_consumers_stale(root_uuid)

    def fetch_tree(self, root_uuid: str) -> tree_mod.ProviderTree:
        """What placement holds now for the tree at ``root_uuid``."""
        with self._lock:
            return self._read_tree(root_uuid).snapshot()

    def sharing_providers(self, root_uuid: str) -> list[Provider]:
        with self._lock:
            return list(self.known.sharing.get(root_uuid, []))

    def managed_providers(self, root_uuid: str) -> set[str]:
        """See KnownPlacement.managed_providers."""
        with self._lock:
            return self.known.managed_providers(root_uuid)

    def _read_tree(self, root_uuid: str, reuse: bool = False) -> tree_mod.ProviderTree:
        """Reread the tree; ``reuse``: only providers whose generation moved."""
        tree = resources.fetch_tree(self.http, root_uuid,
                                    self.known.tree if reuse else None)
        self.known.learn_tree(root_uuid, tree)
        self.known.learn_sharing(root_uuid, resources.sharing_providers(self.http, tree))
        return tree

    # -- allocations ----------------------------------------------------------

    def forget_allocations(self) -> None:
        self.known.forget_allocations()

    def get_allocations_for_tree(self, root_uuid: str) -> dict[str, known_mod.ConsumerRecord]:
        """{consumer: record} for every consumer holding resources in the tree."""
        with self._lock:
            if self.known.tree_stale(root_uuid):
                self._read_tree(root_uuid, reuse=True)
            consumers = alloc_mod.for_tree(self.http, self.known.tree_uuids(root_uuid))
            self.known.learn_consumers(root_uuid, consumers)
            return {c: dict(r, allocations={rp: {'resources': dict(res)}
                                            for rp, res in r['allocations'].items()})
                    for c, r in consumers.items()}

    def sync_allocations(self, root_uuid: str, instances: Sequence[Instance], *,
                         authoritative: bool = True) -> AllocationResult:
        """Make the tree's allocations those of ``instances``."""
        return self._allocation_sync(
            root_uuid, lambda sync: sync.run(instances, authoritative))

    def repair_allocations(self, root_uuid: str, repairs: list[consumers_mod.Repair],
                           protected: set[str]) -> AllocationResult:
        """Write only the named consumers, by the allocation sync's own rule
        (what --fix and a repairing daemon do beside nova-compute)."""
        return self._allocation_sync(root_uuid, lambda sync: sync.repair(repairs, protected),
                                     nova_rules=True)

    def consumer(self, consumer_uuid: str) -> known_mod.ConsumerRecord:
        """One consumer's record as placement holds it now (a guest whose
        allocations are all on other hosts: where does it hold?)."""
        with self._lock:
            return alloc_mod.get_consumer(self.http, consumer_uuid)

    def _allocation_sync(self, root_uuid: str,
                         act: Callable[[consumers_mod.AllocationSync], object],
                         nova_rules: bool = False) -> AllocationResult:
        """``act`` on the tree's allocations, with what placement holds of
        them read first if stale; the result counts the requests sent."""
        with self._lock:
            before = self.http.counters.snapshot()
            if self.known.consumers_stale(root_uuid):
                self.get_allocations_for_tree(root_uuid)
            result = AllocationResult()
            act(consumers_mod.AllocationSync(self.http, self.known, root_uuid, result,
                                             self.conflict_retries, nova_rules))
            result.requests = self.http.counters.requests - before.requests
            return result

    def put_allocations(self, consumer_uuid: str, allocations: alloc_mod.Allocations,
                        project_id: str | None, user_id: str | None,
                        consumer_generation: int | None = None,
                        consumer_type: str | None = None) -> bool:
        """PUT one consumer's allocations; raises on conflict or refusal."""
        with self._lock:
            resp = alloc_mod.put(self.http, consumer_uuid, allocations, project_id,
                                 user_id, consumer_generation,
                                 consumer_type or alloc_mod.DEFAULT_CONSUMER_TYPE)
            alloc_mod.raise_for(resp, consumer_uuid)
            self.known.forget_allocations()
            return True

    def delete_allocations(self, consumer_uuid: str) -> bool:
        """Delete every allocation of the consumer; False if it had none."""
        with self._lock:
            resp = alloc_mod.delete(self.http, consumer_uuid)
            alloc_mod.raise_for(resp, consumer_uuid)
            self.known.forget_allocations()
            return resp.ok

    # -- aggregates by host name ------------------------------------------------

    def aggregate_add_host(self, aggregate_uuid: str, host_name: str) -> bool:
        return self._aggregate_host(aggregate_uuid, host_name, add=True)

    def aggregate_remove_host(self, aggregate_uuid: str, host_name: str) -> bool:
        return self._aggregate_host(aggregate_uuid, host_name, add=False)

    def _aggregate_host(self, aggregate_uuid: str, host_name: str, add: bool) -> bool:
        """Returns True when placement holds the wanted membership."""
        try:
            self.aggregate_membership(aggregate_uuid, host_name, add)
            return True
        except PlacementError as e:
            LOG.warning('aggregate %s %s host %s not written (a later sync '
                        'reconciles): %s', aggregate_uuid,
                        'add' if add else 'remove', host_name, e)
            return False

    def aggregate_membership(self, aggregate_uuid: str, host_name: str, member: bool) -> str:
        """'added', 'removed' or 'unchanged'; raises UnknownHost or
        PlacementError (tracker.placement.membership)."""
        with self._lock:
            return membership.set_member(self.http, self.known, aggregate_uuid, host_name,
                                         member, self.conflict_retries)

    def aggregate_hosts(self, aggregate_uuid: str) -> list[str]:
        """Names of the hosts (compute node providers) in the aggregate."""
        with self._lock:
            return membership.hosts_in(self.http, aggregate_uuid)
