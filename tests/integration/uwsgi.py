"""uWSGI as the deployment tools run placement, from our virtualenv's uwsgi.

``kolla_ini`` is the ini Kolla-Ansible's service-uwsgi-config role renders
for placement-api (its ``placement_wsgi`` module set to ours, HTTP on
loopback, ``processes`` 2-5 here: Kolla's min(vCPUs, 5)); ``helm_ini`` is
OpenStack-Helm's placement-api ini (one process, the stats port its probes
read). ``UwsgiServer`` runs one of them as ``servers.Server`` runs
placement-server: same url / metrics_url / start / stop.
"""
import os
import signal
import subprocess
import time

from tests import upstream
from tests.integration import servers

UWSGI = os.path.join(servers.BIN, 'uwsgi')
MODULE = 'placement_server.wsgi_app:application'
READY = "WSGI app 0 (mountpoint='') ready"


def kolla_ini(port, processes):
    return [('add-header', 'Connection: close'),
            ('buffer-size', '65535'),
            ('die-on-term', 'true'),
            ('enable-threads', 'true'),
            ('exit-on-reload', 'false'),
            ('hook-master-start', 'unix_signal:15 gracefully_kill_them_all'),
            ('http-socket', '127.0.0.1:%d' % port),
            ('lazy-apps', 'true'),
            ('master', 'true'),
            ('module', MODULE),
            ('processes', str(processes)),
            ('socket-timeout', '30'),
            ('thunder-lock', 'true'),
            ('worker-reload-mercy', '80')]


def helm_ini(port, stats_port):
    return [('add-header', 'Connection: close'),
            ('buffer-size', '65535'),
            ('die-on-term', 'true'),
            ('enable-threads', 'true'),
            ('exit-on-reload', 'false'),
            ('hook-master-start', 'unix_signal:15 gracefully_kill_them_all'),
            ('http-socket', '127.0.0.1:%d' % port),
            ('lazy-apps', 'true'),
            ('log-x-forwarded-for', 'true'),
            ('master', 'true'),
            ('module', MODULE),
            ('processes', '1'),
            ('stats', '127.0.0.1:%d' % stats_port),
            ('stats-http', 'true'),
            ('thunder-lock', 'true'),
            ('worker-reload-mercy', '80')]


def write_ini(path, lines):
    with open(path, 'w') as f:
        f.write('[uwsgi]\n')
        f.writelines('%s = %s\n' % kv for kv in lines)


class UwsgiServer:
    """uWSGI with Kolla's ini (``processes`` workers) or Helm's
    (``flavour='helm'``), configured by ``placement.conf`` in ``workdir``
    (``options``: {(section, key): value} beyond the database)."""

    def __init__(self, db_url, workdir, flavour='kolla', processes=2, options=None,
                 sync_db=True):
        self.db_url, self.workdir, self.flavour = db_url, workdir, flavour
        self.port = upstream.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.metrics_port = upstream.free_port()
        self.metrics_url = 'http://127.0.0.1:%d/metrics' % self.metrics_port
        self.stats_port = upstream.free_port()
        self.processes = processes if flavour == 'kolla' else 1
        self.options = dict(options or {})
        self.options[('api', 'metrics_port')] = self.metrics_port
        self.sync_db = sync_db
        self.conf_path = os.path.join(workdir, 'placement.conf')
        self.ini_path = os.path.join(workdir, 'placement-api-uwsgi.ini')
        self.log_path = os.path.join(workdir, 'uwsgi-%d.log' % self.port)
        self.proc = None

    def ini(self):
        if self.flavour == 'kolla':
            return kolla_ini(self.port, self.processes)
        return helm_ini(self.port, self.stats_port)

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        upstream.write_config(self.conf_path, self.db_url, self.options)
        write_ini(self.ini_path, self.ini())
        if self.sync_db:
            synced = subprocess.run(
                [servers.PLACEMENT_MANAGE, '--config-file', self.conf_path, 'db', 'sync'],
                capture_output=True, text=True, timeout=300,
                env=upstream.clean_env(HOME=self.workdir))
            assert synced.returncode == 0, synced.stderr
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(
                [UWSGI, '--ini', self.ini_path], cwd=self.workdir, stdout=log,
                stderr=subprocess.STDOUT,
                env=upstream.clean_env(HOME=self.workdir, OS_PLACEMENT_CONFIG_DIR=self.workdir))
        try:
            upstream.wait_until_up(self.url, self.proc, self.log_path)
            self._wait_for_every_worker()
        except Exception:
            self.stop()
            raise
        return self

    def _wait_for_every_worker(self):
        """Until each process has loaded the application (lazy-apps: one
        at a time answers first); a shutdown meanwhile would wait for them."""
        deadline = time.monotonic() + upstream.START_TIMEOUT
        while self.log().count(READY) < self.processes:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError('uWSGI workers not all ready:\n' + self.log()[-3000:])
            time.sleep(0.2)

    def log(self):
        with open(self.log_path, errors='replace') as f:
            return f.read()

    def stop(self, timeout=60):
        """SIGTERM (graceful under both inis), then wait; the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        status, self.proc = self.proc.returncode, None
        return status
