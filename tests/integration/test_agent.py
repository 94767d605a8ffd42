"""The agent as operators run it: real placement-server and tracker-agent
processes, a fake host edited between cycles."""
import json
import signal
import socket
import threading
import time
import uuid

import oslo_messaging
import pytest
from oslo_config import cfg
from oslo_messaging import conffixture

from tests.integration import agent_env as env
from tests.integration.agent_env import instance

pytestmark = pytest.mark.integration
HOST = 'fake-int-1'


@pytest.fixture
def server(placement_servers, tmp_path):
    return placement_servers('sqlite:///%s' % (tmp_path / 'placement.sqlite'))[0]


@pytest.fixture(params=['ours', 'upstream'])
def placement_url(request):
    """Our placement-server, then upstream openstack-placement: same results."""
    if request.param == 'ours':
        return request.getfixturevalue('server').url
    return request.getfixturevalue('upstream_placement')


@pytest.fixture
def host(tmp_path):
    """(write(description), host file path)."""
    path = tmp_path / 'host.yaml'
    return (lambda description: env.write_host(path, description)), str(path)


@pytest.fixture
def agents(tmp_path):
    started = []

    def start(conf_path, environ=None):
        agent = env.AgentProcess(conf_path, tmp_path / 'agent.log', environ).start()
        started.append(agent)
        return agent
    yield start
    for agent in started:
        agent.stop()


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


def _kinds(report):
    return sorted((d['kind'], d['name'] or d['uuid']) for d in report['drift'])


def test_audit_reports_the_injected_drift_and_fix_repairs_it(placement_url, host, tmp_path):
    write, path = host
    vm1 = instance('vm1', **{HOST: {'VCPU': 2}})
    vm2 = instance('vm2', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=1, vfs=1, instances=[vm1, vm2])
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', placement_url, path, HOST)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stderr
    assert HOST + '_gpu0' in once.stdout and 'VGPU' in once.stdout

    audit = env.run('tracker-audit', conf)
    assert (audit.returncode, audit.stdout.strip()) == (
        0, 'host %s: in sync with placement' % HOST)

    # The host changes behind placement's back (the agent is not running):
    # a second GPU, vm2 gone, vm3 started, and more memory.
    vm3 = instance('vm3', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=2, vfs=1, instances=[vm1, vm3])
    description['providers'][0]['inventories']['MEMORY_MB']['total'] = 131072
    write(description)

    audit = env.run('tracker-audit', conf, '--json')
    assert audit.returncode == 3, audit.stderr
    report = json.loads(audit.stdout)
    assert _kinds(report) == sorted([
        ('provider_missing', HOST + '_gpu1'),
        ('inventory_differs', HOST),
        ('allocation_orphan', vm2['uuid']),
        ('allocation_missing', 'vm3')])

    dry = env.run('tracker-agent', conf, 'audit', '--dry-run')
    assert dry.returncode == 3
    assert 'writes would make:' in dry.stdout
    assert 'DELETE /allocations/%s' % vm2['uuid'] in dry.stdout
    assert env.run('tracker-audit', conf).returncode == 3   # the dry run wrote nothing

    fix = env.run('tracker-audit', conf, '--fix')
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert 'repaired: in sync with placement' in fix.stdout
    assert env.run('tracker-audit', conf).returncode == 0
    env.wait_for(env.converged(env.Placement(placement_url), description))


def test_commands_fail_in_one_line(tmp_path, host):
    write, path = host
    write(env.describe_host(HOST))
    # Nothing listens on port 9: placement is unreachable.
    conf = env.write_conf(tmp_path / 'tracker.conf', 'http://127.0.0.1:9', path, HOST)
    for command, args, code in [('tracker-audit', [], 1),
                                ('tracker-agent', ['--once'], 1),
                                ('tracker-agent', ['--bogus'], 2),
                                ('tracker-manage', ['aggregates', 'sync', '--file',
                                                    str(tmp_path / 'none.yaml')], 1)]:
        out = env.run(command, conf, *args)
        assert out.returncode == code, (command, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, (command, out.stderr)
        assert out.stderr.startswith(command + ':'), out.stderr
        assert 'Traceback' not in out.stderr


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
        _kinds(report) if report else audit.stderr, agent.log()[-2000:])
    refresh = env.run('tracker-manage', conf_path, 'refresh', '--host', hostname)
    assert refresh.returncode == 0, refresh.stderr
    env.wait_for(lambda: 'early cycle: rpc refresh' in agent.log(), what='the refresh')


def test_against_upstream_placement(upstream_placement, host, agents, tmp_path):
    write, path = host
    vm1 = instance('vm1', **{HOST: {'VCPU': 2}, HOST + '_gpu0': {'VGPU': 1}})
    description = env.describe_host(HOST, gpus=1, vfs=2, instances=[vm1])
    write(description)
    conf = env.write_conf(tmp_path / 'tracker.conf', upstream_placement, path, HOST)
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stdout + once.stderr
    placement = env.Placement(upstream_placement)
    env.wait_for(env.converged(placement, description))

    agent = agents(conf)
    vm2 = instance('vm2', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=2, vfs=1, instances=[vm2])
    write(description)
    env.wait_for(env.converged(placement, description), what='upstream follows the host')
    assert agent.stop() == 0

    vm3 = instance('vm3', **{HOST: {'VCPU': 1}})
    description = env.describe_host(HOST, gpus=2, vfs=1, instances=[vm3])
    write(description)
    audit = env.run('tracker-audit', conf, '--json')
    assert audit.returncode == 3
    assert _kinds(json.loads(audit.stdout)) == [('allocation_missing', 'vm3'),
                                                ('allocation_orphan', vm2['uuid'])]
    assert env.run('tracker-audit', conf, '--fix').returncode == 0
    assert env.run('tracker-audit', conf).returncode == 0


def test_operator_provider_config_is_reported_and_audited(server, host, tmp_path):
    write, path = host
    description = env.describe_host(HOST, gpus=1)
    write(description)
    overlays = tmp_path / 'provider_config'
    overlays.mkdir()
    (overlays / 'licences.yaml').write_text(
        "meta: {schema_version: '1.0'}\n"
        "providers:\n"
        "  - identification: {uuid: $COMPUTE_NODE}\n"
        "    inventories:\n"
        "      additional: [{CUSTOM_DB_LICENSE: {total: 4}}]\n"
        "    traits: {additional: [CUSTOM_GOLD]}\n")
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST,
                          provider_config_location=str(overlays))
    once = env.run('tracker-agent', conf, '--once')
    assert once.returncode == 0, once.stderr
    tree = env.Placement(server.url).tree(HOST)
    assert tree[HOST]['inventories']['CUSTOM_DB_LICENSE'] == 4
    assert 'CUSTOM_GOLD' in tree[HOST]['traits']
    audit = env.run('tracker-audit', conf)
    assert audit.returncode == 0, audit.stdout


def test_aggregate_sync_survives_the_agent_and_reruns(placement_servers, host, agents,
                                                      tmp_path):
    db = 'sqlite:///%s' % (tmp_path / 'placement.sqlite')
    server = placement_servers(db)[0]
    write, path = host
    write(env.describe_host(HOST))
    conf = env.write_conf(tmp_path / 'tracker.conf', server.url, path, HOST)
    agent = agents(conf)
    placement = env.Placement(server.url)
    root = env.root_uuid(HOST)
    env.wait_for(lambda: root in [p['uuid'] for p in placement.providers()])

    rack, ssd = '5f0a3e4e-8c1b-4a57-9d0c-7e1f2a3b4c5d', '0b9d2c6e-3f41-4e8a-a2d7-6c5b4a3f2e1d'
    agg_file = tmp_path / 'aggregates.yaml'
    agg_file.write_text('aggregates:\n'
                        '  - {name: rack-a, uuid: %s, hosts: [%s]}\n'
                        '  - {name: ssd, uuid: %s, hosts: []}\n' % (rack, HOST, ssd))

    def members():
        return set(placement.get('/resource_providers/%s/aggregates' % root)['aggregates'])

    out = env.run('tracker-manage', conf, 'aggregates', 'add-host', ssd, HOST)
    assert out.returncode == 0, out.stderr
    assert members() == {ssd}
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 0, out.stderr
    assert '%s in rack-a' % HOST in out.stdout
    assert members() == {rack}

    time.sleep(3)                       # agent cycles keep the membership
    assert members() == {rack}
    audit = env.run('tracker-audit', conf)
    assert audit.returncode == 0, audit.stdout
    assert 'kept, written by others' in audit.stdout

    out = env.run('tracker-manage', conf, 'aggregates', 'remove-host', 'rack-a', HOST,
                  '--file', str(agg_file))
    assert out.returncode == 0, out.stderr
    assert members() == set()

    # Placement down: a warning, exit 1; rerun once it is back: reconciled.
    agent.stop()
    server.stop()
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 1
    assert 'run the sync again' in out.stdout
    server = placement_servers(db, port=server.port, sync_db=False)[0]
    out = env.run('tracker-manage', conf, 'aggregates', 'sync', '--file', str(agg_file))
    assert out.returncode == 0, out.stdout + out.stderr
    assert members() == {rack}


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


def test_libvirt_test_driver_host_is_reported_in_sync(server, tmp_path):
    """libvirt's test:///default runs an 8 GiB guest on cells of 2 + 4 GiB:
    with the operator's overcommit (nova's default ram ratio, 1.5) it fits,
    and one allocation may take the whole overcommitted capacity."""
    conf = tmp_path / 'tracker.conf'
    conf.write_text('[tracker]\ndriver = libvirt\nrpc = false\nnotifications = false\n'
                    'state_path = %s\n'
                    '[libvirt]\nconnection_uri = test:///default\n'
                    '[compute]\nram_allocation_ratio = 1.5\n'
                    'instances_path = %s\n'
                    '[placement]\nauth_type = admin_token\ntoken = admin\n'
                    'endpoint = %s\nconnect_retries = 0\n'
                    % (tmp_path, tmp_path, server.url))
    once = env.run('tracker-agent', str(conf), '--once')
    assert once.returncode == 0, once.stdout + once.stderr
    audit = env.run('tracker-audit', str(conf), '--json')
    assert audit.returncode == 0, audit.stdout + audit.stderr
    report = json.loads(audit.stdout)
    assert report['in_sync'] is True and report['drift'] == []
    hostname = report['host']
    memory = env.Placement(server.url).get(
        '/resource_providers/%s/inventories/MEMORY_MB' % env.root_uuid(hostname))
    assert (memory['total'], memory['max_unit']) == (6144, 8448)
    assert list(env.Placement(server.url).allocations(hostname).values()) == [
        {hostname: {'VCPU': 2, 'MEMORY_MB': 8192}}]
