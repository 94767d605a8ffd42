"""RPC on topic ``tracker`` (server = host): what tracker-manage asks.

``refresh`` (a cast) starts a cycle now; ``audit`` (a call) answers with
the host's drift as the audit's JSON report.
"""
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from oslo_config import cfg
import oslo_messaging

if TYPE_CHECKING:
    from tracker.audit import AuditReport

TOPIC = 'tracker'
VERSION = '1.0'


class Answering(Protocol):
    """What the endpoint asks of the agent (tracker.agent.Agent)."""

    def trigger(self, reason: str) -> None: ...

    def audit(self) -> 'AuditReport': ...


# oslo.messaging has no type information: its transports, servers and
# clients are Any here.

class TrackerEndpoint:
    target = oslo_messaging.Target(version=VERSION)

    def __init__(self, agent: Answering) -> None:
        self.agent = agent

    def refresh(self, ctxt: dict[str, Any]) -> None:
        self.agent.trigger('rpc refresh')

    def audit(self, ctxt: dict[str, Any]) -> dict[str, Any]:
        return self.agent.audit().as_dict()


def server(conf: cfg.ConfigOpts, host: str, agent: Answering,
           transport: oslo_messaging.Transport | None = None
           ) -> oslo_messaging.MessageHandlingServer:
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

    def __init__(self, conf: cfg.ConfigOpts, host: str,
                 transport: oslo_messaging.Transport | None = None, timeout: int = 60) -> None:
        self.transport = transport or oslo_messaging.get_rpc_transport(conf)
        target = oslo_messaging.Target(topic=TOPIC, server=host,
                                       version=VERSION)
        self.client = oslo_messaging.get_rpc_client(
            self.transport, target, timeout=timeout)

    def refresh(self) -> None:
        self.client.cast({}, 'refresh')

    def audit(self) -> dict[str, Any]:
        answer: dict[str, Any] = self.client.call({}, 'audit')
        return answer

    def close(self) -> None:
        self.transport.cleanup()
