"""A MariaDB failover to a replica that lacks the last commits.

test_failover_postgresql.py's case on MariaDB: a primary and a GTID
replica (``CHANGE MASTER``, ``START SLAVE``) on loopback, each its own
``mariadbd`` under a temporary directory (tests/galera.py's nodes without
wsrep); the replica cut off (``STOP SLAVE``), more providers and a claim
on the primary, read by both workers; the primary stopped, the replica
promoted (``RESET SLAVE ALL``) and the proxy switched to it; writes on it
until every counter passes the workers' positions; then every answer must
be the new primary's.
"""
import getpass
import os
import shutil
import subprocess
import tempfile
import time

import pytest
import sqlalchemy as sa

from placement_server.db import api as db_api
from tests import galera
from tests.functional import client as client_mod
from tests.integration import servers
from tests.integration.test_failover_postgresql import Proxy
from tests.integration.test_failover_postgresql import wait_for
from tests.integration.test_history_changes import VCPU
from tests.integration.test_history_changes import answers
from tests.integration.test_history_changes import claim
from tests.integration.test_history_changes import expected
from tests.integration.test_history_changes import truth

pytestmark = pytest.mark.integration

_CONF = """\
[mysqld]
datadir = {datadir}
socket = {socket}
pid-file = {pidfile}
log-error = {log}
port = {port}
bind-address = 127.0.0.1
skip-name-resolve
{user}
server-id = {server_id}
log-bin = binlog
binlog_format = ROW
innodb_buffer_pool_size = 32M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
performance_schema = OFF
"""


class Instance(galera.Node):
    """One standalone mariadbd with its binary log on."""

    def write_conf(self, peers=None):
        os.makedirs(self.datadir, exist_ok=True)
        with open(self.conf, 'w') as f:
            f.write(_CONF.format(
                datadir=self.datadir, socket=self.socket, pidfile=self.pidfile,
                log=self.log, port=self.port, server_id=self.index + 1,
                user='user = %s' % galera.RUN_AS if galera.RUN_AS else ''))
        if galera.RUN_AS:
            shutil.chown(self.dir, galera.RUN_AS, galera.RUN_AS)
            shutil.chown(self.datadir, galera.RUN_AS, galera.RUN_AS)

    def start(self):
        self.write_conf()
        subprocess.run([galera.INSTALL_DB, '--defaults-file=%s' % self.conf,
                        '--user=%s' % (galera.RUN_AS or getpass.getuser()),
                        '--auth-root-authentication-method=socket', '--skip-test-db'],
                       check=True, capture_output=True)
        self.spawn()
        wait_for(lambda: self._answers(), 'mariadbd %d to answer' % self.index)

    def _answers(self):
        assert self.proc.poll() is None, self.tail()
        try:
            return self.sql('SELECT 1')
        except sa.exc.OperationalError:
            return False

    def sql(self, *statements):
        engine = self.admin_engine()
        try:
            with engine.connect() as conn:
                result = None
                for statement in statements:
                    result = conn.exec_driver_sql(statement)
                return result.all() if result.returns_rows else None
        finally:
            engine.dispose()


def counters(url):
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return dict(conn.exec_driver_sql(
                'SELECT shard, seq FROM resource_view_counters').all())
    finally:
        engine.dispose()


@pytest.fixture
def pair():
    root = tempfile.mkdtemp(prefix='placement-replica-')
    os.chmod(root, 0o755)
    made = [Instance(0, root), Instance(1, root)]
    yield made
    for instance in made:
        instance.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_failover_to_a_replica_lacking_the_last_commits(pair, placement_servers):
    primary, replica = pair
    primary.start()
    # made on the primary after its binary log began: the replica gets
    # them by replication
    primary.sql("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'"
                % (galera.DB_USER, galera.DB_PASSWORD),
                "GRANT ALL ON *.* TO '%s'@'127.0.0.1'" % galera.DB_USER,
                'CREATE DATABASE placement')
    replica.start()
    replica.sql("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, "
                "MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos"
                % (primary.port, galera.DB_USER, galera.DB_PASSWORD), 'START SLAVE')
    proxy = Proxy(primary.port)
    try:
        server, = placement_servers(primary.url('placement').replace(
            ':%d/' % primary.port, ':%d/' % proxy.port), workers=2)
        kept = [servers.make_provider(server.url, VCPU) for _ in range(3)]
        claim(server, kept[0], 1)

        def replayed():
            try:
                return replica.sql('SELECT count(*) FROM placement.resource_providers') == [(3,)]
            except sa.exc.ProgrammingError:   # the tables not there yet
                return False
        wait_for(replayed, 'the replica to replay the first providers')
        replicated = set(truth(replica.url('placement')))
        replica.sql('STOP SLAVE')
        for _ in range(20):
            servers.make_provider(server.url, VCPU)
        claim(server, kept[1], 2)
        held = truth(primary.url('placement'))
        assert all(answer == expected(held)[kind] for kind, answer in answers(server))
        lost = set(held) - replicated
        before = counters(primary.url('placement'))
        primary.stop()
        replica.sql('RESET SLAVE ALL')
        proxy.switch(replica.port)
        new_primary = db_api.Database(replica.url('placement'))
        try:
            api = client_mod.Client(client_mod.make_app(new_primary), version='1.39')
            while not all(n >= before[s]
                          for s, n in counters(replica.url('placement')).items()):
                client_mod.make_provider(api, 'cn-new-%d' % time.monotonic_ns(),
                                         {'VCPU': {'total': 8}})
        finally:
            new_primary.dispose()
        wait_for(lambda: all(servers.call('GET', server.url + '/resource_providers')[0] == 200
                             for _ in range(8)), 'the servers to reconnect')
        held = truth(replica.url('placement'))
        assert len(lost) == 20 and not lost & set(held)
        wrong = [(kind, len(answer ^ expected(held)[kind]))
                 for kind, answer in answers(server) if answer != expected(held)[kind]]
        assert not wrong, '%d answers wrong (kind, items off): %s' % (len(wrong), wrong[:4])
    finally:
        proxy.close()
