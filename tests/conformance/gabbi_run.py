"""Run upstream placement's gabbi files against running servers.

Runs in the gabbi side virtualenv (see test_upstream_gabbi.py), file by
file, each against the server configured for the fixtures the file names,
and writes one JSON record per test::

    python gabbi_run.py --gabbits DIR --server default=URL --server cors=URL \
        --server open-policy=URL --server secure-rbac=URL --out results.json

Test status is one of pass, fail, error, skip, xfail (expected failure),
xpass (unexpected success).
"""
import argparse
import json
import os
import sys
import tempfile
import time
import unittest

from gabbi import driver
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gabbi_fixtures  # noqa: E402

# Which server configuration a fixture needs; anything else runs on 'default'.
CONFIG_OF_FIXTURE = {
    'CORSFixture': 'cors',
    'OpenPolicyFixture': 'open-policy',
    'SecureRBACPolicyFixture': 'secure-rbac',
}


def config_for(path):
    with open(path) as f:
        fixtures = (yaml.safe_load(f) or {}).get('fixtures') or []
    configs = {CONFIG_OF_FIXTURE[name] for name in fixtures if name in CONFIG_OF_FIXTURE}
    if len(configs) > 1:
        raise SystemExit('%s: fixtures need different servers: %s' % (path, sorted(configs)))
    return configs.pop() if configs else 'default'


class Recorder(unittest.TestResult):
    """Keeps one record per test: status and, for failures, the reason."""

    def __init__(self, file_name):
        super().__init__()
        self.file_name = file_name
        self.records = []

    def _add(self, test, status, detail=''):
        self.records.append({'file': self.file_name, 'test': test.id(),
                             'status': status, 'detail': detail})

    def addSuccess(self, test):
        self._add(test, 'pass')

    def addFailure(self, test, err):
        self._add(test, 'fail', self._exc_info_to_string(err, test)[-4000:])

    def addError(self, test, err):
        self._add(test, 'error', self._exc_info_to_string(err, test)[-4000:])

    def addSkip(self, test, reason):
        self._add(test, 'skip', reason)

    def addExpectedFailure(self, test, err):
        self._add(test, 'xfail')

    def addUnexpectedSuccess(self, test):
        self._add(test, 'xpass')


def run_file(path, url):
    """Run one YAML file against ``url``; return its records."""
    name = os.path.basename(path)
    gabbi_fixtures.TARGET = url
    with tempfile.TemporaryDirectory() as one:
        os.symlink(path, os.path.join(one, name))
        suite = driver.build_tests(one, unittest.TestLoader(), url=url,
                                   test_loader_name='upstream',
                                   fixture_module=gabbi_fixtures)
    result = Recorder(name)
    suite.run(result)
    if not result.records:  # a fixture failure fails the file as a whole
        for test, trace in result.errors:
            result.records.append({'file': name, 'test': str(test), 'status': 'error',
                                   'detail': trace[-4000:]})
    return result.records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gabbits', required=True, help="upstream's gabbits directory")
    parser.add_argument('--server', action='append', default=[], metavar='CONFIG=URL')
    parser.add_argument('--only', action='append', default=[], help='run only these files')
    parser.add_argument('--out', required=True)
    args = parser.parse_args()
    servers = dict(s.split('=', 1) for s in args.server)
    files = sorted(f for f in os.listdir(args.gabbits) if f.endswith('.yaml'))
    if args.only:
        files = [f for f in files if f in args.only or f[:-5] in args.only]
    records, started = [], time.monotonic()
    for name in files:
        path = os.path.join(args.gabbits, name)
        config = config_for(path)
        if config not in servers:
            raise SystemExit('no server for %s (needed by %s)' % (config, name))
        records.extend(run_file(path, servers[config]))
    with open(args.out, 'w') as f:
        json.dump({'files': files, 'seconds': time.monotonic() - started,
                   'tests': records}, f, indent=1)
    passed = sum(r['status'] == 'pass' for r in records)
    print('%d/%d passed' % (passed, len(records)))


if __name__ == '__main__':
    main()
