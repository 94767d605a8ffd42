"""Clients' own functional suites, run against our server behind upstream
placement's unchanged ``PlacementFixture``.

osc-placement and nova test themselves with upstream's fixture
(``placement.tests.functional.fixtures.placement``): it makes a fresh
database, configures noauth2 and intercepts HTTP to the application
``placement.deploy.loadapp`` builds. Each suite runs, as its project runs
it (stestr), from the packages installed in a side virtualenv at run time;
with ``PLACEMENT_FIXTURE_APP=ours`` the process starts with
``behind_fixture/`` on its path, whose ``sitecustomize`` swaps that one call
for our application (``behind_fixture/ours_behind_fixture.py``), and
without it the same command tests upstream's application.
"""
import concurrent.futures
import json
import os
import signal
import subprocess

from tests import upstream

HERE = os.path.dirname(os.path.abspath(__file__))
BEHIND_FIXTURE = os.path.join(HERE, 'behind_fixture')
INSTALL_TIMEOUT = 1800

# What placement_server needs beyond what openstack-placement brings,
# pinned as in our own .venv.
OUR_DEPS = (
    'alembic==1.20.1',
    'fastjsonschema==2.22.3',
    'orjson==3.13.0',
    'prometheus-client==0.26.0',
    'microversion-parse==2.1.0',
    'oslo.upgradecheck==2.8.0',
)

# osc-placement 4.9.1's functional tests: the CLI in process, the fixture
# from openstack-placement 16.0.0 (verified together on Python 3.11).
OSC = {
    'venv': os.environ.get('PLACEMENT_OSC_SUITE_VENV',
                           os.path.join(upstream.TOP, '.venv-osc-functional')),
    'pins': ('openstack-placement==16.0.0',
             'osc-placement==4.9.1',
             'python-openstackclient==10.5.0',
             'openstacksdk==4.22.0',
             'keystoneauth1==5.18.1',
             'oslotest==6.1.1',
             'stestr==4.2.1',
             'wsgi-intercept==1.13.1') + OUR_DEPS,
    'package': 'osc_placement',
    'test_path': 'osc_placement/tests/functional',
}

# nova 34.0.0 (2026.1, the release beside placement 16.0.0) and what its
# functional tests import beyond nova itself.
NOVA = {
    'venv': os.environ.get('PLACEMENT_NOVA_SUITE_VENV',
                           os.path.join(upstream.TOP, '.venv-nova-functional')),
    'pins': ('nova==34.0.0',
             'openstack-placement==16.0.0',
             # nova's tests turn SQLAlchemy's deprecation warnings into
             # errors; 2.1 deprecates what nova 34 still calls (noload)
             'SQLAlchemy==2.0.58',
             'ddt==1.7.2',
             'oslotest==6.1.1',
             'osprofiler==4.4.0',
             'requests-mock==1.12.1',
             'stestr==4.2.1',
             'testresources==2.1.2',
             'testscenarios==0.7.0',
             'testtools==2.9.1',
             'wsgi-intercept==1.13.1') + OUR_DEPS,
    'package': 'nova',
    'test_path': 'nova/tests/functional',
    # nova's API fixture reads etc/nova/api-paste.ini beside the nova
    # package, as in a source tree; the wheel puts it under the venv's etc/
    'data_links': {'etc/nova': 'etc/nova'},
}


# The agent's own tests on nova's functional framework, in nova's venv:
# nova's compute code moving servers, the agent auditing beside it
# (tests/integration/nova_framework, found from our tree's top).
NOVA_FRAMEWORK = dict(NOVA, top=upstream.TOP, test_path='tests/integration/nova_framework')


def site_packages(venv, package):
    """The directory ``package`` is installed in, in ``venv``."""
    code = 'import os, %s; print(os.path.dirname(os.path.dirname(%s.__file__)))' % (
        package, package)
    out = subprocess.run([os.path.join(venv, 'bin', 'python'), '-c', code], check=True,
                         capture_output=True, text=True, env=upstream.clean_env(),
                         timeout=300).stdout
    return out.strip()


def prepare(suite):
    """The suite's virtualenv, made or reused, with our package in it."""
    venv = upstream.ensure_venv(suite['venv'], suite['pins'], timeout=INSTALL_TIMEOUT)
    marker = os.path.join(venv, 'ours-editable.txt')
    if upstream._read(marker) != upstream.TOP + '\n':
        subprocess.run([os.path.join(venv, 'bin', 'python'), '-m', 'pip', 'install', '-q',
                        '--no-deps', '-e', upstream.TOP],
                       check=True, timeout=INSTALL_TIMEOUT, env=upstream.clean_env())
        with open(marker, 'w') as f:
            f.write(upstream.TOP + '\n')
    for inside, data in suite.get('data_links', {}).items():
        link = os.path.join(site_packages(venv, suite['package']), inside)
        if not os.path.exists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(os.path.join(venv, data), link)
    return venv


def run(suite, app, workdir, filters=(), concurrency=2, timeout=1800):
    """Run the suite with ``app`` ('ours' or 'upstream') behind the fixture:
    {'results': {test id: status}, 'failures': {test id: traceback},
    'apps': which application ('ours', 'upstream') each fixture got,
    'output': the runner's stderr's end, 'hung': whether the run was
    stopped at ``timeout`` (the tests finished by then are in 'results')}."""
    venv = prepare(suite)
    python = os.path.join(venv, 'bin', 'python')
    top = suite.get('top') or site_packages(venv, suite['package'])
    os.makedirs(workdir, exist_ok=True)
    log = os.path.join(workdir, 'apps.log')
    env = upstream.clean_env(PYTHONPATH=BEHIND_FIXTURE, PLACEMENT_FIXTURE_LOG=log,
                             PLACEMENT_FIXTURE_DBDIR=workdir,
                             OS_STDOUT_CAPTURE='1', OS_STDERR_CAPTURE='1',
                             OS_LOG_CAPTURE='1', OS_TEST_TIMEOUT='160',
                             PATH=os.path.join(venv, 'bin') + os.pathsep + os.environ['PATH'])
    env['PLACEMENT_FIXTURE_APP'] = app
    stream = os.path.join(workdir, 'results.subunit')
    with open(stream, 'wb') as out, open(os.path.join(workdir, 'stderr'), 'w+b') as err:
        # stestr's own session, so a hang ends with every worker it started
        proc = subprocess.Popen(
            [python, '-m', 'stestr', '--test-path', os.path.join(top, suite['test_path']),
             '--top-dir', top, 'run', '--subunit', '--concurrency', str(concurrency)]
            + list(filters),
            cwd=workdir, env=env, stdout=out, stderr=err, start_new_session=True)
        try:
            proc.wait(timeout)
            hung = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            hung = True
        err.seek(0)
        output = err.read().decode(errors='replace')[-3000:]
    with open(stream, 'rb') as raw:
        parsed = subprocess.run([python, os.path.join(BEHIND_FIXTURE, 'subunit_results.py')],
                                stdin=raw, capture_output=True, check=True, env=env,
                                timeout=300)
    found = json.loads(parsed.stdout)
    made = (upstream._read(log) or '').split('\n')
    found['apps'] = [line.split()[0] for line in made if line]
    found['output'] = output
    found['hung'] = hung
    return found


def run_beside(suite, workdir, filters=(), concurrency=1, timeout=1800):
    """The same tests with ours and with upstream's application, both runs
    at once (each with ``concurrency`` workers), so neither waits for the
    other's slowest tests: {'ours': found, 'upstream': found} (see run)."""
    prepare(suite)  # once, before two threads would both install ours
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = {app: pool.submit(run, suite, app, os.path.join(workdir, app), filters,
                                 concurrency, timeout)
                for app in ('ours', 'upstream')}
        return {app: future.result() for app, future in runs.items()}


def summary(found):
    """(passed, failed, skipped, total) of one run."""
    statuses = list(found['results'].values())
    passed = statuses.count('success')
    skipped = statuses.count('skip')
    return passed, len(statuses) - passed - skipped, skipped, len(statuses)
