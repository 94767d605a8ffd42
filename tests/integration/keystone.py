"""A real keystone for end-to-end tests, from PyPI, on loopback.

Keystone lives in its own virtualenv, ``.venv-keystone`` at the top of the
tree (``PLACEMENT_KEYSTONE_VENV`` moves it): created on first use, reused
while its pins are unchanged (with a synced database and keys to copy
from, under ``keystone-template``). ``Keystone`` bootstraps a fresh identity
service on SQLite with fernet tokens, serves it under gunicorn, and can
register a service and its endpoint in the catalog and create projects,
users and role assignments, all through the v3 REST API.
"""
import fcntl
import os
import shutil
import subprocess

from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from tests import upstream

TOP = upstream.TOP
VENV = os.environ.get('PLACEMENT_KEYSTONE_VENV', os.path.join(TOP, '.venv-keystone'))

# Verified together on Python 3.11; gunicorn as in our own venv.
PINS = ('keystone==30.0.0', 'gunicorn==27.0.1')

ADMIN_PASSWORD = 'admin-secret'
REGION = 'RegionOne'
STEP_TIMEOUT = 600      # one pip install or keystone-manage step, at most

# keystone parses the process's command line as its own, so gunicorn's
# arguments cannot be on it: this launcher takes only the port.
_LAUNCHER = """
import sys
from gunicorn.app import base

port = sys.argv[1]
del sys.argv[1:]


class Keystone(base.BaseApplication):
    def load_config(self):
        self.cfg.set('bind', '127.0.0.1:' + port)
        self.cfg.set('workers', 1)
        self.cfg.set('control_socket_disable', True)

    def load(self):
        from keystone.wsgi import api
        return api.application


Keystone().run()
"""


def venv_bin(name):
    return os.path.join(VENV, 'bin', name)


def ensure_venv():
    """Create (or reuse) keystone's virtualenv; return its path."""
    return upstream.ensure_venv(VENV, PINS, 'keystone-pins.txt', STEP_TIMEOUT)


class Keystone:
    """One keystone process with its own SQLite database and keys."""

    def __init__(self, workdir, port=None):
        self.workdir = workdir
        self.port = port or upstream.free_port()
        self.url = 'http://127.0.0.1:%d' % self.port
        self.auth_url = self.url + '/v3'
        self.conf_path = os.path.join(workdir, 'keystone.conf')
        self.log_path = os.path.join(workdir, 'keystone.log')
        self.proc = None
        self._admin_session = None

    def _write_config(self, directory):
        """keystone.conf for a database and keys kept in ``directory``."""
        with open(os.path.join(directory, 'keystone.conf'), 'w') as f:
            f.write('[DEFAULT]\nuse_stderr = true\n'
                    '[database]\nconnection = sqlite:///%(d)s/keystone.sqlite\n'
                    '[token]\nprovider = fernet\n'
                    '[fernet_tokens]\nkey_repository = %(d)s/fernet-keys\n'
                    '[fernet_receipts]\nkey_repository = %(d)s/fernet-keys\n'
                    '[credential]\nkey_repository = %(d)s/credential-keys\n'
                    % {'d': directory})
        return os.path.join(directory, 'keystone.conf')

    @staticmethod
    def _manage(conf_path, *args):
        result = subprocess.run(
            [venv_bin('keystone-manage'), '--config-file', conf_path] + list(args),
            cwd=os.path.dirname(conf_path), capture_output=True, text=True,
            timeout=STEP_TIMEOUT, env=upstream.clean_env())
        if result.returncode:
            raise RuntimeError('keystone-manage %s failed:\n%s%s'
                               % (args[0], result.stdout, result.stderr[-3000:]))

    def _schema_and_keys(self):
        """A synced database and fresh key repositories, made once per
        keystone virtualenv and copied from there (they are a third of the
        set-up time; nothing in them depends on the port)."""
        template = os.path.join(VENV, 'keystone-template')
        with open(VENV.rstrip('/') + '.lock', 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = os.path.join(template, 'done')
            if upstream._read(done) != '\n'.join(PINS):      # none yet, or older keystone
                shutil.rmtree(template, ignore_errors=True)
                for name in ('fernet-keys', 'credential-keys'):
                    os.makedirs(os.path.join(template, name))
                conf_path = self._write_config(template)
                uid, gid = str(os.getuid()), str(os.getgid())
                self._manage(conf_path, 'db_sync')
                self._manage(conf_path, 'fernet_setup', '--keystone-user', uid,
                             '--keystone-group', gid)
                self._manage(conf_path, 'credential_setup', '--keystone-user', uid,
                             '--keystone-group', gid)
                with open(done, 'w') as f:
                    f.write('\n'.join(PINS))
        shutil.copytree(template, self.workdir, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns('done', 'keystone.conf'))

    def bootstrap(self):
        ensure_venv()
        os.makedirs(self.workdir, exist_ok=True)
        self._schema_and_keys()
        self._write_config(self.workdir)
        # admin user/project, the admin, member, reader and service roles,
        # and keystone's own catalog entry (on this run's port).
        self._manage(self.conf_path, 'bootstrap', '--bootstrap-password', ADMIN_PASSWORD,
                     '--bootstrap-admin-url', self.auth_url,
                     '--bootstrap-public-url', self.auth_url,
                     '--bootstrap-internal-url', self.auth_url,
                     '--bootstrap-region-id', REGION)

    def start(self):
        self.bootstrap()
        launcher = os.path.join(self.workdir, 'serve_keystone.py')
        with open(launcher, 'w') as f:
            f.write(_LAUNCHER)
        with open(self.log_path, 'ab') as log:
            self.proc = subprocess.Popen(
                [venv_bin('python'), launcher, str(self.port)],
                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                env=upstream.clean_env(OS_KEYSTONE_CONFIG_FILES=self.conf_path))
        try:
            upstream.wait_until_up(self.auth_url, self.proc, self.log_path, timeout=120)
        except Exception:
            self.stop()
            raise
        return self

    def stop(self):
        upstream.stop_process(self.proc)
        self.proc = None

    # -- identity and catalog, through the v3 API as the bootstrap admin --

    def session(self, username, password, project_name):
        auth = v3.Password(auth_url=self.auth_url, username=username, password=password,
                           project_name=project_name, user_domain_id='default',
                           project_domain_id='default')
        return ks_session.Session(auth=auth, timeout=30)

    @property
    def admin(self):
        if self._admin_session is None:
            self._admin_session = self.session('admin', ADMIN_PASSWORD, 'admin')
        return self._admin_session

    def _create(self, collection, body):
        resp = self.admin.post(self.auth_url + '/' + collection, json=body)
        return resp.json()[next(iter(body))]

    def _find(self, collection, name):
        resp = self.admin.get(self.auth_url + '/%s?name=%s' % (collection, name))
        found = resp.json()[collection]
        return found[0] if found else None

    def project(self, name):
        return self._find('projects', name) or self._create(
            'projects', {'project': {'name': name, 'domain_id': 'default'}})

    def user(self, name, password, project, roles):
        """A user with ``roles`` on ``project`` (created as needed)."""
        project = self.project(project)
        user = self._create('users', {'user': {'name': name, 'password': password,
                                               'domain_id': 'default',
                                               'default_project_id': project['id']}})
        for role_name in roles:
            role = self._find('roles', role_name) or self._create(
                'roles', {'role': {'name': role_name}})
            self.admin.put(self.auth_url + '/projects/%s/users/%s/roles/%s'
                           % (project['id'], user['id'], role['id']))
        return user

    def register_service(self, service_type, name, url):
        """The catalog entry: a service and its public/internal endpoints."""
        service = self._create('services', {'service': {'type': service_type, 'name': name}})
        for interface in ('public', 'internal'):
            self._create('endpoints', {'endpoint': {
                'service_id': service['id'], 'interface': interface, 'url': url,
                'region_id': REGION}})
        return service
