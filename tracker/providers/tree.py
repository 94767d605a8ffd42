"""ProviderTree: the tracker's in-memory picture of a provider tree.

One tree holds the providers of one host (a root compute node and its
children), or what placement holds for them. It is a plain container: it
speaks no HTTP and reads no hardware. Every method takes the lock, and
everything handed out is a copy, so the agent's cycle, the audit and the
report client can share one tree across threads.
"""
from collections.abc import Iterable
import threading

from tracker.providers.provider import Provider  # noqa: F401 (re-exported)


class ProviderTree:

    def __init__(self, providers: Iterable[Provider] = ()) -> None:
        self._lock = threading.RLock()
        self._by_uuid: dict[str, Provider] = {}   # our own copies
        self._by_name: dict[str, str] = {}        # name -> uuid
        for provider in providers:
            self.add(provider)

    # -- reading ----------------------------------------------------------

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_uuid)

    def __contains__(self, name_or_uuid: object) -> bool:
        return isinstance(name_or_uuid, str) and self.find(name_or_uuid) is not None

    def uuids(self) -> set[str]:
        with self._lock:
            return set(self._by_uuid)

    def find(self, name_or_uuid: str) -> Provider | None:
        """A copy of the provider with this uuid or name, or None."""
        with self._lock:
            found = self._find(name_or_uuid)
            return found.copy() if found else None

    def get(self, name_or_uuid: str) -> Provider:
        """Like find(), but a missing provider is a KeyError."""
        found = self.find(name_or_uuid)
        if found is None:
            raise KeyError(name_or_uuid)
        return found

    def roots(self) -> list[Provider]:
        with self._lock:
            return [p.copy() for p in self._by_uuid.values()
                    if p.parent_uuid not in self._by_uuid]

    def children(self, uuid: str) -> list[Provider]:
        with self._lock:
            return [p.copy() for p in self._by_uuid.values()
                    if p.parent_uuid == uuid]

    def subtree(self, uuid: str) -> list[Provider]:
        """``uuid`` and everything under it, parents first."""
        with self._lock:
            return [p.copy() for p in self._ordered()
                    if uuid in self._lineage(p.uuid)]

    def root_of(self, uuid: str) -> str:
        with self._lock:
            return self._lineage(uuid)[-1]

    def providers(self) -> list[Provider]:
        """Every provider, parents before their children."""
        with self._lock:
            return [p.copy() for p in self._ordered()]

    def snapshot(self) -> 'ProviderTree':
        """An independent deep copy of the whole tree."""
        with self._lock:
            return ProviderTree(self._ordered())

    def __deepcopy__(self, memo: dict[int, object]) -> 'ProviderTree':
        return self.snapshot()      # the lock is not copied: a new tree has its own

    # -- writing ----------------------------------------------------------

    def add(self, provider: Provider) -> None:
        """Add a provider; its parent, if any, must already be here."""
        with self._lock:
            if provider.uuid in self._by_uuid:
                raise ValueError('provider %s is already in the tree'
                                 % provider.uuid)
            if provider.name in self._by_name:
                raise ValueError('a provider named %r is already in the tree'
                                 % provider.name)
            if provider.parent_uuid and provider.parent_uuid not in self._by_uuid:
                raise ValueError('provider %s: parent %s is not in the tree'
                                 % (provider.uuid, provider.parent_uuid))
            self._by_uuid[provider.uuid] = provider.copy()
            self._by_name[provider.name] = provider.uuid

    def put(self, provider: Provider) -> None:
        """Add the provider, or replace the one with its uuid."""
        with self._lock:
            if provider.uuid in self._by_uuid:
                self._replace(provider.copy())
            else:
                self.add(provider)

    def remove(self, uuid: str) -> list[str]:
        """Remove a provider and everything under it; returns the uuids."""
        with self._lock:
            gone = [p.uuid for p in self._ordered()
                    if uuid in self._lineage(p.uuid)]
            for each in gone:
                self._by_name.pop(self._by_uuid.pop(each).name, None)
            return gone

    def update(self, uuid: str, **fields: object) -> None:
        """Change some fields of one provider (generation, traits, ...)."""
        with self._lock:
            current = self._by_uuid[uuid].copy()
            for name, value in fields.items():
                if not hasattr(current, name):
                    raise AttributeError(name)
                setattr(current, name, value)
            self._replace(current.copy())

    # -- internals (lock held) ---------------------------------------------

    def _find(self, name_or_uuid: str) -> Provider | None:
        return self._by_uuid.get(name_or_uuid) or self._find_name(name_or_uuid)

    def _find_name(self, name: str) -> Provider | None:
        uuid = self._by_name.get(name)
        return self._by_uuid[uuid] if uuid is not None else None

    def _replace(self, provider: Provider) -> None:
        old = self._by_uuid[provider.uuid]
        if self._by_name.get(old.name) == old.uuid:
            del self._by_name[old.name]
        self._by_uuid[provider.uuid] = provider
        self._by_name[provider.name] = provider.uuid

    def _lineage(self, uuid: str) -> list[str]:
        """uuid, its parent, ... up to the root within this tree."""
        chain = [uuid]
        seen = {uuid}
        parent = self._by_uuid[uuid].parent_uuid
        while parent is not None and parent in self._by_uuid and parent not in seen:
            chain.append(parent)
            seen.add(parent)
            parent = self._by_uuid[parent].parent_uuid
        return chain

    def _ordered(self) -> list[Provider]:
        depth = {u: len(self._lineage(u)) for u in self._by_uuid}
        # stable within a level: the order providers were added in
        order = {u: i for i, u in enumerate(self._by_uuid)}
        return [self._by_uuid[u] for u in sorted(self._by_uuid,
                                                 key=lambda u: (depth[u], order[u]))]


def as_tree(desired: 'ProviderTree | Iterable[Provider]') -> 'ProviderTree':
    """A ProviderTree from a tree or from a list of providers, parents first."""
    if isinstance(desired, ProviderTree):
        return desired
    return ProviderTree(desired)


__all__ = ['ProviderTree', 'Provider', 'as_tree']
