"""Devices kept in placement for their allocations, as the audit shows them.

A device's provider that the host no longer reports (removed from [pci]
device_spec, or gone from the host) stays while a running instance holds
it (tracker/placement/sync.py, ``keep``), every inventory reserved at
its total. That is no drift: the audit names it, says why and who holds
it; the instance's part on it is not judged either. Until the sync has
closed it (reserved below total), it is drift too (provider_kept_open).
An orphan's part is drift as ever: the sync removes it, and the provider
with it.
"""
from collections.abc import Iterable
import dataclasses
from typing import Any

from tracker.drivers.base import HostSnapshot
from tracker.providers.provider import Provider


@dataclasses.dataclass
class KeptDevice:
    uuid: str
    name: str
    address: str
    reason: str
    consumers: list[str]
    closed: bool = True       # every inventory reserved at its total

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        return '%s (%s): %s, held by %s' % (self.name, self.address, self.reason,
                                            ', '.join(self.consumers))


def address(name: str, host: str) -> str:
    """The PCI address in a device provider's name: '<host>_<ADDRESS>', or
    a GPU's '<host>_pci_<dddd>_<bb>_<ss>_<f>' (libvirt's node device name)."""
    suffix = name[len(host) + 1:] if name.startswith(host + '_') else name
    if suffix.startswith('pci_') and suffix.count('_') == 4:
        domain, bus, slot, function = suffix[4:].split('_')
        return '%s:%s:%s.%s' % (domain, bus, slot, function)
    return suffix.lower()


def find(snapshot: HostSnapshot, providers: Iterable[Provider],
         allocations: dict[str, dict[str, Any]]) -> list[KeptDevice]:
    """The providers placement has under the host's root that the host does
    not report and that running instances hold (``allocations``:
    {consumer: {provider: resources}}, normalized)."""
    reported = {p.uuid for p in snapshot.providers}
    running = {i.uuid for i in snapshot.instances}
    kept = []
    for provider in providers:
        if provider.uuid in reported or provider.parent_uuid is None:
            continue
        holders = sorted(c for c, held in allocations.items()
                         if c in running and held.get(provider.uuid))
        if not holders:
            continue
        where = address(provider.name, snapshot.hostname)
        reason = ('no longer in [pci] device_spec' if where in snapshot.host_devices
                  else 'gone from the host')
        closed = all(i['reserved'] >= i['total'] for i in provider.inventories.values())
        kept.append(KeptDevice(provider.uuid, provider.name, where, reason, holders,
                               closed))
    return kept
