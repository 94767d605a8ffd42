"""What can go wrong talking to placement, as exceptions the agent can catch.

Every one carries the HTTP ``status`` and placement's error ``code`` (when
the server sent one) so that callers branch on facts, not on message text.
"""
from collections.abc import Iterable
from typing import Any

# placement's error codes (microversion 1.23+) the client acts on
CONCURRENT_UPDATE = 'placement.concurrent_update'
DUPLICATE_NAME = 'placement.duplicate_name'
INVENTORY_INUSE = 'placement.inventory.inuse'
PROVIDER_IN_USE = 'placement.resource_provider.inuse'
CANNOT_DELETE_PARENT = 'placement.resource_provider.cannot_delete_parent'


class PlacementError(Exception):
    """A request placement refused or could not answer."""

    def __init__(self, message: str, status: int | None = None, code: str | None = None,
                 provider: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.provider = provider


class PlacementUnreachable(PlacementError):
    """No answer (connection refused, timeouts, 503) after the retries."""


class PlacementConfigError(PlacementError):
    """The [placement] options do not say how to reach placement."""


class UnknownHost(PlacementError):
    """No compute node provider of that host name in placement."""


class PlacementTooOld(PlacementError):
    """The server's newest microversion is below what the client needs."""


class GenerationConflict(PlacementError):
    """Another writer kept changing the provider; retries exhausted."""


class ConsumerConflict(PlacementError):
    """Another writer kept changing the consumer's allocations."""


class InventoryInUse(PlacementError):
    """Removing these resource classes would orphan allocations."""

    def __init__(self, message: str, provider: str | None = None,
                 resource_classes: Iterable[str] = (), **kw: Any) -> None:
        super().__init__(message, provider=provider, **kw)
        self.resource_classes = set(resource_classes)


class ProviderInUse(PlacementError):
    """The provider holds allocations (or kept children) so it stays."""


class DuplicateProviderName(PlacementError):
    """Another provider (another uuid) already has this name."""


class ReshapeUnsupported(PlacementError):
    """Allocated inventory must move but the server predates POST /reshaper."""
