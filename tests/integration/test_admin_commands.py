"""placement-manage and placement-status, run as the commands they are."""
import concurrent.futures
import json
import subprocess

import pytest
import sqlalchemy as sa

from placement_server.db import migration
from placement_server.db import takeover
from tests import upstream
from tests.integration import servers

pytestmark = pytest.mark.integration

# What `db version` prints after our `db sync`: ours, and upstream's head
# stamped beside it (a database upstream can take back).
SYNCED = '%s; upstream placement %s' % (migration.head(), takeover.UPSTREAM_HEAD)
PLACEMENT_STATUS = servers.PLACEMENT_MANAGE.replace('placement-manage', 'placement-status')


def _run(tmp_path, *args, **environ):
    return subprocess.run(list(args), cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=120, env=upstream.clean_env(HOME=str(tmp_path), **environ))


def _status(tmp_path, url, *args):
    """placement-status upgrade check --json on ``url`` (it reads
    configuration as upstream's does: files, or OS_* variables)."""
    return _run(tmp_path, PLACEMENT_STATUS, 'upgrade', 'check', '--json', *args,
                OS_PLACEMENT_DATABASE__CONNECTION=url)


def _checks(result):
    return {c['check']: (c['result'], c['details']) for c in json.loads(result.stdout)['checks']}


def test_db_sync_creates_then_changes_nothing(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'p.sqlite')
    first = _run(tmp_path, servers.PLACEMENT_MANAGE, '--database-connection', url, 'db', 'sync')
    assert first.returncode == 0, first.stderr
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        counts = [conn.exec_driver_sql('SELECT count(*) FROM %s' % t).scalar()
                  for t in ('resource_classes', 'traits')]
    again = _run(tmp_path, servers.PLACEMENT_MANAGE, '--database-connection', url, 'db', 'sync')
    assert again.returncode == 0, again.stderr
    with engine.connect() as conn:
        assert [conn.exec_driver_sql('SELECT count(*) FROM %s' % t).scalar()
                for t in ('resource_classes', 'traits')] == counts
    engine.dispose()
    assert counts[0] > 10 and counts[1] > 100
    version = _run(tmp_path, servers.PLACEMENT_MANAGE, '--database-connection', url,
                   'db', 'version')
    assert version.stdout.strip() == SYNCED


def test_db_sync_and_version_on_each_database(database, tmp_path):
    result = _run(tmp_path, servers.PLACEMENT_MANAGE, '--database-connection', database.url,
                  'db', 'sync')
    assert result.returncode == 0, result.stderr
    result = _run(tmp_path, servers.PLACEMENT_MANAGE, '--database-connection', database.url,
                  'db', 'version')
    assert (result.returncode, result.stdout.strip()) == (0, SYNCED)
    result = _status(tmp_path, database.url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert _checks(result)['Database schema'][0] == 0


def test_status_fails_on_an_empty_database(tmp_path):
    (tmp_path / 'empty.sqlite').touch()
    url = 'sqlite:///%s' % (tmp_path / 'empty.sqlite')
    result = _status(tmp_path, url)
    assert result.returncode == 2
    code, details = _checks(result)['Database schema']
    assert code == 2 and 'placement-manage db sync' in details


def test_status_warns_when_standard_traits_are_missing(tmp_path):
    url = 'sqlite:///%s' % (tmp_path / 'p.sqlite')
    assert _run(tmp_path, servers.PLACEMENT_MANAGE, '--database-connection', url,
                'db', 'sync').returncode == 0
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM traits WHERE name = 'HW_CPU_X86_AVX2'")
    engine.dispose()
    result = _status(tmp_path, url)
    assert result.returncode == 1
    assert '1 standard resource classes or traits are missing' in result.stdout


@pytest.mark.parametrize('command, args, status, message', [
    ('placement-manage', ['db'], 2, 'the following arguments are required'),
    ('placement-manage', ['db', 'drop'], 2, "invalid choice: 'drop'"),
    ('placement-manage', ['--database-connection', 'mysql+pymysql://root@127.0.0.1:1/x',
                          'db', 'sync'], 1, 'cannot use database'),
    ('placement-status', ['upgrade', 'check'], 255, 'cannot use database'),
])
def test_mistakes_are_one_line(tmp_path, command, args, status, message):
    path = servers.PLACEMENT_MANAGE.replace('placement-manage', command)
    result = _run(tmp_path, path, *args, OS_PLACEMENT_DATABASE__CONNECTION='bogus://')
    assert result.returncode == status
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_status_usage_error_exits_2(tmp_path):
    # oslo.config's command line (as upstream's placement-status): argparse's usage and error
    result = _run(tmp_path, PLACEMENT_STATUS, 'upgrade')
    assert result.returncode == 2
    assert 'the following arguments are required' in result.stderr


def test_reload_views_after_rows_changed_by_hand(placement_servers, database, tmp_path):
    """Rows changed behind the servers' backs (hand-made SQL, a restore) are
    not in the change sequence, so workers keep their views until
    ``db reload-views`` tells them all to load again."""
    server, = placement_servers(database.url, workers=2)
    rp = servers.make_provider(server.url, {'VCPU': {'total': 4}})
    query = server.url + '/allocation_candidates?resources=VCPU:1'

    def ask(_):
        status, body = servers.call('GET', query)
        assert status == 200, body
        return json.dumps([r['allocations'] for r in body['allocation_requests']],
                          sort_keys=True)

    def proposed():
        # Several at once, many times: both workers answer.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            return set(pool.map(ask, range(24)))
    before = {json.dumps([{rp: {'resources': {'VCPU': 1}}}])}
    assert proposed() == before
    engine = sa.create_engine(database.url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql('DELETE FROM inventories')
    finally:
        engine.dispose()
    assert proposed() == before
    result = _run(tmp_path, servers.PLACEMENT_MANAGE, '--database-connection', database.url,
                  'db', 'reload-views')
    assert result.returncode == 0, result.stderr
    assert 'reloads its resource view' in result.stdout
    assert proposed() == {'[]'}
