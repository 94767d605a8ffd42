"""uWSGI as the deployment tools run placement, from our virtualenv's uwsgi.

``ini(tool, ...)`` renders the ini each tool writes for placement-api, one
rendering whose differences are the data in ``SETTINGS``, read from the
tools' sources (not from memory):

- Kolla-Ansible: ansible/roles/service-uwsgi-config/templates/uwsgi.ini.j2,
  with placement's variables from ansible/roles/placement/tasks/config.yml
  and defaults/main.yml (kolla-ansible 1a681814, 2026-08-19): the HTTP
  router (``http``, not ``http-socket``), ``processes`` its min(vCPUs, 5),
  keys in the template's order.
- OpenStack-Helm: placement/values.yaml ``conf.placement_api_uwsgi`` and
  placement/templates/configmap-etc.yaml (``http-socket`` 0.0.0.0 on the
  API port), rendered by helm-toolkit's to_oslo_conf, keys sorted
  (openstack-helm 0ee5adef, 2026-08-20). One process; readiness probes GET
  / on the API port, liveness GET / on the stats port (deployment.yaml).

What the tests change: ``module`` is ours (what an operator sets in
``placement_wsgi``), addresses are loopback on free ports, Kolla's log file
is the test's. ``LEFT_OUT`` says what is not written, and why.
``UwsgiServer`` runs one of them as ``servers.Server`` runs placement-server:
same url / metrics_url / start / stop.
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
TOOLS = ('kolla', 'helm')

# (key, Kolla's value, Helm's value), in Kolla's template order; None: the
# tool does not write the key. ``{listen}``, ``{processes}``, ``{stats}``,
# ``{log}`` and ``{module}`` are filled per server.
SETTINGS = [
    ('add-header', 'Connection: close', 'Connection: close'),
    ('buffer-size', '65535', '65535'),
    ('die-on-term', 'true', 'true'),
    ('enable-threads', 'true', 'true'),
    ('exit-on-reload', 'false', 'false'),
    ('hook-master-start', 'unix_signal:15 gracefully_kill_them_all',
     'unix_signal:15 gracefully_kill_them_all'),
    ('http', '{listen}', None),
    ('http-socket', None, '{listen}'),
    ('http-auto-chunked', 'true', None),
    ('http-chunked-input', 'true', None),
    ('http-raw-body', 'true', None),
    ('lazy-apps', 'true', 'true'),
    ('log-x-forwarded-for', None, 'true'),
    ('logto2', '{log}', None),
    ('master', 'true', 'true'),
    ('module', '{module}', '{module}'),
    ('procname-prefix-spaced', None, 'placement-api:'),
    ('processes', '{processes}', '1'),
    # wants uWSGI built with PCRE; the one pip builds here has none, says
    # "no internal routing support" and logs the probe like any request
    ('route-user-agent', None, '^kube-probe.* donotlog:'),
    ('socket-timeout', '30', None),
    ('stats', None, '{stats}'),
    ('stats-http', None, 'true'),
    ('thunder-lock', 'true', 'true'),
    ('worker-reload-mercy', '80', '80'),
    ('static-map', '/static=/var/lib/kolla/venv/lib/python3/site-packages/static', None),
]
SORTED = {'kolla': False, 'helm': True}   # helm-toolkit's to_oslo_conf sorts keys
LEFT_OUT = {
    'kolla': {
        'plugins-dir': "the distribution package's plugin directory",
        'plugins': "python3: the distribution's plugin; PyPI's uWSGI has Python built in",
        'uid': 'placement: the tests run as whoever runs them',
    },
    'helm': {},
}


def ini(tool, port, processes=1, stats_port=None, log_path=None, module=MODULE):
    """[(key, value)] of ``tool``'s ini for placement-api on loopback."""
    column = TOOLS.index(tool) + 1
    fill = {'listen': '127.0.0.1:%d' % port, 'processes': str(processes),
            'stats': '127.0.0.1:%s' % stats_port, 'log': log_path, 'module': module}
    lines = [(row[0], row[column].format(**fill)) for row in SETTINGS
             if row[column] is not None]
    return sorted(lines) if SORTED[tool] else lines


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
        self.processes = processes
        self.options = dict(options or {})
        self.options[('api', 'metrics_port')] = self.metrics_port
        self.sync_db = sync_db
        self.conf_path = os.path.join(workdir, 'placement.conf')
        self.ini_path = os.path.join(workdir, 'placement-api-uwsgi.ini')
        self.log_path = os.path.join(workdir, 'uwsgi-%d.log' % self.port)
        self.processes = int(dict(self.ini())['processes'])   # Helm's is always 1
        self.proc = None

    def ini(self):
        return ini(self.flavour, self.port, self.processes, self.stats_port, self.log_path)

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
