"""The driver interface: what a discovery source gives the agent.

A driver reads one source (libvirt, the bare host, a YAML file) and answers
one question, ``discover()``: which providers this host should have and
which instances run on it, consuming what from which provider. Drivers
never speak HTTP.
"""
import abc
from collections.abc import Callable
import dataclasses
from typing import ClassVar

from tracker.providers.provider import Provider


@dataclasses.dataclass
class Instance:
    """A running instance (a placement consumer) and what it consumes.

    ``allocations`` maps a provider uuid to ``{resource_class: amount}``.
    """
    uuid: str
    name: str = ''
    project_id: str | None = None
    user_id: str | None = None
    allocations: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class HostSnapshot:
    """Everything one discovery saw.

    ``providers`` lists the providers this host should have, parents before
    children; the first is the root compute node. ``instances`` lists the
    instances running on the host.
    """
    hostname: str
    providers: list[Provider] = dataclasses.field(default_factory=list)
    instances: list[Instance] = dataclasses.field(default_factory=list)
    # devices taken out of scheduling: {PCI address: reason}
    drained: dict[str, str] = dataclasses.field(default_factory=dict)
    # the PCI addresses the host has, reported or not (why a device's
    # provider is kept: out of the spec, or gone)
    host_devices: set[str] = dataclasses.field(default_factory=set)

    @property
    def root(self) -> Provider:
        return self.providers[0]

    def provider(self, uuid: str) -> Provider:
        return next(p for p in self.providers if p.uuid == uuid)


class Driver(abc.ABC):
    """A discovery source."""

    #: the name used in configuration ([tracker] driver = ...)
    name: ClassVar[str | None] = None

    @abc.abstractmethod
    def discover(self) -> HostSnapshot:
        """Return a ``HostSnapshot`` of the host as it is now."""

    def configured_host(self) -> str | None:
        """The host name the driver is configured to report under, when it
        has one of its own (the fake driver's file); None: the agent's
        ([compute] host, else the machine's name)."""
        return None

    def watch(self, trigger: Callable[[str], None]) -> None:
        """Call ``trigger(why)`` on the source's own events that should run
        a cycle early (libvirt's node-device removals); the default has none."""

    def close(self) -> None:
        """Release connections; the default holds none."""
