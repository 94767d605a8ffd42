"""Real OpenStack clients (the ``openstack`` CLI with osc-placement, and
openstacksdk) driving a placement server over HTTP.

The clients live in their own virtualenv, ``.venv-clients`` at the top of
the tree (``PLACEMENT_CLIENTS_VENV`` moves it), made on first use by
``tests.upstream.ensure_venv`` and reused while the pins are unchanged.

Starting ``openstack`` costs about four seconds of plugin loading, so a
test talks to one long-lived runner process in that virtualenv instead:
each request is one CLI command line (run through the CLI's own ``main``,
exactly as the console script does, with its exit code and output
captured) or one call on openstacksdk's placement proxy. A noauth2
server takes the token ``admin``: both clients send it through
keystoneauth's ``admin_token`` plugin with the server as the endpoint.
"""
import json
import os
import select
import subprocess

from tests import upstream

VENV = os.environ.get('PLACEMENT_CLIENTS_VENV', os.path.join(upstream.TOP, '.venv-clients'))

# Verified together on Python 3.11 against ours and upstream 16.0.0.
PINS = (
    'python-openstackclient==10.5.0',
    'osc-placement==4.9.1',
    'openstacksdk==4.22.0',
    'keystoneauth1==5.18.1',
)
INSTALL_TIMEOUT = 600   # one venv or pip step, at most
CALL_TIMEOUT = 120      # one command or SDK call, at most

_RUNNER = r'''
import contextlib, io, json, os, sys

import openstack
from openstackclient import shell
from osc_lib import clientmanager as osc_clientmanager

url = sys.argv[1]
sys.argv[0] = 'openstack'   # the program name in usage messages
proto_out = os.fdopen(os.dup(1), 'w')
connections = {}


def auth_args(version):
    return ['--os-auth-type', 'admin_token', '--os-token', 'admin',
            '--os-endpoint', url, '--os-placement-api-version', version]


def forget_clients():
    # The CLI caches each plugin's client on osc-lib's ClientManager class;
    # a new process would not have it (it holds the previous microversion).
    for value in vars(osc_clientmanager.ClientManager).values():
        if isinstance(value, osc_clientmanager.ClientCache):
            value._handle = None


def run_cli(argv, version):
    forget_clients()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = shell.main(auth_args(version) + argv)
        except SystemExit as exc:  # argparse refusals
            rc = exc.code if isinstance(exc.code, int) else 1
    return {'rc': rc, 'stdout': out.getvalue(), 'stderr': err.getvalue()}


def plain(value):
    if hasattr(value, 'to_dict'):
        value = value.to_dict()
        value.pop('location', None)
        return value
    if isinstance(value, (list, tuple)) or hasattr(value, '__next__'):
        return [plain(v) for v in value]
    return value


def run_sdk(method, args, kwargs, version):
    conn = connections.get(version)
    if conn is None:
        conn = connections[version] = openstack.connection.Connection(
            auth_type='admin_token', auth={'token': 'admin', 'endpoint': url},
            placement_api_version=version)
    try:
        # {'provider': uuid} stands for the provider as the SDK reads it
        # (with its generation), as a program would pass it.
        args = [conn.placement.get_resource_provider(a['provider'])
                if isinstance(a, dict) and set(a) == {'provider'} else a for a in args]
        result = plain(getattr(conn.placement, method)(*args, **kwargs))
        return {'result': result}
    except openstack.exceptions.HttpException as exc:
        return {'error': type(exc).__name__, 'status': exc.status_code,
                'message': str(exc)}


for line in sys.stdin:
    request = json.loads(line)
    if 'cli' in request:
        answer = run_cli(request['cli'], request['version'])
    else:
        answer = run_sdk(request['sdk'], request['args'], request['kwargs'],
                         request['version'])
    proto_out.write(json.dumps(answer, default=str) + '\n')
    proto_out.flush()
'''


def ensure_venv():
    return upstream.ensure_venv(VENV, PINS, 'clients-pins.txt', INSTALL_TIMEOUT)


def venv_bin(name):
    return os.path.join(VENV, 'bin', name)


class CliResult:
    """One CLI command: exit code, output, and the output as JSON."""

    def __init__(self, argv, rc, stdout, stderr):
        self.argv, self.rc, self.stdout, self.stderr = argv, rc, stdout, stderr

    @property
    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return 'openstack %s -> %s\n%s%s' % (' '.join(self.argv), self.rc,
                                             self.stdout, self.stderr)


class SdkError(Exception):
    def __init__(self, answer):
        super().__init__('%(error)s %(status)s: %(message)s' % answer)
        self.status = answer['status']
        self.message = answer['message']


class Clients:
    """The real clients pointed at the placement server at ``url``."""

    def __init__(self, url, workdir):
        ensure_venv()
        self.url = url
        self.workdir = workdir
        self.runner_path = os.path.join(workdir, 'clients_runner.py')
        with open(self.runner_path, 'w') as f:
            f.write(_RUNNER)
        self.stderr = open(os.path.join(workdir, 'clients_runner.log'), 'ab')
        self.proc = subprocess.Popen(
            [venv_bin('python'), self.runner_path, url], cwd=workdir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
            env=upstream.clean_env(HOME=workdir))

    def _ask(self, request):
        self.proc.stdin.write(json.dumps(request) + '\n')
        self.proc.stdin.flush()
        # One answer line per request, read whole: nothing stays buffered.
        ready, _, _ = select.select([self.proc.stdout], [], [], CALL_TIMEOUT)
        if not ready:
            self.proc.kill()
            raise RuntimeError('client runner gave no answer in %ds to %s'
                               % (CALL_TIMEOUT, request))
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('client runner exited (%s)' % self.proc.poll())
        return json.loads(line)

    def cli(self, *argv, version='1.39'):
        """``openstack <argv>`` at placement microversion ``version``."""
        answer = self._ask({'cli': list(argv), 'version': version})
        return CliResult(list(argv), answer['rc'], answer['stdout'], answer['stderr'])

    def ok(self, *argv, version='1.39'):
        """A command that must succeed; its parsed JSON output (or None)."""
        result = self.cli(*argv, version=version)
        assert result.rc == 0, result
        return result.json if result.stdout.strip() else None

    def sdk(self, method, *args, version='1.39', **kwargs):
        """``conn.placement.<method>(*args, **kwargs)``; generators listed,
        resources as dicts; an HTTP error raises SdkError. An argument
        ``{'provider': uuid}`` is passed as that provider's SDK object."""
        answer = self._ask({'sdk': method, 'args': list(args), 'kwargs': kwargs,
                            'version': version})
        if 'error' in answer:
            raise SdkError(answer)
        return answer['result']

    def console_script(self, *argv, version='1.39'):
        """The installed ``openstack`` command itself, as a process."""
        return subprocess.run(
            [venv_bin('openstack'), '--os-auth-type', 'admin_token', '--os-token', 'admin',
             '--os-endpoint', self.url, '--os-placement-api-version', version] + list(argv),
            capture_output=True, text=True, timeout=CALL_TIMEOUT,
            env=upstream.clean_env(HOME=self.workdir))

    def close(self):
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
