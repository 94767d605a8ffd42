"""The placement commands as deployment tools call them, and without configuration."""
import json
import os
import subprocess

import pytest

from tests import upstream
from tests.integration import servers

pytestmark = pytest.mark.integration

BIN = os.path.dirname(servers.PLACEMENT_MANAGE)
MANAGE = servers.PLACEMENT_MANAGE
STATUS = os.path.join(BIN, 'placement-status')
SERVER = servers.PLACEMENT_SERVER


def run(tmp_path, *args, **environ):
    return subprocess.run(list(args), cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=120, env=upstream.clean_env(HOME=str(tmp_path), **environ))


def test_kolla_bootstrap_sequence(tmp_path):
    # Kolla's placement bootstrap: sync, online data migrations, upgrade check,
    # with the configuration in a directory (--config-dir).
    conf_dir = tmp_path / 'placement'
    conf_dir.mkdir()
    upstream.write_config(str(conf_dir / 'placement.conf'),
                          'sqlite:///%s' % (tmp_path / 'placement.sqlite'))
    for args in (('db', 'sync'), ('db', 'online_data_migrations')):
        result = run(tmp_path, MANAGE, '--config-dir', str(conf_dir), *args)
        assert result.returncode == 0, (args, result.stderr)
    check = run(tmp_path, STATUS, '--config-dir', str(conf_dir), 'upgrade', 'check', '--json')
    assert check.returncode == 0, check.stdout + check.stderr
    results = json.loads(check.stdout)['checks']
    assert [r['result'] for r in results] == [0] * len(results) and len(results) >= 2


@pytest.mark.parametrize('command', [
    (MANAGE, 'db', 'sync'), (MANAGE, 'db', 'version'), (MANAGE, 'db', 'stamp', 'head'),
    (MANAGE, 'db', 'online_data_migrations'), (STATUS, 'upgrade', 'check'),
    (SERVER, '--auth-strategy', 'noauth2')])
def test_no_configuration_is_refused_in_one_line(tmp_path, command):
    result = run(tmp_path, *command)
    assert result.returncode != 0
    assert result.stderr.strip().count('\n') == 0, result.stderr
    assert '[placement_database] connection' in result.stderr, result.stderr
    # no database made, nor the state directory the old default used
    assert not (tmp_path / '.local').exists() and not list(tmp_path.rglob('*.sqlite'))


@pytest.mark.parametrize('command', [MANAGE, STATUS])
def test_mistyped_config_dir_variable_is_an_error(tmp_path, command):
    args = ('db', 'version') if command == MANAGE else ('upgrade', 'check')
    result = run(tmp_path, command, *args, OS_PLACEMENT_CONFIG_DIR=str(tmp_path / 'typo'))
    assert result.returncode != 0
    assert result.stderr.strip() == 'OS_PLACEMENT_CONFIG_DIR=%s: no such directory' \
        % (tmp_path / 'typo')


@pytest.mark.parametrize('command', [(MANAGE, 'db', 'version'), (STATUS, 'upgrade', 'check')])
def test_read_only_commands_create_no_database(tmp_path, command):
    path = tmp_path / 'placement.sqlite'
    result = run(tmp_path, *command, OS_PLACEMENT_DATABASE__CONNECTION='sqlite:///%s' % path)
    assert result.returncode != 0
    assert 'no such file' in result.stderr
    assert not path.exists()


@pytest.mark.parametrize('command', [MANAGE, STATUS, SERVER])
def test_version_and_usage_errors(tmp_path, command):
    version = run(tmp_path, command, '--version')
    assert version.returncode == 0 and version.stdout.strip(), version.stderr
    wrong = run(tmp_path, command, '--no-such-option')
    assert wrong.returncode == 2, wrong.stderr
