"""Integration tests: real processes (servers, agents) on real databases."""
import pytest

from tests.integration import agent_env as env
from tests.integration.servers import placement_servers  # noqa: F401
from tests.upstream import _upstream_server  # noqa: F401  (fixtures)
from tests.upstream import upstream_placement  # noqa: F401


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
