"""The hotplug monitor, on this machine's real /sys and netlink socket."""
import os
import threading

import pytest
import pyudev

from tracker.drivers import udev

CONTEXT = pyudev.Context()


def real(subsystem, device_type=None, not_named=()):
    """Some real device of ``subsystem`` on this machine."""
    for device in CONTEXT.list_devices(subsystem=subsystem):
        if ((device_type is None or device.device_type == device_type)
                and not device.sys_name.startswith(not_named)):
            return device
    raise AssertionError('this machine has no %s device' % subsystem)


def pci():
    return real('pci')


@pytest.mark.parametrize('action', ['add', 'remove', 'change', 'bind',
                                    'unbind'])
def test_pci_changes_call_back(action):
    assert udev.changes_tree(action, pci())


def test_pci_moves_do_not():
    assert not udev.changes_tree('move', pci())
    assert not udev.changes_tree(None, pci())


def test_whole_disks_added_or_removed_call_back():
    disk = real('block', 'disk', not_named=udev._VIRTUAL_DISKS)
    assert udev.changes_tree('add', disk)
    assert udev.changes_tree('remove', disk)
    assert not udev.changes_tree('change', disk)


def test_virtual_disks_do_not():
    loop = real('block', 'disk', not_named=('vd', 'sd', 'nvme', 'zram'))
    assert loop.sys_name.startswith(udev._VIRTUAL_DISKS)
    assert not udev.changes_tree('add', loop)


def test_other_subsystems_do_not():
    assert not udev.changes_tree('add', real('net'))


def _trigger(device, action):
    with open(os.path.join(device.sys_path, 'uevent'), 'w') as f:
        f.write(action)


def test_monitor_calls_back_for_a_real_uevent():
    """A synthetic kernel uevent through the real netlink socket: the loop
    device's is filtered out, the PCI device's reaches the callback."""
    seen, arrived = [], threading.Event()

    def callback(action, device):
        seen.append((action, device.subsystem, device.sys_name))
        arrived.set()

    monitor = udev.HardwareMonitor(callback, source='kernel')
    monitor.start()
    try:
        loop = real('block', 'disk', not_named=('vd', 'sd', 'nvme', 'zram'))
        device = pci()
        _trigger(loop, 'change')
        _trigger(device, 'change')
        assert arrived.wait(10), 'no uevent arrived'
    finally:
        monitor.stop()
    assert seen[0] == ('change', 'pci', device.sys_name)
    assert not [s for s in seen if s[1] == 'block']
    assert monitor.observer is None


def test_a_failing_callback_does_not_stop_the_monitor():
    calls = []

    def callback(action, device):
        calls.append((action, device.sys_name))
        raise RuntimeError('agent busy')

    monitor = udev.HardwareMonitor(callback, context=CONTEXT)
    device = pci()
    monitor.handle('add', device)
    monitor.handle('move', device)        # filtered out
    monitor.handle('remove', device)
    assert calls == [('add', device.sys_name), ('remove', device.sys_name)]
