"""osc-placement's and nova's own functional tests, with our server behind
upstream placement's unchanged PlacementFixture (tests/integration/
fixture_suites.py says how), beside the same run with upstream's server.

The counts are printed at the end of ./tools/run-tests.sh ("client
suites"): osc-placement's whole suite beside upstream, and nova's
placement functional tests (NOVA_EVERY_RUN) against upstream's results.
The reference tier, ./tools/run-tests.sh --reference, runs nova's whole
placement-facing list and its test_servers and regressions/ beside
upstream.
"""
import time

import pytest

from tests.integration import fixture_suites

pytestmark = pytest.mark.integration

# nova's functional tests that talk to placement (issue 29's list), as
# stestr filters (regular expressions on test ids). Each takes nova 3-6 s
# of CPU (it starts its own services), so the README's test command runs
# the ones whose subject is placement itself (NOVA_EVERY_RUN, about 90
# tests: the report client, the provider tree, nova-manage's heal, audit
# and sync of aggregates) with our server; the whole list (432 tests) runs
# beside upstream in the reference tier, with test_servers and regressions/.
_NOVA_FUNCTIONAL = r'nova\.tests\.functional\.'
NOVA_EVERY_RUN = (
    _NOVA_FUNCTIONAL + r'(test_report_client|test_servers_provider_tree)\.',
    _NOVA_FUNCTIONAL + r'test_nova_manage\.TestNovaManagePlacement',
)
NOVA_PLACEMENT_FACING = NOVA_EVERY_RUN + (
    _NOVA_FUNCTIONAL + r'(test_servers_resource_request|test_aggregates'
    r'|libvirt\.test_numa_servers|libvirt\.test_pci_in_placement|libvirt\.test_vgpu'
    r'|compute\.test_resource_tracker)\.',
)
NOVA_SLOW = (
    _NOVA_FUNCTIONAL + r'test_servers\.',
    _NOVA_FUNCTIONAL + r'regressions\.',
)
# What upstream's own server does not pass of NOVA_EVERY_RUN (seen in the
# reference tier's runs beside it): {test id: status}.
NOVA_EVERY_RUN_UPSTREAM_NOT_PASSING = {}


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


def _run_both(suite, name, tmp_path, record_property, filters=(), timeout=1800):
    started = time.monotonic()
    ours = fixture_suites.run(suite, 'ours', str(tmp_path / 'ours'), filters, timeout=timeout)
    theirs = fixture_suites.run(suite, 'upstream', str(tmp_path / 'upstream'), filters,
                                timeout=timeout)
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


def test_nova_placement_functional_tests(tmp_path, record_property):
    """NOVA_EVERY_RUN with our server; upstream's results are those the
    reference tier saw beside it (NOVA_EVERY_RUN_UPSTREAM_NOT_PASSING)."""
    started = time.monotonic()
    ours = fixture_suites.run(fixture_suites.NOVA, 'ours', str(tmp_path), NOVA_EVERY_RUN)
    record_property('client_suites', _line(
        'nova 34.0.0 placement functional (report client, provider tree, nova-manage '
        'placement)', ours, None, time.monotonic() - started))
    assert ours['apps'] and set(ours['apps']) == {'ours'}, ours['output']
    passed, failed, skipped, total = fixture_suites.summary(ours)
    assert total == 91, ours['output']
    not_passing = {name: status for name, status in ours['results'].items()
                   if status != 'success'}
    assert not_passing == NOVA_EVERY_RUN_UPSTREAM_NOT_PASSING, '\n'.join(
        '%s %s\n%s' % (name, status, ours['failures'].get(name, '')[-1500:])
        for name, status in sorted(not_passing.items()))


def _nova_beside_upstream(filters, name, tmp_path, record_property):
    # hours on two cores, each run
    ours, theirs = _run_both(fixture_suites.NOVA, name, tmp_path, record_property, filters,
                             timeout=4 * 3600)
    assert fixture_suites.summary(theirs)[0] > 0, theirs['output']
    assert not _differences(ours, theirs), '\n'.join(_differences(ours, theirs))


@pytest.mark.reference
def test_nova_placement_facing_beside_upstream(tmp_path, record_property):
    _nova_beside_upstream(NOVA_PLACEMENT_FACING, 'nova 34.0.0 placement-facing functional',
                          tmp_path, record_property)


@pytest.mark.reference
def test_nova_servers_and_regressions_beside_upstream(tmp_path, record_property):
    _nova_beside_upstream(NOVA_SLOW, 'nova 34.0.0 test_servers and regressions/',
                          tmp_path, record_property)
