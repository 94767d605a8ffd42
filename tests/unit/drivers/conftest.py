"""Fixtures for driver tests: configuration and fake hosts."""
from oslo_config import cfg
import pytest

from tests.fixtures import sysfs
from tracker.drivers import options


@pytest.fixture
def conf(tmp_path):
    """Driver options registered, defaults as shipped but the agent's
    state (drained devices) in the test's directory, nothing parsed."""
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    conf.set_override('state_path', str(tmp_path / 'state'), 'tracker')
    yield conf
    conf.reset()


@pytest.fixture
def fake_host(conf):
    """A factory: fake_host(**FakeHost args) -> a FakeHost the conf reads."""
    made = []

    def make(**kwargs):
        host = sysfs.FakeHost(**kwargs)
        host.setUp()
        made.append(host)
        conf.set_override('sysfs_root', host.sys_root, 'tracker')
        conf.set_override('proc_root', host.proc_root, 'tracker')
        conf.set_override('instances_path', host.instances_path)
        conf.set_override('host', 'node1')
        return host
    yield make
    for host in made:
        host.cleanUp()
