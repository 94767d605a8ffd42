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


def pytest_terminal_summary(terminalreporter):
    """Print the upstream conformance counts the tests recorded (works
    under xdist: user properties travel with the reports)."""
    lines = [value for report in terminalreporter.stats.get('passed', [])
             + terminalreporter.stats.get('failed', [])
             for name, value in getattr(report, 'user_properties', ())
             if name == 'conformance' and report.when == 'call']
    if lines:
        terminalreporter.section('upstream conformance')
        for line in sorted(lines):
            terminalreporter.write_line(line)
