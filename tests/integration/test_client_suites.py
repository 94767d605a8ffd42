"""osc-placement's and nova's own functional tests, with our server behind
upstream placement's unchanged PlacementFixture (tests/integration/
fixture_suites.py says how), beside the same tests with upstream's server
in the same run.

The counts are printed at the end of ./tools/run-tests.sh ("client
suites"): osc-placement's whole functional suite and nova's functional
tests that talk to placement, each beside upstream's application in the
same run; ours must pass exactly what upstream passes. The reference tier,
./tools/run-tests.sh --reference, runs nova's test_servers and
regressions/ beside upstream (hours on two cores).
"""
import time

import pytest

from tests.integration import fixture_suites

pytestmark = pytest.mark.integration

# nova's functional tests that talk to placement (issue 29's list), as
# stestr filters (regular expressions on test ids): the report client, the
# provider tree, nova-manage's heal, audit and sync of aggregates, the
# resource tracker, NUMA, port resource requests, aggregates, PCI and vGPU
# in placement. Each costs nova about 2 s of CPU (it starts its own
# services) and more of waiting, twice (ours and upstream).
_NOVA_FUNCTIONAL = r'nova\.tests\.functional\.'
_LIVE_MIGRATION_FAILED = (_NOVA_FUNCTIONAL + r'libvirt\.test_vgpu\.'
                          r'VGPULiveMigrationTestsLMFailed\.test_live_migrate_server$')
NOVA_EVERY_RUN = (
    _NOVA_FUNCTIONAL + r'(test_report_client|test_servers_provider_tree)\.',
    _NOVA_FUNCTIONAL + r'test_nova_manage\.TestNovaManagePlacement',
    _NOVA_FUNCTIONAL + r'(compute\.test_resource_tracker|libvirt\.test_numa_servers)\.',
    _NOVA_FUNCTIONAL + r'(test_servers_resource_request|test_aggregates'
    r'|libvirt\.test_pci_in_placement)\.',
    _NOVA_FUNCTIONAL + r'libvirt\.test_vgpu\.(?!VGPULiveMigrationTestsLMFailed'
    r'\.test_live_migrate_server$)',
)
# How many tests NOVA_EVERY_RUN selects in nova 34.0.0: a crashed worker's
# lost tests fail the run rather than shrink it.
NOVA_EVERY_RUN_COUNT = 431
# The list's last test runs alone: under load it can deadlock in nova's own
# cell database fixture (a periodic task inside the migration waits on the
# fixture's lock while the test polls migrations), with upstream's
# application as with ours, and then never ends. Alone it takes 20 s; a
# run that hangs is stopped and tried again.
LIVE_MIGRATION_TIMEOUT = 240
LIVE_MIGRATION_TRIES = 3
# The reference tier: the rest of the tests nova's functional suite has
# that touch placement, hours on two cores.
NOVA_REFERENCE = (
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


def _run_both(suite, name, tmp_path, record_property, filters=(), concurrency=1,
              timeout=1800):
    started = time.monotonic()
    both = fixture_suites.run_beside(suite, str(tmp_path), filters, concurrency, timeout)
    ours, theirs = both['ours'], both['upstream']
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


@pytest.mark.first
def test_nova_placement_functional_beside_upstream(tmp_path, record_property):
    # the longest test of the command: two stestr workers a side, mostly
    # waiting on nova's polling, started first so the rest runs beside it
    ours, theirs = _run_both(
        fixture_suites.NOVA, 'nova 34.0.0 placement functional (report client, provider '
        'tree, nova-manage placement, resource tracker, NUMA, port resource requests, '
        'aggregates, PCI and vGPU in placement)', tmp_path, record_property,
        NOVA_EVERY_RUN, concurrency=2, timeout=3600)
    assert fixture_suites.summary(theirs)[3] == NOVA_EVERY_RUN_COUNT, theirs['output']
    assert fixture_suites.summary(ours)[3] == NOVA_EVERY_RUN_COUNT, ours['output']
    assert not _differences(ours, theirs), '\n'.join(_differences(ours, theirs))


def _alone_until_it_ends(app, workdir):
    for attempt in range(LIVE_MIGRATION_TRIES):
        found = fixture_suites.run(fixture_suites.NOVA, app, '%s/%s-%d' % (workdir, app, attempt),
                                   (_LIVE_MIGRATION_FAILED,), concurrency=1,
                                   timeout=LIVE_MIGRATION_TIMEOUT)
        if not found['hung']:
            break
    return found


def test_nova_vgpu_live_migration_failed_beside_upstream(tmp_path, record_property):
    started = time.monotonic()
    ours, theirs = (_alone_until_it_ends(app, str(tmp_path)) for app in ('ours', 'upstream'))
    record_property('client_suites', _line(
        'nova 34.0.0 vGPU live migration failing, alone', ours, theirs,
        time.monotonic() - started))
    assert fixture_suites.summary(theirs)[3] == 1, theirs['output']
    assert not _differences(ours, theirs), '\n'.join(_differences(ours, theirs))


@pytest.mark.reference
def test_nova_servers_and_regressions_beside_upstream(tmp_path, record_property):
    # hours on two cores
    ours, theirs = _run_both(
        fixture_suites.NOVA, 'nova 34.0.0 test_servers and regressions/', tmp_path,
        record_property, NOVA_REFERENCE, concurrency=2, timeout=4 * 3600)
    assert fixture_suites.summary(theirs)[0] > 0, theirs['output']
    assert not _differences(ours, theirs), '\n'.join(_differences(ours, theirs))
