"""Devices libvirt says are failing: its node devices, judged between
discoveries as the host driver judges sysfs (drivers/host/health.py).

An allocated device is failing when libvirt no longer lists it (removed:
hot-unplugged, or dropped by the kernel after a fatal error), when a
node-device removal event named it (``events.py``: it arrives before the
next discovery, with the reason), or when it shows no kernel driver after
libvirt showed one (unbound; a device never seen bound is not judged by
it: libvirt's test driver, a host that binds at first use). The failing
device is drained (drivers/drains.py) until the operator undrains it.
"""
from collections.abc import Iterable

from tracker.drivers import facts
from tracker.drivers.host import health as host_health

REMOVED = 'removed (libvirt node-device event) while allocated'


class NodeDeviceHealth:
    """What earlier discoveries and events taught about each device."""

    def __init__(self) -> None:
        self.judge = host_health.Health()
        self.bound: set[str] = set()       # addresses libvirt showed with a driver
        self.removed: set[str] = set()     # addresses a removal event named

    def device_removed(self, address: str) -> None:
        """A node-device removal event (events.py; any thread)."""
        self.removed.add(address)

    def failing(self, devices: Iterable[facts.PciDevice],
                used: Iterable[str]) -> dict[str, str]:
        """{address: reason} of the devices failing now."""
        judged = []
        for device in devices:
            if device.driver:
                self.bound.add(device.address)
            elif device.address not in self.bound:
                device = facts.PciDevice(**{**vars(device), 'driver': None})
            judged.append(device)
        used = set(used)
        removed, self.removed = self.removed, set()
        found = {a: REMOVED for a in sorted(removed & used)}
        for address, reason in self.judge.failing(judged, used).items():
            found.setdefault(address, reason)
        return found
