"""Real ``placement-server`` processes for integration tests.

Each server is the installed console script on a free loopback port,
against a given database URL, with given workers and auth strategy; it is
up when GET / answers, and it is stopped with SIGTERM (its exit status is
kept, so a test can check the stop was clean). Logs go to a file in the
work directory and are shown when a server fails to come up.

The ``placement_servers`` fixture starts any number of them and stops
them all when the test ends::

    def test_two_servers(placement_servers, database):
        a, b = placement_servers(database.url, count=2, workers=2)
        requests.get(a.url + '/resource_providers', headers=ADMIN)

The first server of a group creates or upgrades the schema (--sync-db);
the others start after it, so no two migrate at once.
"""
import os
import signal
import subprocess
import sys
import uuid

import pytest
import requests

from tests import upstream

BIN = os.path.dirname(sys.executable)
PLACEMENT_SERVER = os.path.join(BIN, 'placement-server')
PLACEMENT_MANAGE = os.path.join(BIN, 'placement-manage')

ADMIN = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement latest'}
ADMIN_1_39 = dict(ADMIN, **{'OpenStack-API-Version': 'placement 1.39'})


def call(method, url, body=None, timeout=120):
    """(status, decoded body or None) of one admin request at 1.39."""
    resp = requests.request(method, url, json=body, headers=ADMIN_1_39, timeout=timeout)
    return resp.status_code, (resp.json() if resp.content else None)


def make_provider(base, inventories):
    """A new root provider on the server at ``base`` with ``inventories``."""
    status, body = call('POST', base + '/resource_providers', {'name': 'cn-%s' % uuid.uuid4()})
    assert status == 200, body
    rp = body['uuid']
    status, body = call('PUT', '%s/resource_providers/%s/inventories' % (base, rp),
                        {'resource_provider_generation': 0, 'inventories': inventories})
    assert status == 200, body
    return rp


class Server:
    """One ``placement-server`` process."""

    def __init__(self, db_url, workdir, workers=1, auth_strategy='noauth2',
                 port=None, config_file=None, sync_db=False, extra_args=(), env=None):
        self.db_url = db_url
        self.workdir = workdir
        self.workers = workers
        self.auth_strategy = auth_strategy
        self.port = port or upstream.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        # /metrics is on its own port: one free port each, as servers share hosts.
        self.metrics_port = upstream.free_port()
        self.metrics_url = 'http://127.0.0.1:%d/metrics' % self.metrics_port
        self.config_file = config_file
        self.sync_db = sync_db
        self.extra_args = list(extra_args)
        self.env = env or {}
        self.proc = None
        self.returncode = None
        self.log_path = os.path.join(workdir, 'placement-server-%d.log' % self.port)

    def command(self):
        args = [PLACEMENT_SERVER, '--host', '127.0.0.1', '--port', str(self.port),
                '--workers', str(self.workers), '--database-connection', self.db_url,
                '--auth-strategy', self.auth_strategy]
        if self.config_file:
            args += ['--config-file', self.config_file]
        if self.sync_db:
            args.append('--sync-db')
        return args + self.extra_args

    def spawn(self):
        """Start the process without waiting for it to answer."""
        os.makedirs(self.workdir, exist_ok=True)
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(
                self.command(), cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                env=upstream.clean_env(PATH=os.environ.get('PATH', ''), HOME=self.workdir,
                                       **dict({'OS_API__METRICS_PORT': str(self.metrics_port)},
                                              **self.env)))
        return self

    def wait_until_up(self, timeout=upstream.START_TIMEOUT):
        try:
            upstream.wait_until_up(self.url, self.proc, self.log_path, timeout)
        except Exception:
            self.stop()
            raise
        return self

    def start(self):
        return self.spawn().wait_until_up()

    def log(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def stop(self, timeout=20):
        """SIGTERM, then wait; returns the exit status (SIGKILL if stuck)."""
        if self.proc is None:
            return self.returncode
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.returncode = self.proc.returncode
        self.proc = None
        return self.returncode


def start_servers(db_url, workdir, count=1, sync_db=True, **kwargs):
    """``count`` running servers on ``db_url``; the first syncs the schema."""
    first = Server(db_url, workdir, sync_db=sync_db, **kwargs).start()
    rest = [Server(db_url, workdir, **kwargs).spawn() for _ in range(count - 1)]
    try:
        for server in rest:
            server.wait_until_up()
    except Exception:
        for server in [first] + rest:
            server.stop()
        raise
    return [first] + rest


@pytest.fixture
def placement_servers(tmp_path):
    """start(db_url, count=1, workers=1, auth_strategy='noauth2', ...) -> [Server]."""
    started = []

    def start(db_url, count=1, **kwargs):
        servers = start_servers(db_url, str(tmp_path), count=count, **kwargs)
        started.extend(servers)
        return servers
    yield start
    for server in started:
        server.stop()
