"""libvirt's node-device removal events, as a health source.

libvirt tells of a node device deleted (a PCI function hot-unplugged or
dropped by the kernel) as it happens; the agent learns it before the next
discovery, with a reason of its own (health.REMOVED), and runs a cycle
early. One read-only connection with libvirt's default event loop, on a
daemon thread of its own; a libvirt without the events (or without the
connection) costs only them: the next discovery still sees the device gone.
"""
from collections.abc import Callable
import logging
import re
import threading

import libvirt

LOG = logging.getLogger(__name__)
_PCI_NAME = re.compile(r'^pci_([0-9a-f]{4})_([0-9a-f]{2})_([0-9a-f]{2})_([0-7])$')
_loop_lock = threading.Lock()
_loop_started = False


def pci_address(node_name: str) -> str | None:
    """'pci_0000_05_00_0' -> '0000:05:00.0'; None for any other device."""
    found = _PCI_NAME.match(node_name)
    if found is None:
        return None
    return '%s:%s:%s.%s' % found.groups()


def _run_loop() -> None:
    while True:
        libvirt.virEventRunDefaultImpl()


def _ensure_loop() -> None:
    """libvirt's default event loop, once per process, on a daemon thread."""
    global _loop_started
    with _loop_lock:
        if not _loop_started:
            libvirt.virEventRegisterDefaultImpl()
            threading.Thread(target=_run_loop, name='libvirt-events',
                             daemon=True).start()
            _loop_started = True


class NodeDeviceEvents:
    """Calls ``removed(node device name)`` for each node device deleted."""

    def __init__(self, uri: str, removed: Callable[[str], None]) -> None:
        self.uri = uri
        self.removed = removed
        self.connection: libvirt.virConnect | None = None
        self._callback: int | None = None

    def start(self) -> bool:
        """Listen; False (logged) when libvirt cannot tell."""
        _ensure_loop()
        try:
            self.connection = libvirt.openReadOnly(self.uri)
            self._callback = self.connection.nodeDeviceEventRegisterAny(
                None, libvirt.VIR_NODE_DEVICE_EVENT_ID_LIFECYCLE, self._event, None)
        except libvirt.libvirtError as exc:
            LOG.warning('no node-device events from libvirt at %s (%s): removed '
                        'devices are seen at the next discovery', self.uri, exc)
            self.stop()
            return False
        return True

    def _event(self, _conn: libvirt.virConnect, device: libvirt.virNodeDevice,
               event: int, _detail: int, _opaque: object) -> None:
        if event == libvirt.VIR_NODE_DEVICE_EVENT_DELETED:
            self.removed(device.name())

    def stop(self) -> None:
        if self.connection is None:
            return
        try:
            if self._callback is not None:
                self.connection.nodeDeviceEventDeregisterAny(self._callback)
            self.connection.close()
        except libvirt.libvirtError:
            pass                    # already gone
        self.connection, self._callback = None, None
