"""The agent as operators run it, as a service: real placement-server and
tracker-agent processes, a fake host edited between cycles; following the
host, signals, systemd, outages of placement and the broker, RPC."""
import json
import signal
import socket
import threading
import time
import uuid

from oslo_config import cfg
import oslo_messaging
from oslo_messaging import conffixture
import pytest

from tests.integration import agent_env as env
from tests.integration.agent_env import instance

pytestmark = pytest.mark.integration
HOST = 'fake-int-1'


def test_daemon_follows_the_host_and_stops_cleanly(placement_url, host, agents, tmp_path):
    write, path = host
    vm1 = instance('vm1', **{HOST: {'VCPU': 2, 'MEMORY_MB': 2048}})
    vm2 = instance('vm2', **{HOST: {'VCPU': 1}, HOST + '_gpu0': {'VGPU': 1}})
    description = env.describe_host(HOST, gpus=0, vfs=2, instances=[vm1])
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', placement_url, path, HOST)
    agent = agents(conf)
    placement = env.Placement(placement_url)
    env.wait_for(env.converged(placement, description), what='first sync')

    # Add a GPU, remove a VF, start an instance on the new GPU.
    description = env.describe_host(HOST, gpus=1, vfs=1, instances=[vm1, vm2])
    write(description)
    env.wait_for(env.converged(placement, description), what='GPU added, VF removed')

    # Stop vm1: its allocation is an orphan the agent removes.
    description = env.describe_host(HOST, gpus=1, vfs=1, instances=[vm2])
    write(description)
    env.wait_for(env.converged(placement, description), what='vm1 stopped')

    assert agent.stop() == 0
    log = agent.log()
    assert 'stopping: finishing the current cycle' in log
    assert 'agent stopped after' in log
    assert 'Traceback' not in log


def test_kill_9_mid_cycle_leaves_nothing_to_regret(placement_url, host, agents, tmp_path):
    write, path = host
    vms = [instance('big-vm%d' % i, **{HOST: {'VCPU': 1},
                                       '%s_vf%d' % (HOST, i): {'SRIOV_NET_VF': 1}})
           for i in range(12)]
    description = env.describe_host(HOST, gpus=4, vfs=40, instances=vms)
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', placement_url, path, HOST)
    placement = env.Placement(placement_url)
    for attempt in range(3):
        agent = agents(conf)
        # Kill as soon as some, but not all, of the tree is in placement.
        env.wait_for(lambda: len(placement.providers()) >= 3 * (attempt + 1),
                     interval=0.02, what='a partial tree')
        agent.kill()
    agents(conf)
    env.wait_for(env.converged(placement, description), what='convergence after kill -9')
    names = [p['name'] for p in placement.providers()]
    assert len(names) == len(set(names)) == 45


def test_placement_outage_is_one_log_line_each_way(placement_servers, host, agents,
                                                  tmp_path):
    db = 'sqlite:///%s' % (tmp_path / 'placement.sqlite')
    server = placement_servers(db)[0]
    write, path = host
    description = env.describe_host(HOST, vfs=1)
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST,
                          backoff_max=2)
    agent = agents(conf)
    placement = env.Placement(server.url)
    env.wait_for(env.converged(placement, description), what='first sync')

    server.stop()
    vm = instance('vm-during-outage', **{HOST: {'VCPU': 4}})
    description = env.describe_host(HOST, gpus=1, vfs=1, instances=[vm])
    write(description)
    env.wait_for(lambda: agent.log().count('placement is unreachable') == 1,
                 what='the unreachable line')
    time.sleep(5)       # several retries with backoff

    server = placement_servers(db, port=server.port, sync_db=False)[0]
    env.wait_for(env.converged(placement, description), what='convergence after the outage')
    log = agent.log()
    assert log.count('placement is unreachable') == 1
    assert log.count('placement is reachable again') == 1
    assert 'Traceback' not in log


def test_daemon_notifies_and_answers_rpc(server, host, agents, tmp_path):
    hostname = 'fake-rpc-%s' % uuid.uuid4().hex[:6]
    write, path = host
    vm = instance('vm-n', **{hostname: {'VCPU': 1}})
    write(env.describe_host(hostname, gpus=1, instances=[vm]))
    conf_path = env.write_conf(tmp_path / 'tracker.conf', server.url, path, hostname,
                               rpc=True, notifications=True)

    received, arrived = [], threading.Event()

    class Endpoint:
        def info(self, ctxt, publisher_id, event_type, payload, metadata):
            if publisher_id == 'tracker.' + hostname:
                received.append((event_type, payload['tracker_object.data']))
                arrived.set()

    conf = cfg.ConfigOpts()
    conffixture.ConfFixture(conf)
    conf(['--config-file', conf_path])
    transport = oslo_messaging.get_notification_transport(conf)
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic='versioned_notifications')], [Endpoint()],
        executor='threading', pool='test-%s' % hostname)
    listener.start()
    try:
        agent = agents(conf_path)
        env.wait_for(lambda: len([r for r in received if r[0] == 'tracker.provider.create']) == 2
                     and any(r[0] == 'tracker.allocation.update' for r in received),
                     what='notifications of the first sync')
        # Remove the GPU's instance... the instance goes, the GPU stays.
        write(env.describe_host(hostname, gpus=1))
        env.wait_for(lambda: any(r[0] == 'tracker.allocation.delete' for r in received),
                     what='the allocation.delete notification')
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
    created = sorted(d['name'] for t, d in received if t == 'tracker.provider.create')
    assert created == [hostname, hostname + '_gpu0']
    assert ('tracker.allocation.delete', {'consumer_uuid': vm['uuid']}) in received

    # The operator asks this host's agent, over RPC.
    audit = env.run('tracker-manage', conf_path, 'audit', '--host', hostname, '--json')
    report = json.loads(audit.stdout) if audit.returncode in (0, 3) else {}
    # The drift kinds first: pytest cuts long messages short.
    assert (audit.returncode, report.get('in_sync')) == (0, True), (
        env.drift_kinds(report) if report else audit.stderr, agent.log()[-2000:])
    refresh = env.run('tracker-manage', conf_path, 'refresh', '--host', hostname)
    assert refresh.returncode == 0, refresh.stderr
    env.wait_for(lambda: 'early cycle: rpc refresh' in agent.log(), what='the refresh')


def test_daemon_speaks_systemd_and_reloads_on_sighup(server, host, agents, tmp_path):
    write, path = host
    write(env.describe_host(HOST))
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST, interval=30)
    sock_path = str(tmp_path / 'notify.sock')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(60)     # a loaded CI machine starts processes slowly
    try:
        agent = agents(conf, {'NOTIFY_SOCKET': sock_path, 'WATCHDOG_USEC': '1000000'})
        messages = [sock.recv(4096).decode() for _ in range(4)]
        assert messages[0].startswith('READY=1')
        assert 'WATCHDOG=1' in messages[1:]      # every 0.5 s while waiting 30 s

        with open(conf) as f:
            text = f.read()
        with open(conf, 'w') as f:
            f.write(text.replace('interval = 30', 'interval = 7'))
        agent.proc.send_signal(signal.SIGHUP)
        # The launcher mutates the options and starts a fresh worker.
        env.wait_for(lambda: 'every 7s' in agent.log(), what='the reload')
        assert agent.stop() == 0
        rest = []
        while True:
            message = sock.recv(4096).decode()
            rest.append(message)
            if message == 'STOPPING=1':
                break
    finally:
        sock.close()
    assert rest[-1] == 'STOPPING=1'
    assert 'Traceback' not in agent.log()


def test_a_broker_that_is_down_does_not_hold_the_agent(server, host, agents, tmp_path):
    write, path = host
    vm = instance('vm-b', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=1, instances=[vm])
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST,
                          rpc=True, notifications=True)
    with open(conf) as f:
        text = f.read()
    with open(conf, 'w') as f:      # nothing listens on port 1
        f.write(text.replace(env.RABBIT, 'rabbit://guest:guest@127.0.0.1:1/'))
    agent = agents(conf)
    placement = env.Placement(server.url)
    env.wait_for(env.converged(placement, description), what='sync without a broker')
    description = env.describe_host(HOST, gpus=2)
    write(description)
    env.wait_for(env.converged(placement, description), what='a second change')
    started = time.monotonic()
    assert agent.stop() == 0
    # Not forever (oslo.messaging retries a broker forever), with room
    # for a loaded machine: the cycle finishes, then the worker exits.
    assert time.monotonic() - started < 45
