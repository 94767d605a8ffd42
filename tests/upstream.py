"""Upstream OpenStack Placement, side by side with ours.

Upstream openstack-placement (from PyPI) lives in its own virtualenv,
``.venv-upstream`` at the top of the tree (``PLACEMENT_UPSTREAM_VENV``
moves it): created on first use, reused while its pins are unchanged.
``UpstreamPlacement`` syncs a database with upstream's own
``placement-manage`` and serves it as a real process under gunicorn,
the WSGI server ours uses, with ``auth_strategy = noauth2``.

Tests get a running upstream through the ``upstream_placement`` fixture
(its base URL, on SQLite, rows wiped between tests)::

    def test_something(upstream_placement):
        requests.get(upstream_placement + '/', ...)

The benchmarks (bench/) use the same class on PostgreSQL as well.
"""
import contextlib
import fcntl
import os
import socket
import subprocess
import sys
import time

import pytest
import requests
import sqlalchemy as sa

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.environ.get('PLACEMENT_UPSTREAM_VENV', os.path.join(TOP, '.venv-upstream'))

# Verified together on Python 3.11 (placement serves 1.0-1.39).
# gunicorn is pinned to the version in our own venv so both servers run
# the same WSGI server; placeload is the gate's workload generator.
PINS = (
    'openstack-placement==16.0.0',
    'SQLAlchemy==2.1.9',
    'oslo.db==18.1.1',
    'gunicorn==27.0.1',
    'psycopg2-binary==2.9.13',
    'PyMySQL==1.2.4',
    'placeload==0.4.0',
)

START_TIMEOUT = 60.0


def venv_bin(name):
    return os.path.join(VENV, 'bin', name)


def ensure_venv(venv=VENV, pins=PINS, marker_name='upstream-pins.txt', timeout=None):
    """Create (or reuse) a side virtualenv holding ``pins`` (by default
    upstream placement's); return its path. ``timeout`` bounds each step."""
    os.makedirs(os.path.dirname(venv) or '.', exist_ok=True)
    marker = os.path.join(venv, marker_name)
    wanted = '\n'.join(pins) + '\n'
    python = os.path.join(venv, 'bin', 'python')
    # Parallel test workers may all get here: one installs, the others wait.
    with open(venv.rstrip('/') + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _read(marker) == wanted:
            return venv
        if not os.path.exists(python):
            subprocess.run([sys.executable, '-m', 'venv', venv], check=True, timeout=timeout)
        subprocess.run([python, '-m', 'pip', 'install', '-q'] + list(pins),
                       check=True, timeout=timeout, env=clean_env())
        with open(marker, 'w') as f:
            f.write(wanted)
    return venv


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def free_port():
    with contextlib.closing(socket.socket()) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def clean_env(**extra):
    """The environment for a child in another virtualenv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('PYTHONPATH', 'VIRTUAL_ENV', 'PYTHONHOME')
           and not k.startswith(('OS_', 'PLACEMENT_'))}
    env.update(extra)
    return env


def wait_until_up(url, proc, log_path, timeout=START_TIMEOUT):
    """Poll GET / until it answers 200; fail with the server log if not."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            if requests.get(url + '/', timeout=2).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    tail = (_read(log_path) or '')[-3000:]
    raise RuntimeError('server at %s did not come up (exit %s):\n%s'
                       % (url, proc.poll(), tail))


def gunicorn_command(gunicorn, app, port, workers, worker_class=None, threads=None):
    """The one gunicorn command line both servers run under (benchmarks
    compare like with like): workers on loopback, no control socket
    (several servers share this machine); gunicorn's own sync worker
    unless ``worker_class`` names another (and ``threads`` its threads)."""
    command = [gunicorn, '--no-control-socket', '--bind', '127.0.0.1:%d' % port,
               '--workers', str(workers)]
    if worker_class:
        command += ['--worker-class', worker_class]
    if threads:
        command += ['--threads', str(threads)]
    return command + [app]


def write_config(path, db_url, options=None):
    """A placement.conf: noauth2, ``db_url``, plus {(section, key): value}."""
    sections = {'DEFAULT': {'use_stderr': 'true'},
                'api': {'auth_strategy': 'noauth2'},
                'placement_database': {'connection': db_url}}
    for (section, key), value in (options or {}).items():
        sections.setdefault(section, {})[key] = str(value)
    with open(path, 'w') as f:
        for section, values in sections.items():
            f.write('[%s]\n' % section)
            f.writelines('%s = %s\n' % kv for kv in values.items())


def stop_process(proc, timeout=15):
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()  # gunicorn: graceful stop of the master and workers
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


class PlacementServer:
    """A placement WSGI app on ``db_url``, served by gunicorn on loopback.

    Subclasses say which gunicorn, which app and how the schema is made;
    the rest (config file, process, readiness, stop) is shared so that two
    implementations run under exactly the same settings.
    """
    name = None
    app = None
    worker_class = None
    threads = None

    def __init__(self, db_url, workdir, workers=1, port=None, options=None, env=None):
        self.db_url = db_url
        self.env = env or {}
        self.workdir = workdir
        self.workers = workers
        self.options = options
        self.port = port or free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.proc = None
        self.log_path = os.path.join(workdir, '%s-placement.log' % self.name)
        self.conf_path = os.path.join(workdir, 'placement.conf')

    def gunicorn(self):
        raise NotImplementedError

    def sync_db(self):
        raise NotImplementedError

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        write_config(self.conf_path, self.db_url, self.options)
        self.sync_db()
        log = open(self.log_path, 'ab')
        self.proc = subprocess.Popen(
            gunicorn_command(self.gunicorn(), self.app, self.port, self.workers,
                             self.worker_class, self.threads),
            env=clean_env(OS_PLACEMENT_CONFIG_DIR=self.workdir, **self.env),
            cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            wait_until_up(self.url, self.proc, self.log_path)
        except Exception:
            self.stop()
            raise
        return self.url

    def stop(self):
        stop_process(self.proc)
        self.proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()


class UpstreamPlacement(PlacementServer):
    """Upstream openstack-placement from its own virtualenv."""
    name = 'upstream'
    app = 'placement.wsgi.api:application'

    def gunicorn(self):
        ensure_venv()
        return venv_bin('gunicorn')

    def sync_db(self):
        ensure_venv()
        result = subprocess.run(
            [venv_bin('placement-manage'), '--config-file', self.conf_path, 'db', 'sync'],
            env=clean_env(), capture_output=True, text=True)
        if result.returncode:
            raise RuntimeError('upstream db sync failed: %s%s'
                               % (result.stdout, result.stderr))


# Upstream's tables, children before parents. Resource classes and traits
# are kept: upstream caches them per worker, so deleting them under a
# running server would leave its caches stale.
_WIPE_ORDER = ('allocations', 'consumers', 'projects', 'users', 'inventories',
               'resource_provider_traits', 'resource_provider_aggregates',
               'placement_aggregates')


def wipe(db_url):
    """Delete every provider, allocation and consumer upstream holds."""
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:
            for table in _WIPE_ORDER:
                conn.exec_driver_sql('DELETE FROM %s' % table)
            conn.exec_driver_sql('UPDATE resource_providers SET parent_provider_id = NULL, '
                                 'root_provider_id = NULL')
            conn.exec_driver_sql('DELETE FROM resource_providers')
    finally:
        engine.dispose()


@pytest.fixture(scope='session')
def _upstream_server(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp('upstream'))
    server = UpstreamPlacement('sqlite:///%s' % os.path.join(workdir, 'placement.sqlite'),
                               workdir)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def upstream_placement(_upstream_server):
    """Base URL of a running upstream placement (noauth2, SQLite), empty."""
    wipe(_upstream_server.db_url)
    return _upstream_server.url
