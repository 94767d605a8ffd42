"""Devices the host says are failing, from the facts its sources fill.

A device is failing when, between two discoveries, its AER fatal or
non-fatal count rises (host/aer.py), or when an instance uses it and it
is gone from the host or bound to no driver (host/binding.py). The first
discovery after a start only learns the counts. A failing device is
drained with the reason (drivers/drains.py) until the operator undrains
it: a device that failed once is not trusted again by itself.
"""
from collections.abc import Iterable

from tracker.drivers import facts


class Health:
    """Counts seen at the last discovery, per device address."""

    def __init__(self) -> None:
        self.counts: dict[str, tuple[int | None, int | None]] = {}

    def failing(self, devices: Iterable[facts.PciDevice],
                used: Iterable[str]) -> dict[str, str]:
        """{address: reason} of the devices failing now."""
        found: dict[str, str] = {}
        seen = {d.address: d for d in devices}
        for address, device in seen.items():
            before = self.counts.get(address)
            now = (device.aer_fatal, device.aer_nonfatal)
            if before is not None:
                for kind, old, new in (('fatal', before[0], now[0]),
                                       ('non-fatal', before[1], now[1])):
                    if old is not None and new is not None and new > old:
                        found[address] = 'AER %s errors (%d -> %d)' % (kind, old, new)
                        break
            self.counts[address] = now
        for address in used:
            if address not in seen:
                found.setdefault(address, 'gone from the host while allocated')
            elif seen[address].driver == '':
                found.setdefault(address, 'no driver bound while allocated')
        return found
