"""Upstream placement's own functional suite, run against our server.

The gabbi YAML files are read at run time from the openstack-placement
package in upstream's side virtualenv (tests/upstream.py); gabbi itself
lives in a side virtualenv of its own (``.venv-gabbi``). For each database
engine, four ``placement-server`` processes are started, one per server
configuration upstream's fixtures ask for (see gabbi_run.py), each on its
own database; gabbi_fixtures.py builds each file's starting state over
HTTP. Every test of every file must pass.
"""
import json
import os
import subprocess

import pytest
import yaml

from placement_server import policies
from tests import databases
from tests import upstream
from tests.integration import servers
from tests.integration import uwsgi

HERE = os.path.dirname(os.path.abspath(__file__))
GABBI_VENV = os.environ.get('PLACEMENT_GABBI_VENV', os.path.join(upstream.TOP, '.venv-gabbi'))
GABBI_PINS = ('gabbi==3.1.0', 'urllib3==1.26.20', 'jsonpath-rw-ext==1.2.2', 'PyYAML==6.0.2')

# Server configurations upstream's fixtures need: {(section, key): value}.
LEGACY = {('oslo_policy', 'enforce_new_defaults'): 'false'}
CONFIGS = {
    'default': LEGACY,
    'secure-rbac': {('oslo_policy', 'enforce_new_defaults'): 'true'},
    'cors': {**LEGACY, ('cors', 'allowed_origin'): 'http://valid.example.com',
             ('cors', 'allow_headers'): 'openstack-api-version'},
    'open-policy': {**LEGACY, ('oslo_policy', 'policy_file'): 'open-policy.yaml'},
}


def write_conf(path, options):
    sections = {}
    for (section, key), value in options.items():
        sections.setdefault(section, {})[key] = value
    with open(path, 'w') as f:
        for section, values in sections.items():
            f.write('[%s]\n' % section)
            f.writelines('%s = %s\n' % kv for kv in values.items())


def write_open_policy(path):
    """Every rule open to any authenticated user, but the admin role rule."""
    rules = {rule.name: '@' for rule in policies.list_rules() if rule.name != 'admin_api'}
    with open(path, 'w') as f:
        yaml.safe_dump(rules, f)


@pytest.fixture(scope='module')
def gabbi_python():
    upstream.ensure_venv()
    venv = upstream.ensure_venv(GABBI_VENV, GABBI_PINS, 'gabbi-pins.txt')
    return os.path.join(venv, 'bin', 'python')


@pytest.fixture(scope='module')
def gabbits():
    code = 'import os, placement; print(os.path.dirname(placement.__file__))'
    top = subprocess.run([upstream.venv_bin('python'), '-c', code], check=True,
                         capture_output=True, text=True, env=upstream.clean_env()).stdout
    path = os.path.join(top.strip(), 'tests', 'functional', 'gabbits')
    assert len([f for f in os.listdir(path) if f.endswith('.yaml')]) >= 79, path
    return path


@pytest.fixture
def configured_servers(tmp_path):
    """start(backend, served_by) -> {config: url}: one server per
    configuration, placement-server or uWSGI with Kolla's or
    OpenStack-Helm's ini (tests/integration/uwsgi.py)."""
    made, started = [], []

    def start(backend, served_by='placement-server'):
        urls = {}
        for config, options in CONFIGS.items():
            workdir = tmp_path / config
            workdir.mkdir()
            write_open_policy(workdir / 'open-policy.yaml')
            test_db = databases.TestDatabase(backend, str(workdir))
            made.append(test_db)
            if served_by == 'placement-server':
                write_conf(workdir / 'placement.conf', options)
                server = servers.Server(test_db.url, str(workdir), workers=2,
                                        config_file=str(workdir / 'placement.conf'))
            else:
                server = uwsgi.UwsgiServer(test_db.url, str(workdir),
                                           flavour=served_by.partition('-')[2],
                                           processes=3, options=options, sync_db=False)
            started.append(server)
            urls[config] = server.start().url
        return urls
    yield start
    for server in started:
        server.stop()
    for test_db in made:
        test_db.drop()


# Under uWSGI as the deployment tools run it: one engine each (the
# application is the same; what differs is the server around it).
SERVED = [('placement-server', b) for b in databases.BACKENDS] + [
    (s, b) for s, b in (('uwsgi-kolla', 'mysql'), ('uwsgi-helm', 'postgresql'))
    if b in databases.BACKENDS]


@pytest.mark.parametrize('served_by,backend', SERVED)
def test_upstream_gabbi_suite(served_by, backend, configured_servers, gabbi_python, gabbits,
                              tmp_path, record_property):
    urls = configured_servers(backend, served_by)
    out = tmp_path / 'results.json'
    command = [gabbi_python, os.path.join(HERE, 'gabbi_run.py'), '--gabbits', gabbits,
               '--out', str(out)] + ['--server=%s=%s' % kv for kv in urls.items()]
    run = subprocess.run(command, capture_output=True, text=True, timeout=1200,
                         env=upstream.clean_env())
    assert run.returncode == 0 and out.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads(out.read_text())
    records = results['tests']
    passed = [r for r in records if r['status'] == 'pass']
    failed = [r for r in records if r['status'] != 'pass']
    record_property('conformance', 'upstream placement gabbi suite on %s, %s: %d/%d passed '
                    '(%d files, %.0f s)' % (backend, served_by, len(passed), len(records),
                                            len(results['files']), results['seconds']))
    assert not failed, '%d of %d upstream tests failed on %s:\n%s' % (
        len(failed), len(records), backend,
        '\n'.join('%s %s %s\n%s' % (r['status'], r['file'], r['test'], r['detail'][-1500:])
                  for r in failed[:40]))
