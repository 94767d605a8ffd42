"""Hardware hotplug: ask the agent for an early cycle when devices change.

A pyudev netlink monitor on the pci, mdev and block subsystems. Only events
that can change the provider tree call back: PCI functions appearing,
going or changing driver (VFs created, a device bound to vfio-pci),
mediated devices created or removed, whole disks added or removed (not
partitions, loop, ram or zram devices). The callback runs on the monitor's
thread and should only signal the agent (a burst of events, e.g. 64 VFs,
calls it once per event; the agent's next cycle sees them all).

Events come from udevd when it runs (after its rules, the normal case), and
else straight from the kernel (containers, hosts without udevd): a udev
monitor there would bind, and never hear a thing.
"""
from collections.abc import Callable
import logging
import os

import pyudev

LOG = logging.getLogger(__name__)

SUBSYSTEMS = ('pci', 'mdev', 'block')
_ACTIONS = {
    'pci': {'add', 'remove', 'change', 'bind', 'unbind'},
    'mdev': {'add', 'remove', 'change'},
    'block': {'add', 'remove'},
}
_VIRTUAL_DISKS = ('loop', 'ram', 'zram', 'nbd')

# pyudev has no type information: its Context, Monitor, MonitorObserver
# and Device are Any here.
Callback = Callable[[str, pyudev.Device], None]


# udevd's control socket: present while udevd runs (libudev checks the same).
UDEVD_CONTROL = '/run/udev/control'


def event_source(control: str = UDEVD_CONTROL) -> str:
    """'udev' when udevd runs, else 'kernel' (raw kernel uevents)."""
    return 'udev' if os.path.exists(control) else 'kernel'


def changes_tree(action: str, device: pyudev.Device) -> bool:
    """Whether ``action`` on ``device`` (a pyudev.Device) can change what
    the host reports."""
    subsystem = device.subsystem
    if action not in _ACTIONS.get(subsystem, ()):
        return False
    if subsystem == 'block':
        return bool(device.device_type == 'disk'
                    and not device.sys_name.startswith(_VIRTUAL_DISKS))
    return True


class HardwareMonitor:
    """Calls ``callback(action, device)`` for hardware changes.

    ``source`` is 'udev' (events after udevd's rules ran: the normal case)
    or 'kernel' (raw kernel uevents, for hosts without udevd); by default
    the one this host has (``event_source``).
    """

    def __init__(self, callback: Callback, source: str | None = None,
                 context: pyudev.Context | None = None) -> None:
        self.callback = callback
        self.source = source or event_source()
        self.context = context or pyudev.Context()
        self.observer: pyudev.MonitorObserver | None = None

    def start(self) -> None:
        monitor = pyudev.Monitor.from_netlink(self.context, source=self.source)
        for subsystem in SUBSYSTEMS:
            monitor.filter_by(subsystem)
        # Bind the socket now, not later on the observer's thread, so no
        # event after start() returns is missed.
        monitor.start()
        self.observer = pyudev.MonitorObserver(monitor, callback=self._event,
                                               name='tracker-udev-monitor')
        self.observer.daemon = True
        self.observer.start()
        if self.source == 'udev':
            LOG.info('hardware events: listening to udevd')
        else:
            LOG.info('hardware events: listening to kernel uevents (udevd is not '
                     'running: %s is missing)', UDEVD_CONTROL)

    def stop(self) -> None:
        if self.observer is not None:
            self.observer.send_stop()
            self.observer.join(timeout=5)
            self.observer = None

    def _event(self, device: pyudev.Device) -> None:
        self.handle(device.action, device)

    def handle(self, action: str, device: pyudev.Device) -> None:
        """Call back if ``action`` on ``device`` can change the tree."""
        if changes_tree(action, device):
            LOG.info('hardware %s: %s %s; asking for an early cycle',
                     action, device.subsystem, device.sys_name)
            try:
                self.callback(action, device)
            except Exception:  # a failing callback must not kill the thread
                LOG.exception('hardware change callback failed')
