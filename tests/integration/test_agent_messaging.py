"""The agent's RPC server and notifications over the RabbitMQ running here."""
import subprocess
import sys
import threading
import time
import uuid

from oslo_config import cfg
import oslo_messaging
from oslo_messaging import conffixture
import pytest

from tracker import agent as agent_mod
from tracker import conf as tracker_conf
from tracker import notify
from tracker import rpc

RABBIT = 'rabbit://guest:guest@127.0.0.1:5672/'
pytestmark = pytest.mark.integration


@pytest.fixture
def conf(tmp_path):
    path = tmp_path / 'tracker.conf'
    host = 'test-%s' % uuid.uuid4().hex[:8]
    path.write_text('[DEFAULT]\ntransport_url = %s\nhost = %s\n'
                    % (RABBIT, host))
    conf = cfg.ConfigOpts()
    # What oslo.messaging registers on the global CONF only.
    conffixture.ConfFixture(conf)
    return tracker_conf.load(['--config-file', str(path)], conf=conf)


def test_refresh_cast_wakes_the_agent(conf, tmp_path):
    agent = agent_mod.Agent(conf)
    server = rpc.server(conf, agent.host, agent)
    server.start()
    try:
        assert not agent._wake.is_set()
        # The command an operator runs, as a real process.
        cfg_path = tmp_path / 'tracker.conf'
        out = subprocess.run(
            [sys.executable, '-m', 'tracker.cmd.manage', '--config-file',
             str(cfg_path), 'refresh', '--host', agent.host],
            capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == 'refresh requested from %s' % agent.host
        assert agent._wake.wait(10)
    finally:
        server.stop()
        server.wait()


def test_audit_call_without_an_agent_is_one_line_and_exit_1(tmp_path, conf):
    cfg_path = tmp_path / 'tracker.conf'
    out = subprocess.run(
        [sys.executable, '-m', 'tracker.cmd.manage', '--config-file',
         str(cfg_path), 'audit', '--host', 'nobody-%s' % uuid.uuid4().hex[:6],
         '--timeout', '2'],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 1
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert out.stderr.startswith('tracker-manage: no answer from the agent')


class Collector:
    def __init__(self):
        self.received = []
        self.arrived = threading.Event()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        self.received.append((publisher_id, event_type, payload))
        self.arrived.set()


def test_notifications_arrive_on_rabbitmq(conf):
    transport = oslo_messaging.get_notification_transport(conf)
    collector = Collector()
    # A pool of our own: a copy of every notification, whoever else listens.
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic=notify.TOPIC)], [collector],
        executor='threading', pool='test-%s' % uuid.uuid4().hex)
    listener.start()
    try:
        publisher = notify.Publisher(conf, 'compute-x')
        payload = notify.envelope('ProviderPayload', {'uuid': 'abc'})
        assert publisher.publish([('tracker.provider.delete', payload)]) == 1
        publisher.close()
        deadline = time.time() + 20
        while time.time() < deadline and not any(
                r[0] == 'tracker.compute-x' for r in collector.received):
            collector.arrived.wait(0.5)
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
    assert ('tracker.compute-x', 'tracker.provider.delete', payload) in collector.received
