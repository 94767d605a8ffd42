"""Fixtures shared by every test layer."""
import pytest

from tests import databases


@pytest.fixture(scope='session')
def _databases(tmp_path_factory):
    made = {}

    def get(backend):
        if backend not in made:
            made[backend] = databases.TestDatabase(
                backend, str(tmp_path_factory.mktemp('db')))
        return made[backend]
    yield get
    for test_db in made.values():
        test_db.drop()


@pytest.fixture(params=databases.BACKENDS)
def database(request, _databases):
    """A placement database on each backend, empty but for standard names."""
    test_db = _databases(request.param)
    test_db.reset()
    return test_db.db


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'reference: slow runs of upstream clients\' suites; only in '
        'tools/run-tests.sh --reference')
    config.addinivalue_line(
        'markers', 'first: a long test, collected first so the other tests run '
        'beside it rather than after it')


def pytest_collection_modifyitems(items):
    # xdist hands each worker a contiguous slice of the collection at the
    # start: a long test at the front is begun at once, and the worker
    # holding it gets the rest of its slice when it ends
    items.sort(key=lambda item: item.get_closest_marker('first') is None)


# What tests record (record_property) and the section printing it at the end.
SUMMARIES = (('conformance', 'upstream conformance'),
             ('client_suites', 'client suites'))


def pytest_terminal_summary(terminalreporter):
    """Print the counts the upstream suites recorded (works under xdist:
    user properties travel with the reports)."""
    reports = (terminalreporter.stats.get('passed', [])
               + terminalreporter.stats.get('failed', []))
    for key, title in SUMMARIES:
        lines = [value for report in reports
                 for name, value in getattr(report, 'user_properties', ())
                 if name == key and report.when == 'call']
        if lines:
            terminalreporter.section(title)
            for line in sorted(lines):
                terminalreporter.write_line(line)
