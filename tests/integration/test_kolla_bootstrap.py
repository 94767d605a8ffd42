"""Kolla-Ansible's way in: its placement.conf (as its role renders it)
validated against etc/placement/config-generator.conf with no unknown
option, then its bootstrap and upgrade sequences (db sync, then db
online_data_migrations), each command exiting 0, on MariaDB as Kolla runs
it: on an empty database and on one an earlier version of ours made."""
import os
import subprocess

import pytest

from placement_server.db import migration
from tests import databases
from tests import upstream
from tests.fixtures import old_database
from tests.integration import servers

pytestmark = pytest.mark.integration

VALIDATOR = os.path.join(servers.BIN, 'oslo-config-validator')
GENERATOR = os.path.join(upstream.TOP, 'etc', 'placement', 'config-generator.conf')

# Kolla-Ansible's roles/placement/templates/placement.conf.j2, rendered
# (its log file moved into the test's directory).
KOLLA_CONF = '''[DEFAULT]
debug = False
log_file = {workdir}/placement-api.log
state_path = /var/lib/placement

[oslo_middleware]
enable_proxy_headers_parsing = true

[oslo_concurrency]
lock_path = /var/lib/placement/tmp

[placement_database]
connection = {db_url}
connection_recycle_time = 10
max_overflow = 1000
max_pool_size = 1
max_retries = -1

[cache]
backend = oslo_cache.memcache_pool
enabled = true
memcache_servers = 127.0.0.1:11211

[keystone_authtoken]
service_type = placement
www_authenticate_uri = http://127.0.0.1:5000
auth_url = http://127.0.0.1:5000
auth_type = password
project_domain_id = default
user_domain_id = default
project_name = service
username = placement
password = secret
cafile = /etc/ssl/certs/ca-certificates.crt
region_name = RegionOne
memcache_security_strategy = ENCRYPT
memcache_secret_key = secret
memcached_servers = 127.0.0.1:11211

[oslo_policy]
policy_file = placement-policy.yaml

[profiler]
enabled = true
trace_sqlalchemy = true
hmac_keys = secret
connection_string = redis://127.0.0.1:6379
'''


def _run(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=300,
                          env=upstream.clean_env())


def kolla_conf(tmp_path, db_url):
    path = tmp_path / 'placement.conf'
    path.write_text(KOLLA_CONF.format(workdir=tmp_path, db_url=db_url))
    return str(path)


def test_kolla_conf_has_no_unknown_option(tmp_path):
    conf = kolla_conf(tmp_path, 'mysql+pymysql://placement:secret@127.0.0.1/placement')
    result = _run(VALIDATOR, '--config-file', GENERATOR, '--input-file', conf)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'ERROR' not in result.stderr and 'WARNING' not in result.stderr, result.stderr


@pytest.mark.parametrize('origin', ['empty', 'ours-0002'])
def test_kolla_bootstrap_and_upgrade(origin, tmp_path):
    test_db = databases.TestDatabase('mysql', str(tmp_path), sync=False)
    try:
        if origin == 'ours-0002':
            old_database.load(test_db.url)
        conf = kolla_conf(tmp_path, test_db.url)
        manage = [servers.PLACEMENT_MANAGE, '--config-file', conf]
        # bootstrap, then an upgrade: db sync before the new containers
        # start, online data migrations after
        for step in (('db', 'sync'), ('db', 'online_data_migrations'),
                     ('db', 'sync'), ('db', 'online_data_migrations')):
            result = _run(*manage, *step)
            assert result.returncode == 0, (step, result.stdout, result.stderr)
        version = _run(*manage, 'db', 'version')
        assert version.stdout.split()[0] == migration.head() + ';', version.stdout
        status = _run(os.path.join(servers.BIN, 'placement-status'), '--config-file', conf,
                      'upgrade', 'check')
        assert status.returncode == 0, status.stdout + status.stderr
    finally:
        test_db.drop()
