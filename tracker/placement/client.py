"""The report client: the agent's one entry point to placement.

``ReportClient`` keeps what it believes placement holds for this host (the
known ProviderTree, the consumers' allocations) and writes only the
difference, so that a host that did not change costs no HTTP at all. What
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
import copy
import dataclasses
import logging
import threading
import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

from tracker.placement import allocations as alloc_mod
from tracker.placement import consumers as consumers_mod
from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.placement import membership
from tracker.placement import ownership
from tracker.placement import resources
from tracker.placement import sync as sync_mod
from tracker.placement import watch
from tracker.placement.errors import ConsumerConflict  # noqa: F401  (the agent catches these)
from tracker.placement.errors import DuplicateProviderName  # noqa: F401  (the agent catches these)
from tracker.placement.errors import GenerationConflict  # noqa: F401  (the agent catches these)
from tracker.placement.errors import InventoryInUse  # noqa: F401  (the agent catches these)
from tracker.placement.errors import PlacementConfigError  # noqa: F401  (the agent catches these)
from tracker.placement.errors import PlacementError  # noqa: F401  (the agent catches these)
from tracker.placement.errors import PlacementTooOld  # noqa: F401  (the agent catches these)
from tracker.placement.errors import PlacementUnreachable  # noqa: F401  (the agent catches these)
from tracker.placement.errors import ProviderInUse  # noqa: F401  (the agent catches these)
from tracker.placement.errors import ReshapeUnsupported  # noqa: F401  (the agent catches these)
from tracker.placement.errors import UnknownHost  # noqa: F401  (the agent catches these)
from tracker.placement.sync import SyncResult  # noqa: F401
from tracker.providers import tree as tree_mod

LOG = logging.getLogger(__name__)
GROUP = 'placement'

client_opts = [
    cfg.IntOpt('association_refresh_interval', default=300, min=0,
               help='Seconds between rereads of what placement holds for this '
                    'host (traits, aggregates and sharing providers written by '
                    'others, allocations). 0: only on start and after conflicts.'),
    cfg.IntOpt('generation_conflict_retries', default=3, min=0,
               help='How many times one write is retried after another writer '
                    'changed the provider (409 concurrent_update).'),
]


def _optional(opts):
    # Plugins mark some options required (the password plugin's auth_url);
    # registered as such, every tool reading tracker.conf would fail to load
    # without placement credentials. The plugin checks them itself on load.
    copies = []
    for opt in opts:
        opt = copy.copy(opt)
        opt.required = False
        copies.append(opt)
    return copies


# nova's defaults for its [placement] adapter: the same nova.conf finds
# placement at the same endpoint for both.
NOVA_ADAPTER_DEFAULTS = {'service_type': 'placement',
                         'valid_interfaces': ['internal', 'public']}


def _nova_defaults(opts):
    copies = []
    for opt in opts:
        if opt.dest in NOVA_ADAPTER_DEFAULTS:
            opt = copy.copy(opt)
            opt.default = NOVA_ADAPTER_DEFAULTS[opt.dest]
        copies.append(opt)
    return copies


def list_opts():
    """[placement]: keystoneauth session, auth, adapter options and ours."""
    opts = (ks_loading.get_session_conf_options()
            + ks_loading.get_auth_common_conf_options()
            + _optional(ks_loading.get_auth_plugin_conf_options('password'))
            + _nova_defaults(ks_loading.get_adapter_conf_options(include_deprecated=False))
            + client_opts)
    unique = {}
    for opt in opts:
        unique.setdefault(opt.dest, opt)
    return [(GROUP, list(unique.values()))]


def _auth_from_conf(conf):
    group = conf[GROUP]
    if not group.auth_type:
        return None
    loader = ks_loading.get_plugin_loader(group.auth_type)
    conf.register_opts(_optional(ks_loading.get_auth_plugin_conf_options(loader)),
                       group=GROUP)
    return loader.load_from_options(**{o.dest: group[o.dest]
                                        for o in loader.get_options()})


# keystoneauth's admin_token plugin only makes sense against a development
# server (noauth2), which takes the caller's roles from this header. The
# agent is a service: without the role placement's default policy refuses
# its reshapes. Behind keystone the header is never sent (keystonemiddleware
# would drop it anyway).
DEVELOPMENT_ROLES = {'X-Roles': 'admin,service'}


def adapter_from_conf(conf):
    """A keystoneauth1 Adapter for placement, from the [placement] group."""
    auth = _auth_from_conf(conf)
    session = ks_loading.load_session_from_conf_options(conf, GROUP, auth=auth)
    headers = DEVELOPMENT_ROLES if conf[GROUP].auth_type == 'admin_token' else None
    return ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth, additional_headers=headers,
        service_type=conf[GROUP].service_type or 'placement')


@dataclasses.dataclass
class AllocationResult:
    created: list = dataclasses.field(default_factory=list)    # consumers
    updated: list = dataclasses.field(default_factory=list)
    deleted: list = dataclasses.field(default_factory=list)
    kept: list = dataclasses.field(default_factory=list)       # (consumer, reason)
    conflicts: int = 0
    errors: list = dataclasses.field(default_factory=list)
    requests: int = 0


class ReportClient:

    def __init__(self, conf=None, adapter=None, *, microversion=None,
                 state_file=None):
        """``state_file``: where what the tracker owns is kept across
        restarts (see tracker.placement.ownership); None: in memory."""
        group = conf[GROUP] if conf is not None else None
        if adapter is None:
            if conf is None:
                raise ValueError('ReportClient needs a conf or an adapter')
            if not group.auth_type:
                # Without a plugin keystoneauth fails at the first request,
                # which would read as an outage of placement.
                from tracker import conf as tracker_conf
                raise errors.PlacementConfigError(
                    'configuration: [placement] auth_type is not set, so there '
                    'are no credentials for placement (%s)' % tracker_conf.sources(conf))
            try:
                adapter = adapter_from_conf(conf)
            except (ks_exc.ClientException, TypeError) as e:
                from tracker import conf as tracker_conf
                raise PlacementConfigError(
                    'configuration: [placement] options do not describe a way to '
                    'reach placement: %s (%s)' % (e, tracker_conf.sources(conf))) from e
        retries = group.connect_retries if group is not None else None
        delay = group.connect_retry_delay if group is not None else None
        self.http = http_mod.Transport(
            adapter, want=microversion,
            attempts=1 + (3 if retries is None else retries),
            retry_delay=0.5 if delay is None else delay)
        self.refresh_interval = group.association_refresh_interval if group else 300
        self.conflict_retries = group.generation_conflict_retries if group else 3
        self.known = tree_mod.ProviderTree()   # what placement holds, as we know it
        self._ownership = ownership.OwnershipFile(state_file) if state_file else None
        # uuid -> traits/aggregates the tracker wrote
        self.owned = self._ownership.load() if self._ownership else {}
        self.ensured = set()   # custom resource classes and traits known to exist
        self.sharing = {}      # root uuid -> sharing providers of its aggregates
        self._fetched = {}     # root uuid -> monotonic time of the last full read
        self._consumers = {}   # root uuid -> {consumer: record}
        self._consumers_at = {}
        self._checks = 0       # steady checks made (they take turns)
        self._lock = threading.RLock()

    # -- counters the agent reports ----------------------------------------

    @property
    def counters(self):
        return self.http.counters

    @property
    def writes(self):
        return self.http.counters.writes

    @property
    def microversion(self):
        return http_mod.version_text(self.http.negotiate())

    def new_request_id(self):
        """Start a new global request id (one per agent cycle)."""
        self.http.global_request_id = http_mod.new_request_id()
        return self.http.global_request_id

    # -- providers ----------------------------------------------------------

    def sync(self, desired, instances=None):
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
                    if self._due(self._fetched, root.uuid):
                        self._read_tree(root.uuid, reuse=True)
                for attempt in range(self.conflict_retries + 1):
                    try:
                        sync_mod.ProviderSync(self, desired, instances, result).run()
                        break
                    except sync_mod.Restart:
                        for root in roots:
                            self._read_tree(root.uuid)
                else:
                    result.errors.append(GenerationConflict(
                        'the tree kept changing during the reshape'))
            except PlacementUnreachable:
                for root in roots:     # start from placement's word next time
                    self._fetched.pop(root.uuid, None)
                raise
            finally:
                if self._ownership is not None:
                    self._ownership.save(self.owned)
            result.requests = self.http.counters.requests - before.requests
            return result

    def check(self, root_uuid):
        """One cheap GET, for a cycle that would otherwise send none:
        placement still answers and holds what we think
        (tracker.placement.watch); what differs is read again now.
        Returns what changed ('' when nothing). Raises PlacementUnreachable."""
        with self._lock:
            if self._due(self._fetched, root_uuid):
                return ''        # the sync reads the whole tree anyway
            changed = watch.check(self, root_uuid, self._checks)
            self._checks += 1
            if changed:
                LOG.info('placement changed behind the tracker (%s); rereading '
                         'the tree and its allocations', changed)
            return changed

    def reread(self, root_uuid):
        """Forget what we know of the tree's providers and allocations: the
        next read of each asks placement again."""
        self._read_tree(root_uuid, reuse=True)
        self._consumers_at.pop(root_uuid, None)

    def fetch_tree(self, root_uuid):
        """What placement holds now for the tree at ``root_uuid``."""
        with self._lock:
            return self._read_tree(root_uuid).snapshot()

    def sharing_providers(self, root_uuid):
        with self._lock:
            return list(self.sharing.get(root_uuid, []))

    def managed_providers(self, root_uuid):
        """The providers on which this host owns its instances' allocations:
        its tree and the sharing providers its aggregates reach. A part on
        any other provider (another host's, during a migration) is not its."""
        with self._lock:
            tree = ({p.uuid for p in self.known.subtree(root_uuid)}
                    if root_uuid in self.known else set())
            return tree | {p.uuid for p in self.sharing.get(root_uuid, [])}

    def _read_tree(self, root_uuid, reuse=False):
        """Reread the tree; ``reuse``: only providers whose generation moved."""
        tree = resources.fetch_tree(self.http, root_uuid, self.known if reuse else None)
        if root_uuid in self.known:
            self.known.remove(root_uuid)
        for provider in tree.providers():
            if provider.uuid in self.known:    # moved here from another tree
                self.known.remove(provider.uuid)
            self.known.add(provider)
        self.sharing[root_uuid] = self._read_sharing(tree)
        self._fetched[root_uuid] = time.monotonic()
        return tree

    def _read_sharing(self, tree):
        """Providers outside the tree sharing their resources with it."""
        aggregates = sorted({a for p in tree.providers() for a in p.aggregates})
        if not aggregates or not self.http.supports('required_traits'):
            return []
        listing = resources.list_providers(
            self.http, member_of='in:' + ','.join(aggregates),
            required='MISC_SHARES_VIA_AGGREGATE')
        return [resources.from_listing(i) for i in listing if i['uuid'] not in tree.uuids()]

    def refresh_generations(self, roots):
        for root in roots:
            for item in resources.list_providers(self.http, in_tree=root.uuid):
                if item['uuid'] in self.known:
                    self.known.update(item['uuid'], generation=item['generation'])

    def _due(self, stamps, key):
        at = stamps.get(key)
        return at is None or (self.refresh_interval > 0
                              and time.monotonic() - at >= self.refresh_interval)

    # -- allocations ----------------------------------------------------------

    def forget_allocations(self):
        self._consumers.clear()

    def get_allocations_for_tree(self, root_uuid):
        """{consumer: record} for every consumer holding resources in the tree."""
        with self._lock:
            if self._due(self._fetched, root_uuid):
                self._read_tree(root_uuid, reuse=True)
            uuids = {p.uuid for p in self.known.subtree(root_uuid)} \
                if root_uuid in self.known else set()
            self._consumers[root_uuid] = alloc_mod.for_tree(self.http, uuids)
            self._consumers_at[root_uuid] = time.monotonic()
            return {c: dict(r, allocations={rp: {'resources': dict(res)}
                                            for rp, res in r['allocations'].items()})
                    for c, r in self._consumers[root_uuid].items()}

    def sync_allocations(self, root_uuid, instances, *, authoritative=True):
        """Make the tree's allocations those of ``instances``."""
        with self._lock:
            before = self.http.counters.snapshot()
            if root_uuid not in self._consumers or self._due(self._consumers_at, root_uuid):
                self.get_allocations_for_tree(root_uuid)
            result = AllocationResult()
            consumers_mod.AllocationSync(self, root_uuid, result).run(
                instances, authoritative)
            result.requests = self.http.counters.requests - before.requests
            return result

    def put_allocations(self, consumer_uuid, allocations, project_id, user_id,
                        consumer_generation=None, consumer_type=None):
        """PUT one consumer's allocations; raises on conflict or refusal."""
        with self._lock:
            resp = alloc_mod.put(self.http, consumer_uuid, allocations, project_id,
                                 user_id, consumer_generation, consumer_type)
            alloc_mod.raise_for(resp, consumer_uuid)
            self.forget_allocations()
            return True

    def delete_allocations(self, consumer_uuid):
        """Delete every allocation of the consumer; False if it had none."""
        with self._lock:
            resp = alloc_mod.delete(self.http, consumer_uuid)
            alloc_mod.raise_for(resp, consumer_uuid)
            self.forget_allocations()
            return resp.ok

    # -- aggregates by host name ------------------------------------------------

    def aggregate_add_host(self, aggregate_uuid, host_name):
        return self._aggregate_host(aggregate_uuid, host_name, add=True)

    def aggregate_remove_host(self, aggregate_uuid, host_name):
        return self._aggregate_host(aggregate_uuid, host_name, add=False)

    def _aggregate_host(self, aggregate_uuid, host_name, add):
        """Returns True when placement holds the wanted membership."""
        try:
            self.aggregate_membership(aggregate_uuid, host_name, add)
            return True
        except PlacementError as e:
            LOG.warning('aggregate %s %s host %s not written (a later sync '
                        'reconciles): %s', aggregate_uuid,
                        'add' if add else 'remove', host_name, e)
            return False

    def aggregate_membership(self, aggregate_uuid, host_name, member):
        """'added', 'removed' or 'unchanged'; raises UnknownHost or
        PlacementError (tracker.placement.membership)."""
        with self._lock:
            return membership.set_member(self, aggregate_uuid, host_name, member)

    def aggregate_hosts(self, aggregate_uuid):
        """Names of the hosts (compute node providers) in the aggregate."""
        with self._lock:
            return membership.hosts_in(self, aggregate_uuid)
