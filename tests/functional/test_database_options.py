"""[placement_database] options from oslo.db's list do what they say, or
say that they are ignored: none is accepted and silently dropped."""
import logging

import pytest

from placement_server import deploy
from tests import databases

# The options concern database servers (SQLite takes none of them).
SERVERS = pytest.mark.parametrize(
    'backend', [b for b in ('postgresql', 'mysql') if b in databases.BACKENDS])


def _conf(tmp_path, backend, **options):
    url = databases.ADMIN_URLS[backend]
    lines = ['[placement_database]', 'connection = %s' % url]
    lines += ['%s = %s' % item for item in options.items()]
    path = tmp_path / 'placement.conf'
    path.write_text('\n'.join(lines) + '\n')
    return deploy.load_conf(config_files=[str(path)])


@SERVERS
def test_connection_debug_sets_the_sql_log_level(tmp_path, backend):
    engine_log = logging.getLogger('sqlalchemy.engine')
    before = engine_log.level
    try:
        deploy.open_database(_conf(tmp_path, backend, connection_debug=100)).engine.dispose()
        assert engine_log.level == logging.DEBUG
        deploy.open_database(_conf(tmp_path, backend, connection_debug=0)).engine.dispose()
        assert engine_log.level == logging.WARNING
    finally:
        engine_log.setLevel(before)


@SERVERS
def test_slave_connection_is_refused_aloud(tmp_path, caplog, backend):
    url = databases.ADMIN_URLS[backend]
    with caplog.at_level(logging.WARNING, logger='placement_server.deploy'):
        deploy.open_database(_conf(tmp_path, backend, slave_connection=url)).engine.dispose()
    assert any('slave_connection is ignored' in r.getMessage() for r in caplog.records)
