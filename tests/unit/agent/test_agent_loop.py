"""The agent's loop: when cycles run, how failures are retried, how it stops.

A real Agent with the fake driver and a real ReportClient whose placement
does not answer (nothing listens on port 9)."""
import logging
import os
import random
import socket
import threading
import time

from oslo_config import cfg
import pytest

from tracker import agent as agent_mod
from tracker import conf as tracker_conf
from tracker import systemd

HOST_YAML = """
hostname: loop-1
providers:
  - name: loop-1
    inventories: {VCPU: 4}
"""


def make_conf(tmp_path, host_file, **tracker):
    path = tmp_path / 'tracker.conf'
    options = {'driver': 'fake', 'interval': 60, 'jitter': 0,
               'backoff_max': 300, 'rpc': False, 'notifications': False}
    options.update(tracker)
    path.write_text(
        '[tracker]\n' + ''.join('%s = %s\n' % kv for kv in options.items())
        + '[fake]\nhost_file = %s\n' % host_file
        + '[placement]\nauth_type = admin_token\ntoken = admin\n'
          'endpoint = http://127.0.0.1:9\nconnect_retries = 0\n')
    return tracker_conf.load(['--config-file', str(path)], conf=cfg.ConfigOpts())


@pytest.fixture
def host_file(tmp_path):
    path = tmp_path / 'host.yaml'
    path.write_text(HOST_YAML)
    return str(path)


def test_interval_plus_jitter(tmp_path, host_file):
    conf = make_conf(tmp_path, host_file, interval=60, jitter=10)
    agent = agent_mod.Agent(conf, rng=random.Random(7))
    delays = [agent.next_delay() for _ in range(50)]
    assert all(60 <= d <= 70 for d in delays)
    assert len(set(delays)) > 1


def test_backoff_doubles_up_to_the_cap(tmp_path, host_file):
    conf = make_conf(tmp_path, host_file, interval=60, backoff_max=100)
    agent = agent_mod.Agent(conf)
    seen = []
    for failures in range(1, 6):
        agent.failures = failures
        seen.append(agent.next_delay())
    assert seen == [15.0, 30.0, 60.0, 100.0, 100.0]


def test_unreachable_placement_is_one_warning_then_backoff(tmp_path, host_file, caplog):
    conf = make_conf(tmp_path, host_file)
    agent = agent_mod.Agent(conf)
    with caplog.at_level(logging.WARNING, logger='tracker.agent'):
        results = [agent.run_cycle() for _ in range(3)]
    assert [(r.ok, r.reachable) for r in results] == [(False, False)] * 3
    assert results[0].error.startswith('placement unreachable')
    assert agent.failures == 3
    warnings = [r.message for r in caplog.records if r.name == 'tracker.agent']
    assert len(warnings) == 1 and 'placement is unreachable' in warnings[0]
    assert 'tracker_placement_reachable 0.0' in agent.metrics.exposition()
    assert 'tracker_cycles_total{result="failed"} 3.0' in agent.metrics.exposition()


def test_discovery_failure_is_a_failed_cycle(tmp_path):
    conf = make_conf(tmp_path, str(tmp_path / 'missing.yaml'))
    result = agent_mod.Agent(conf).run_cycle()
    assert not result.ok
    assert result.error.startswith('discovery failed:')
    assert 'missing.yaml' in result.error


def test_trigger_ends_the_wait(tmp_path, host_file):
    agent = agent_mod.Agent(make_conf(tmp_path, host_file))
    waited = []
    thread = threading.Thread(target=lambda: waited.append(_timed(agent._wait, 30)))
    thread.start()
    time.sleep(0.2)
    agent.trigger('test')
    thread.join(5)
    assert waited and waited[0] < 5


def _timed(fn, *args):
    start = time.monotonic()
    fn(*args)
    return time.monotonic() - start


def test_stop_lets_the_running_cycle_finish(tmp_path):
    # Discovery reads a FIFO: the cycle blocks until the test writes it.
    fifo = str(tmp_path / 'host.fifo')
    os.mkfifo(fifo)
    agent = agent_mod.Agent(make_conf(tmp_path, fifo))
    agent._ensure_parts()
    loop = threading.Thread(target=agent._loop)
    loop.start()
    time.sleep(0.3)
    agent.stop()                   # while discovery is blocked
    assert loop.is_alive()
    with open(fifo, 'w') as f:     # the cycle goes on, then the loop ends
        f.write(HOST_YAML)
    loop.join(10)
    assert not loop.is_alive()
    assert agent.cycles == 1
    assert agent.last_result.error.startswith('placement unreachable')


def test_sighup_rereads_mutable_options(tmp_path, host_file):
    conf = make_conf(tmp_path, host_file, interval=60)
    agent = agent_mod.Agent(conf)
    assert agent.next_delay() == 60
    path = tmp_path / 'tracker.conf'
    path.write_text(path.read_text().replace('interval = 60', 'interval = 5'))
    conf.mutate_config_files()
    agent.reset()
    assert agent.next_delay() == 5


def test_watchdog_pings_while_waiting(tmp_path, host_file):
    sock_path = str(tmp_path / 'notify.sock')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(0.1)
    notifier = systemd.Notifier({'NOTIFY_SOCKET': sock_path, 'WATCHDOG_USEC': '200000'})
    agent = agent_mod.Agent(make_conf(tmp_path, host_file), sd_notifier=notifier)
    agent._wait(0.65)
    pings = []
    try:
        while True:
            pings.append(sock.recv(100))
    except socket.timeout:
        pass
    finally:
        sock.close()
    assert pings.count(b'WATCHDOG=1') >= 5


def test_a_lasting_failure_is_logged_once(tmp_path, caplog):
    conf = make_conf(tmp_path, str(tmp_path / 'missing.yaml'))
    agent = agent_mod.Agent(conf)
    with caplog.at_level(logging.ERROR, logger='tracker.agent'):
        for _ in range(3):
            agent.run_cycle()
        (tmp_path / 'missing.yaml').write_text('not: [a, host')
        agent.run_cycle()
    errors = [r.getMessage() for r in caplog.records if r.name == 'tracker.agent']
    assert len(errors) == 2
    assert 'missing.yaml: No such file' in errors[0]
    assert 'missing.yaml' in errors[1] and 'No such file' not in errors[1]


def test_a_hardware_event_asks_for_an_early_cycle(tmp_path, host_file):
    import pyudev
    agent = agent_mod.Agent(make_conf(tmp_path, host_file))
    agent._start_hardware_monitor()        # a real udev netlink monitor
    monitor = agent._hardware_monitor
    assert monitor is not None
    try:
        device = next(iter(pyudev.Context().list_devices(subsystem='pci')))
        monitor.handle('remove', device)   # what a PCI hot-unplug delivers
        assert agent._wake.is_set()
        agent._wake.clear()
        monitor.handle('online', device)   # an action that changes no tree
        assert not agent._wake.is_set()
    finally:
        monitor.stop()
