"""osc-placement's and nova's own functional tests, with our server behind
upstream placement's unchanged PlacementFixture (tests/integration/
fixture_suites.py says how), beside the same run with upstream's server.

The counts are printed at the end of ./tools/run-tests.sh ("client
suites"). nova's slower tests (test_servers, regressions/) run in the
reference tier: ./tools/run-tests.sh --reference.
"""
import time

import pytest

from tests.integration import fixture_suites

pytestmark = pytest.mark.integration

# nova's functional tests that talk to placement (issue 29's list): stestr
# filters, each a regular expression on test ids.
_NOVA_FUNCTIONAL = r'nova\.tests\.functional\.'
NOVA_PLACEMENT_FACING = (
    _NOVA_FUNCTIONAL + r'(test_report_client|test_servers_provider_tree'
    r'|test_servers_resource_request|test_aggregates|libvirt\.test_numa_servers'
    r'|libvirt\.test_pci_in_placement|libvirt\.test_vgpu|compute\.test_resource_tracker)\.',
    # heal_allocations, heal port allocations, sync_aggregates, audit
    _NOVA_FUNCTIONAL + r'test_nova_manage\.TestNovaManagePlacement',
)
NOVA_SLOW = (
    _NOVA_FUNCTIONAL + r'test_servers\.',
    _NOVA_FUNCTIONAL + r'regressions\.',
)


def _line(name, ours, theirs, seconds):
    passed, failed, skipped, total = fixture_suites.summary(ours)
    line = '%s, ours behind upstream\'s PlacementFixture: %d/%d passed' % (name, passed, total)
    if skipped:
        line += ', %d skipped' % skipped
    if failed:
        line += ', %d FAILED' % failed
    if theirs is not None:
        passed, failed, skipped, total = fixture_suites.summary(theirs)
        line += ' (upstream in the same run: %d/%d passed%s%s)' % (
            passed, total, ', %d skipped' % skipped if skipped else '',
            ', %d failed' % failed if failed else '')
    return line + ' (%.0f s)' % seconds


def _differences(ours, theirs):
    """Tests whose status differs, with our traceback."""
    names = sorted(set(ours['results']) | set(theirs['results']))
    return ['%s: ours %s, upstream %s\n%s' % (
        name, ours['results'].get(name), theirs['results'].get(name),
        ours['failures'].get(name, '')[-1500:])
        for name in names if ours['results'].get(name) != theirs['results'].get(name)]


def _run_both(suite, name, tmp_path, record_property, filters=()):
    started = time.monotonic()
    ours = fixture_suites.run(suite, 'ours', str(tmp_path / 'ours'), filters)
    theirs = fixture_suites.run(suite, 'upstream', str(tmp_path / 'upstream'), filters)
    record_property('client_suites', _line(name, ours, theirs, time.monotonic() - started))
    # The swap took place: every fixture of our run served ours, as many
    # fixtures as upstream's run made.
    assert ours['apps'] and set(ours['apps']) == {'ours'}, ours['output']
    assert set(theirs['apps']) == {'upstream'}, theirs['output']
    assert len(ours['apps']) == len(theirs['apps'])
    return ours, theirs


def test_osc_placement_functional_suite(tmp_path, record_property):
    ours, theirs = _run_both(fixture_suites.OSC, 'osc-placement 4.9.1 functional',
                             tmp_path, record_property)
    assert fixture_suites.summary(theirs) == (160, 0, 0, 160), theirs['failures']
    assert fixture_suites.summary(ours) == (160, 0, 0, 160), '\n'.join(
        _differences(ours, theirs))


def _nova(filters, name, tmp_path, record_property):
    ours, theirs = _run_both(fixture_suites.NOVA, name, tmp_path, record_property, filters)
    assert fixture_suites.summary(theirs)[0] > 0, theirs['output']
    assert not _differences(ours, theirs), '\n'.join(_differences(ours, theirs))


def test_nova_placement_facing_functional_tests(tmp_path, record_property):
    _nova(NOVA_PLACEMENT_FACING, 'nova 34.0.0 placement-facing functional',
          tmp_path, record_property)


@pytest.mark.reference
def test_nova_servers_and_regressions(tmp_path, record_property):
    _nova(NOVA_SLOW, 'nova 34.0.0 test_servers and regressions/', tmp_path, record_property)
