"""A PostgreSQL failover to a standby that lacks the last commits.

A primary and a streaming-replication standby on loopback (``initdb``,
``pg_basebackup -R``, under a temporary directory, on free ports), and
``placement-server --workers 2`` reaching the primary through a TCP proxy
that can switch its upstream, as a VIP or HAProxy does. Providers made
and replicated; the standby cut off; more providers and a claim made on
the primary, which the standby never gets, and read by both workers; the
primary stopped, the standby promoted, the proxy switched to it; then
more writes on the new primary (through the API in process, before any
worker reads) so that every counter passes where the workers stood.
Every list, candidates (with usage) and capacity answer afterwards must
be the new primary's.
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest
import requests
import sqlalchemy as sa

from placement_server.db import api as db_api
from tests import upstream
from tests.functional import client as client_mod
from tests.integration import servers
from tests.integration.test_history_changes import VCPU
from tests.integration.test_history_changes import answers
from tests.integration.test_history_changes import claim
from tests.integration.test_history_changes import expected
from tests.integration.test_history_changes import truth

pytestmark = pytest.mark.integration

BIN = sorted(glob.glob('/usr/lib/postgresql/*/bin'))[-1:]


class Proxy:
    """TCP on a free loopback port to ``127.0.0.1:upstream``; ``switch``
    drops every connection and sends new ones to another port."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self.open = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(('127.0.0.1', self.upstream))
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source, target):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                target.sendall(data)
        except OSError:
            pass
        for s in (source, target):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def switch(self, upstream_port):
        with self.lock:
            self.upstream = upstream_port
            dropped, self.open = self.open, []
        for s in dropped:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.switch(self.upstream)
        self.listener.close()


class Cluster:
    """PostgreSQL instances under one temporary directory, run as the
    postgres user when the tests run as root (initdb refuses root)."""

    def __init__(self):
        assert BIN, 'no PostgreSQL server binaries under /usr/lib/postgresql/*/bin'
        self.dir = tempfile.mkdtemp(prefix='placement-failover-')
        self.as_user = []
        if os.geteuid() == 0:
            user = pwd.getpwnam('postgres')
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.as_user = ['runuser', '-u', 'postgres', '--']
        self.started = []

    def run(self, tool, *args):
        result = subprocess.run(self.as_user + [os.path.join(BIN[0], tool)] + list(args),
                                capture_output=True, text=True, timeout=300, cwd=self.dir)
        assert result.returncode == 0, (tool, args, result.stdout, result.stderr)

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self, name, port):
        self.run('pg_ctl', '-D', self.path(name), '-l', self.path(name + '.log'), '-w',
                 '-t', '120', 'start', '-o',
                 '-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off' % (port, self.dir))
        if name not in self.started:
            self.started.append(name)

    def stop(self, name):
        self.run('pg_ctl', '-D', self.path(name), '-w', '-m', 'fast', 'stop')
        self.started.remove(name)

    def close(self):
        for name in list(self.started):
            try:
                self.stop(name)
            except AssertionError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def url(port, database='placement'):
    return 'postgresql+psycopg2://postgres@127.0.0.1:%d/%s' % (port, database)


def scalar(port, sql):
    engine = sa.create_engine(url(port))
    try:
        with engine.connect() as conn:
            return conn.exec_driver_sql(sql).scalar()
    finally:
        engine.dispose()


def counters(port):
    engine = sa.create_engine(url(port))
    try:
        with engine.connect() as conn:
            return dict(conn.exec_driver_sql(
                'SELECT shard, seq FROM resource_view_counters').all())
    finally:
        engine.dispose()


def wait_for(check, what, timeout=120):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, 'timed out waiting for ' + what
        time.sleep(0.2)


@pytest.fixture
def cluster():
    made = Cluster()
    yield made
    made.close()


def test_failover_to_a_standby_lacking_the_last_commits(cluster, placement_servers):
    primary, standby = upstream.free_port(), upstream.free_port()
    cluster.run('initdb', '-D', cluster.path('primary'), '-U', 'postgres', '--auth=trust')
    cluster.start('primary', primary)
    admin = sa.create_engine(url(primary, 'postgres'), isolation_level='AUTOCOMMIT')
    with admin.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE placement')
    admin.dispose()
    cluster.run('pg_basebackup', '-h', '127.0.0.1', '-p', str(primary), '-U', 'postgres',
                '-D', cluster.path('standby'), '-R', '-X', 'stream', '--checkpoint=fast')
    cluster.start('standby', standby)
    proxy = Proxy(primary)
    try:
        server, = placement_servers(url(proxy.port), workers=2)
        kept = [servers.make_provider(server.url, VCPU) for _ in range(3)]
        claim(server, kept[0], 1)
        wait_for(lambda: scalar(standby, 'SELECT count(*) FROM resource_providers') == 3,
                 'the standby to replay the first providers')
        replicated = set(truth(url(primary)))
        # cut off: the standby stops, and starts again with nothing to follow
        cluster.stop('standby')
        with open(cluster.path('standby/postgresql.auto.conf'), 'a') as conf:
            conf.write("primary_conninfo = ''\n")
        # what the standby never gets, read by both workers
        for _ in range(20):
            servers.make_provider(server.url, VCPU)
        claim(server, kept[1], 2)
        held = truth(url(primary))
        assert all(answer == expected(held)[kind] for kind, answer in answers(server))
        lost = set(held) - replicated
        before = counters(primary)
        cluster.stop('primary')
        cluster.start('standby', standby)
        cluster.run('pg_ctl', '-D', cluster.path('standby'), '-w', 'promote')
        proxy.switch(standby)
        # writes on the new primary before any worker reads, past the
        # workers' positions on every counter
        new_primary = db_api.Database(url(standby))
        try:
            api = client_mod.Client(client_mod.make_app(new_primary), version='1.39')
            while not all(n >= before[s] for s, n in counters(standby).items()):
                client_mod.make_provider(api, 'cn-new-%d' % time.monotonic_ns(),
                                         {'VCPU': {'total': 8}})
        finally:
            new_primary.dispose()
        # the servers' pools find their connections gone: they answer
        # again once they have reconnected through the proxy
        wait_for(lambda: all(requests.get(server.url + '/resource_providers',
                                          headers=servers.ADMIN_1_39, timeout=60
                                          ).status_code == 200 for _ in range(8)),
                 'the servers to reconnect')
        held = truth(url(standby))
        assert len(lost) == 20 and not lost & set(held)
        wrong = [(kind, len(answer ^ expected(held)[kind]))
                 for kind, answer in answers(server) if answer != expected(held)[kind]]
        assert not wrong, '%d answers wrong (kind, items off): %s' % (len(wrong), wrong[:4])
    finally:
        proxy.close()
