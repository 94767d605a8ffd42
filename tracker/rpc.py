"""RPC on topic ``tracker`` (server = host): what tracker-manage asks.

``refresh`` (a cast) starts a cycle now; ``audit`` (a call) answers with
the host's drift as the audit's JSON report.
"""
import oslo_messaging

TOPIC = 'tracker'
VERSION = '1.0'


class TrackerEndpoint:
    target = oslo_messaging.Target(version=VERSION)

    def __init__(self, agent):
        self.agent = agent

    def refresh(self, ctxt):
        self.agent.trigger('rpc refresh')

    def audit(self, ctxt):
        return self.agent.audit().as_dict()


def server(conf, host, agent, transport=None):
    """An RPC server, not started: ``.start()`` connects to the broker (and
    keeps trying while it is down), ``.stop()`` and ``.wait()`` end it."""
    transport = transport or oslo_messaging.get_rpc_transport(conf)
    target = oslo_messaging.Target(topic=TOPIC, server=host)
    rpc_server = oslo_messaging.get_rpc_server(
        transport, target, [TrackerEndpoint(agent)],
        access_policy=oslo_messaging.DefaultRPCAccessPolicy)
    return rpc_server


class Client:
    """What tracker-manage uses to reach the agent of one host."""

    def __init__(self, conf, host, transport=None, timeout=60):
        self.transport = transport or oslo_messaging.get_rpc_transport(conf)
        target = oslo_messaging.Target(topic=TOPIC, server=host,
                                       version=VERSION)
        self.client = oslo_messaging.get_rpc_client(
            self.transport, target, timeout=timeout)

    def refresh(self):
        self.client.cast({}, 'refresh')

    def audit(self):
        return self.client.call({}, 'audit')

    def close(self):
        self.transport.cleanup()
