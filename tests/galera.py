"""A real three-node MariaDB Galera cluster for the scale-out tests.

Debian's ``mariadbd`` with the ``galera-4`` provider, each node on its own
loopback ports (SQL, group communication, IST, SST) with its own data
directory, socket, pid file and log under one temporary directory. The
first node bootstraps the cluster (``--wsrep-new-cluster``); the others
start with an empty data directory and join by state snapshot transfer
(rsync). ``kill(i)`` SIGKILLs a node, ``start(i)`` brings it back (it
rejoins by IST or SST); ``stop()`` ends every node by its pid and removes
the directory.

Failure detection is tuned down from Galera's seconds-long defaults so
that a killed node leaves the cluster within about two seconds.
"""
import getpass
import os
import shutil
import signal
import subprocess
import tempfile
import time

import sqlalchemy as sa

from tests import upstream

MARIADBD = '/usr/sbin/mariadbd'
INSTALL_DB = '/usr/bin/mariadb-install-db'
PROVIDER = '/usr/lib/galera/libgalera_smm.so'
START_TIMEOUT = 90

# As root, the nodes run as Debian's mysql user: the rsync daemon that
# receives a snapshot drops root for nobody, who could not write a root-owned
# data directory.
RUN_AS = 'mysql' if os.geteuid() == 0 else None

DB_USER = 'placement'
DB_PASSWORD = 'galera-test'

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
innodb_buffer_pool_size = 32M
innodb_log_file_size = 16M
innodb_flush_log_at_trx_commit = 2
innodb_autoinc_lock_mode = 2
binlog_format = ROW
default_storage_engine = InnoDB
performance_schema = OFF
wsrep_on = ON
wsrep_provider = {provider}
wsrep_cluster_name = placement-test
wsrep_cluster_address = gcomm://{peers}
wsrep_node_name = node{index}
wsrep_node_address = 127.0.0.1:{gcomm}
wsrep_node_incoming_address = 127.0.0.1:{port}
wsrep_sst_method = rsync
wsrep_sst_receive_address = 127.0.0.1:{sst}
wsrep_provider_options = "base_host=127.0.0.1;base_port={gcomm};gmcast.listen_addr=tcp://127.0.0.1:{gcomm};ist.recv_addr=127.0.0.1:{ist};gcache.size=64M;evs.keepalive_period=PT0.3S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT1.5S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S;pc.announce_timeout=PT1S"
"""


class Node:

    def __init__(self, index, root):
        self.index = index
        self.dir = os.path.join(root, 'node%d' % index)
        self.datadir = os.path.join(self.dir, 'data')
        self.socket = os.path.join(self.dir, 'mysqld.sock')
        self.pidfile = os.path.join(self.dir, 'mysqld.pid')
        self.log = os.path.join(self.dir, 'error.log')
        self.conf = os.path.join(self.dir, 'my.cnf')
        self.port, self.gcomm, self.ist, self.sst = (upstream.free_port() for _ in range(4))
        self.proc = None

    def url(self, database):
        return 'mysql+pymysql://%s:%s@127.0.0.1:%d/%s' % (
            DB_USER, DB_PASSWORD, self.port, database)

    def write_conf(self, peers):
        os.makedirs(self.datadir, exist_ok=True)
        with open(self.conf, 'w') as f:
            f.write(_CONF.format(
                datadir=self.datadir, socket=self.socket, pidfile=self.pidfile,
                log=self.log, port=self.port, provider=PROVIDER, peers=peers,
                index=self.index, gcomm=self.gcomm, ist=self.ist, sst=self.sst,
                user='user = %s' % RUN_AS if RUN_AS else ''))
        if RUN_AS:
            shutil.chown(self.dir, RUN_AS, RUN_AS)
            shutil.chown(self.datadir, RUN_AS, RUN_AS)

    def spawn(self, bootstrap=False):
        args = [MARIADBD, '--defaults-file=%s' % self.conf]
        if bootstrap:
            args.append('--wsrep-new-cluster')
        with open(os.path.join(self.dir, 'console.log'), 'ab') as console:
            self.proc = subprocess.Popen(args, stdout=console, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def admin_engine(self):
        # root over the node's own socket (unix_socket authentication as
        # the OS user the node runs as)
        return sa.create_engine('mysql+pymysql://root@localhost/mysql?unix_socket=%s'
                                % self.socket, isolation_level='AUTOCOMMIT',
                                poolclass=sa.pool.NullPool)

    def status(self, name):
        engine = self.admin_engine()
        try:
            with engine.connect() as conn:
                row = conn.exec_driver_sql("SHOW STATUS LIKE '%s'" % name).first()
                return row[1] if row else None
        finally:
            engine.dispose()

    def wait_synced(self, cluster_size, timeout=START_TIMEOUT):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError('galera node%d exited with %s:\n%s'
                                   % (self.index, self.proc.returncode, self.tail()))
            try:
                if (self.status('wsrep_local_state_comment') == 'Synced'
                        and int(self.status('wsrep_cluster_size')) >= cluster_size):
                    return
            except Exception as e:   # not listening yet
                last = e
            time.sleep(0.3)
        raise RuntimeError('galera node%d not synced after %ds (%s):\n%s'
                           % (self.index, timeout, last, self.tail()))

    def tail(self, lines=40):
        try:
            with open(self.log, errors='replace') as f:
                return ''.join(f.readlines()[-lines:])
        except OSError:
            return '(no log)'

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def stop(self, timeout=30):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None


class Cluster:
    """Three Galera nodes; ``nodes[i].url(database)`` reaches node i."""

    def __init__(self, size=3):
        self.root = tempfile.mkdtemp(prefix='galera-')
        os.chmod(self.root, 0o755)
        self.nodes = [Node(i, self.root) for i in range(size)]
        peers = ','.join('127.0.0.1:%d' % n.gcomm for n in self.nodes)
        for node in self.nodes:
            node.write_conf(peers)

    def start(self):
        """Bootstrap and join every node; on failure nothing is left running."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self):
        first = self.nodes[0]
        subprocess.run([INSTALL_DB, '--defaults-file=%s' % first.conf,
                        '--user=%s' % (RUN_AS or getpass.getuser()),
                        '--auth-root-authentication-method=socket',
                        '--skip-test-db'], check=True, capture_output=True)
        first.spawn(bootstrap=True)
        first.wait_synced(1)
        engine = first.admin_engine()
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'"
                                 % (DB_USER, DB_PASSWORD))
            conn.exec_driver_sql("GRANT ALL ON *.* TO '%s'@'127.0.0.1'" % DB_USER)
        engine.dispose()
        # The joiners one after the other: each takes a snapshot from a donor.
        for size, node in enumerate(self.nodes[1:], start=2):
            node.spawn()
            node.wait_synced(size)
        return self

    def create_database(self, name):
        engine = self.nodes[0].admin_engine()
        with engine.connect() as conn:
            conn.exec_driver_sql('CREATE DATABASE %s' % name)
        engine.dispose()

    def kill(self, index):
        """SIGKILL node ``index`` and wait until the others see it gone."""
        self.nodes[index].kill()
        survivors = [n for n in self.nodes if n.proc is not None]
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if all(int(n.status('wsrep_cluster_size')) == len(survivors) for n in survivors):
                return
            time.sleep(0.2)
        raise RuntimeError('the cluster did not drop node%d' % index)

    def start_node(self, index):
        node = self.nodes[index]
        node.spawn()
        node.wait_synced(len(self.nodes))

    def stop(self):
        for node in reversed(self.nodes):
            node.stop()
        shutil.rmtree(self.root, ignore_errors=True)
