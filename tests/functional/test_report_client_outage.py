"""While placement is away, the agent's log says so once, not per retry.

A real Agent (fake driver) and ReportClient in front of our placement in
process; a switch between them plays the outage: every request is a 503
while it is off, so the client retries each one, cycle after cycle.
"""
import logging

from oslo_config import cfg
import pytest

from placement_server.direct import PlacementDirect
from tests.functional.test_report_client_transport import adapter_onto
from tracker import agent as agent_mod
from tracker import conf as tracker_conf
from tracker.placement.client import ReportClient

HOST_YAML = """
hostname: outage-1
providers:
  - name: outage-1
    inventories: {VCPU: 4}
"""


class Switch:
    """Placement as it is (on) or answering 503 to everything (off)."""

    def __init__(self, app):
        self.app = app
        self.on = True
        self.refused = 0

    def __call__(self, environ, start_response):
        if not self.on:
            self.refused += 1
            start_response('503 Service Unavailable', [('Content-Type', 'text/plain')])
            return [b'down for maintenance']
        return self.app(environ, start_response)


@pytest.fixture
def switch(database):
    placement = PlacementDirect(database)
    with placement:
        yield Switch(placement.app)


def make_agent(tmp_path, switch):
    host_file = tmp_path / 'host.yaml'
    host_file.write_text(HOST_YAML)
    path = tmp_path / 'tracker.conf'
    path.write_text('[tracker]\ndriver = fake\nrpc = false\nnotifications = false\n'
                    '[fake]\nhost_file = %s\n'
                    '[placement]\nconnect_retries = 2\nconnect_retry_delay = 0.01\n'
                    % host_file)
    conf = tracker_conf.load(['--config-file', str(path)], conf=cfg.ConfigOpts())
    client = ReportClient(conf, adapter=adapter_onto(switch))
    return agent_mod.Agent(conf, client=client)


def test_one_line_when_placement_goes_and_one_when_it_is_back(tmp_path, switch, caplog):
    agent = make_agent(tmp_path, switch)
    assert agent.run_cycle().ok
    with caplog.at_level(logging.DEBUG, logger='tracker'):
        switch.on = False
        # A steady host sends nothing: a change makes the cycles write.
        (tmp_path / 'host.yaml').write_text(HOST_YAML.replace('VCPU: 4', 'VCPU: 8'))
        failed = [agent.run_cycle() for _ in range(4)]
        switch.on = True
        back = agent.run_cycle()
    assert [r.reachable for r in failed] == [False] * 4
    assert back.ok and back.reachable and back.writes == 1
    assert switch.refused == 4 * 3        # every cycle: one try and two retries

    tracker_lines = [r for r in caplog.records if r.name.startswith('tracker')]
    loud = [(r.levelname, r.getMessage()) for r in tracker_lines
            if r.levelno >= logging.WARNING]
    assert len(loud) == 1, loud
    assert loud[0][1].startswith('placement is unreachable')
    infos = [r.getMessage() for r in tracker_lines if r.levelno == logging.INFO]
    assert infos == ['placement is reachable again after 4 failed cycle(s)']
    retries = [r for r in tracker_lines if r.name == 'tracker.placement.http']
    assert len(retries) == 4 * 2 and {r.levelno for r in retries} == {logging.DEBUG}
