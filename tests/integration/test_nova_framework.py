"""The agent beside nova 34.0.0's own compute code: the module
tests/integration/nova_framework/test_moves.py runs in nova's functional
virtualenv (fixture_suites.NOVA, our package editable in it), once with our
placement behind nova's PlacementFixture and once with upstream's, both at
once. Each move (cold migration and resize up and down, confirmed and
reverted, live migration, evacuation and the source's return, shelve
offload and unshelve), audited on both hosts in flight and after: no
finding, no write; planted drift (a shrunk allocation, a PCI device's and
a vGPU's child part left out): exactly its finding and an accepted
repair."""
import pytest

from tests.integration import fixture_suites

pytestmark = pytest.mark.integration

TESTS = 11


@pytest.mark.first
def test_the_agent_beside_novas_compute_moves(tmp_path, record_property):
    both = fixture_suites.run_beside(fixture_suites.NOVA_FRAMEWORK, str(tmp_path),
                                     concurrency=1, timeout=1500)
    for app, found in both.items():
        record_property(app, fixture_suites.summary(found))
        assert not found['hung'], found['output']
        assert found['apps'] and set(found['apps']) == {app}, found['output']
        assert fixture_suites.summary(found) == (TESTS, 0, 0, TESTS), '\n'.join(
            '%s\n%s' % item for item in found['failures'].items()) or found['output']
