"""What the agent knows of placement, between two reads.

The report client reads placement once and then trusts what it learnt,
keeping it up to date with each of its own writes, so that a host that did
not change costs no HTTP. ``KnownPlacement`` is that knowledge, in one
object: the client owns it and lends it to the modules that sync providers
(sync), allocations (consumers), check for changes made behind the
tracker's back (watch) and write aggregates by host name (membership).
It never speaks HTTP.
"""
import time
from typing import Any

from tracker.providers import tree as tree_mod
from tracker.providers.provider import Provider

# {provider uuid: {'traits': names, 'aggregates': uuids}} the tracker wrote
Owned = dict[str, dict[str, set[str]]]

# A consumer as GET /allocations/{consumer} gives it: allocations
# ({provider: {resource class: n}}), project_id, user_id,
# consumer_generation, consumer_type.
ConsumerRecord = dict[str, Any]


class KnownPlacement:
    """What placement holds for this host, as far as the tracker knows.

    Trees and consumers read more than ``refresh_interval`` seconds ago are
    stale (0: never by age, only when marked): what others wrote since
    (traits, aggregates, sharing providers, allocations) is learnt then.
    """

    def __init__(self, refresh_interval: int = 300, owned: Owned | None = None) -> None:
        self.refresh_interval = refresh_interval
        self.tree = tree_mod.ProviderTree()      # providers with their generations
        self.owned: Owned = {} if owned is None else owned
        # custom resource classes and traits known to exist: (kind, name)
        self.ensured: set[tuple[str, str]] = set()
        self.sharing: dict[str, list[Provider]] = {}   # root -> sharing providers
        self.consumers: dict[str, dict[str, ConsumerRecord]] = {}   # root -> consumers
        self.read_at: dict[str, float] = {}   # root -> monotonic time of its last full read
        self.consumers_read_at: dict[str, float] = {}
        # providers gone from the host but kept while allocations hold them
        # (sync.ProviderSync.keep): {uuid: why}
        self.kept: dict[str, str] = {}

    # -- freshness -------------------------------------------------------

    def tree_stale(self, root_uuid: str) -> bool:
        return self._due(self.read_at, root_uuid)

    def consumers_stale(self, root_uuid: str) -> bool:
        return root_uuid not in self.consumers or self._due(self.consumers_read_at, root_uuid)

    def mark_tree_stale(self, root_uuid: str) -> None:
        self.read_at.pop(root_uuid, None)

    def mark_consumers_stale(self, root_uuid: str) -> None:
        self.consumers_read_at.pop(root_uuid, None)

    def _due(self, stamps: dict[str, float], root_uuid: str) -> bool:
        at = stamps.get(root_uuid)
        return at is None or (self.refresh_interval > 0
                              and time.monotonic() - at >= self.refresh_interval)

    # -- providers -------------------------------------------------------

    def learn_tree(self, root_uuid: str, tree: tree_mod.ProviderTree) -> None:
        """Take ``tree``, just read, as what placement holds under ``root_uuid``."""
        if root_uuid in self.tree:
            self.tree.remove(root_uuid)
        for provider in tree.providers():
            if provider.uuid in self.tree:    # moved here from another tree
                self.tree.remove(provider.uuid)
            self.tree.add(provider)

    def learn_sharing(self, root_uuid: str, providers: list[Provider]) -> None:
        """The sharing providers of the tree: the last part of its full read."""
        self.sharing[root_uuid] = providers
        self.read_at[root_uuid] = time.monotonic()

    def learn_generations(self, generations: dict[str, int]) -> None:
        """{provider: generation} as placement lists them now."""
        for uuid, generation in generations.items():
            if uuid in self.tree:
                self.tree.update(uuid, generation=generation)

    def tree_uuids(self, root_uuid: str) -> set[str]:
        """The providers of the tree at ``root_uuid`` (none if unknown)."""
        if root_uuid not in self.tree:
            return set()
        return {p.uuid for p in self.tree.subtree(root_uuid)}

    def managed_providers(self, root_uuid: str) -> set[str]:
        """The providers on which this host owns its instances' allocations:
        its tree and the sharing providers its aggregates reach. A part on
        any other provider (another host's, during a migration) is not its."""
        return self.tree_uuids(root_uuid) | {p.uuid for p in self.sharing.get(root_uuid, [])}

    # -- consumers -------------------------------------------------------

    def learn_consumers(self, root_uuid: str, consumers: dict[str, ConsumerRecord]) -> None:
        self.consumers[root_uuid] = consumers
        self.consumers_read_at[root_uuid] = time.monotonic()

    def holders(self, uuid: str, root_uuid: str) -> set[str] | None:
        """The consumers holding resources of ``uuid`` in the tree at
        ``root_uuid``, as last read; None when they are not known now."""
        if self.consumers_stale(root_uuid):
            return None
        return {c for c, record in self.consumers[root_uuid].items()
                if record.get('allocations', {}).get(uuid)}

    def forget_allocations(self) -> None:
        """A write outside the allocation sync (a reshape, a caller's PUT)
        moved consumers: read them all again before trusting them."""
        self.consumers.clear()
