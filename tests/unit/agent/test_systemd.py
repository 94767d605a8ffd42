import os
import socket
import uuid

import pytest

from tracker import systemd


@pytest.fixture
def listener(tmp_path):
    path = str(tmp_path / 'notify.sock')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    yield path, sock
    sock.close()


def test_ready_and_status_are_one_datagram(listener):
    path, sock = listener
    notifier = systemd.Notifier({'NOTIFY_SOCKET': path})
    assert notifier.ready('agent started') is True
    assert sock.recv(4096) == b'READY=1\nSTATUS=agent started'


def test_watchdog_and_stopping(listener):
    path, sock = listener
    notifier = systemd.Notifier({'NOTIFY_SOCKET': path})
    notifier.watchdog()
    notifier.stopping()
    assert sock.recv(4096) == b'WATCHDOG=1'
    assert sock.recv(4096) == b'STOPPING=1'


def test_abstract_socket_name():
    name = 'tracker-test-%s' % uuid.uuid4().hex
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind('\0' + name)
    sock.settimeout(2)
    try:
        assert systemd.Notifier({'NOTIFY_SOCKET': '@' + name}).ready()
        assert sock.recv(4096) == b'READY=1'
    finally:
        sock.close()


def test_without_systemd_nothing_is_sent():
    notifier = systemd.Notifier({})
    assert notifier.ready() is False
    assert notifier.watchdog_interval is None


def test_socket_gone_is_a_warning_not_a_crash(tmp_path):
    notifier = systemd.Notifier({'NOTIFY_SOCKET': str(tmp_path / 'gone')})
    assert notifier.watchdog() is False


def test_watchdog_interval_is_half_the_timeout():
    env = {'WATCHDOG_USEC': '30000000', 'WATCHDOG_PID': str(os.getpid())}
    assert systemd.Notifier(env).watchdog_interval == 15.0


def test_watchdog_meant_for_another_process_is_ignored():
    env = {'WATCHDOG_USEC': '30000000', 'WATCHDOG_PID': '1'}
    assert systemd.Notifier(env).watchdog_interval is None


def test_watchdog_of_the_launcher_is_kept_by_its_worker():
    """oslo.service's launcher is systemd's main process; the agent runs in
    its worker, a child, and sends the keep-alives."""
    env = {'WATCHDOG_USEC': '30000000', 'WATCHDOG_PID': str(os.getppid())}
    assert systemd.Notifier(env).watchdog_interval == 15.0
