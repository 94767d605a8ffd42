"""Taking over a database upstream placement 16.0.0 made and filled, and the way back.

Upstream (from the side virtualenv) syncs and fills a MariaDB or PostgreSQL
database through its API; our ``placement-manage db sync`` takes it over;
our server answers every read as upstream did and writes a claim; then
upstream syncs and serves the database again and reads the same plus the
claim. The revisions come from the installed upstream package.
"""
import glob
import json
import os
import subprocess
import uuid

import pytest
import sqlalchemy as sa

from placement_server.db import migration
from tests import databases
from tests import upstream
from tests.integration import servers

pytestmark = pytest.mark.integration

UPSTREAM_VERSIONS = os.path.join('placement', 'db', 'sqlalchemy', 'alembic', 'versions')

# Runs in upstream's virtualenv: its own alembic migrations up to one revision.
UPGRADE_TO = '''
import sys
from oslo_config import cfg
from placement import conf, db_api
from placement.db.sqlalchemy import migration
c = cfg.ConfigOpts()
conf.register_opts(c)
c(['--config-file', sys.argv[1]], project='placement')
db_api.configure(c)
migration.upgrade(sys.argv[2])
'''


def upstream_revisions():
    """{revision: its predecessor} read from the installed upstream package."""
    upstream.ensure_venv()
    found = {}
    pattern = os.path.join(upstream.VENV, 'lib', 'python*', 'site-packages',
                           UPSTREAM_VERSIONS, '*.py')
    for path in glob.glob(pattern):
        values = {}
        with open(path) as f:
            for line in f:
                for key in ('revision', 'down_revision'):
                    if line.startswith(key + ' = '):
                        values[key] = line.split('=', 1)[1].strip().strip('\'"')
        if 'revision' in values:
            found[values['revision']] = None if values['down_revision'] == 'None' \
                else values['down_revision']
    return found


@pytest.fixture(params=['mysql', 'postgresql'])
def empty_database(request, tmp_path):
    backend = request.param
    admin = sa.engine.make_url(databases.ADMIN_URLS[backend])
    name = 'placement_takeover_%s' % uuid.uuid4().hex[:12]
    engine = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    yield admin.set(database=name).render_as_string(hide_password=False)
    with engine.connect() as conn:
        conn.exec_driver_sql('DROP DATABASE IF EXISTS %s%s' % (
            name, ' WITH (FORCE)' if backend == 'postgresql' else ''))
    engine.dispose()


def manage(tmp_path, conf_path, *args):
    return subprocess.run([servers.PLACEMENT_MANAGE, '--config-file', conf_path] + list(args),
                          capture_output=True, text=True, timeout=300,
                          env=upstream.clean_env(HOME=str(tmp_path)))


def fill(base):
    """Providers (a nested tree, a sharing provider), a custom class and
    trait, aggregates, allocations of two projects and consumer types."""
    def ok(method, path, body=None, status=(200, 201, 204)):
        got, answer = servers.call(method, base + path, body)
        assert got in status, (method, path, got, answer)
        return answer

    ok('PUT', '/resource_classes/CUSTOM_GOLD')
    ok('PUT', '/traits/CUSTOM_FAST')
    agg = str(uuid.uuid4())
    cn = ok('POST', '/resource_providers', {'name': 'cn1'})['uuid']
    numa = [ok('POST', '/resource_providers', {'name': 'cn1-numa%d' % i,
                                               'parent_provider_uuid': cn})['uuid']
            for i in range(2)]
    disk = ok('POST', '/resource_providers', {'name': 'shared-disk'})['uuid']
    gold = ok('POST', '/resource_providers', {'name': 'cn2'})['uuid']
    for rp, inventories in ((numa[0], {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}),
                            (numa[1], {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 4096}}),
                            (disk, {'DISK_GB': {'total': 500, 'reserved': 10}}),
                            (gold, {'CUSTOM_GOLD': {'total': 4},
                                    'VCPU': {'total': 2, 'allocation_ratio': 4.0}})):
        ok('PUT', '/resource_providers/%s/inventories' % rp,
           {'resource_provider_generation': 0, 'inventories': inventories})
    for rp, traits in ((cn, ['CUSTOM_FAST', 'HW_CPU_X86_AVX2']),
                       (disk, ['MISC_SHARES_VIA_AGGREGATE'])):
        generation = ok('GET', '/resource_providers/%s' % rp)['generation']
        ok('PUT', '/resource_providers/%s/traits' % rp,
           {'resource_provider_generation': generation, 'traits': traits})
    for rp in (cn, disk):
        generation = ok('GET', '/resource_providers/%s' % rp)['generation']
        ok('PUT', '/resource_providers/%s/aggregates' % rp,
           {'resource_provider_generation': generation, 'aggregates': [agg]})
    consumers = []
    for project, consumer_type, allocations in (
            ('p1', 'INSTANCE', {numa[0]: {'VCPU': 2, 'MEMORY_MB': 1024}, disk: {'DISK_GB': 20}}),
            ('p1', 'MIGRATION', {numa[1]: {'VCPU': 1}}),
            ('p2', 'INSTANCE', {gold: {'CUSTOM_GOLD': 1, 'VCPU': 3}})):
        consumer = str(uuid.uuid4())
        ok('PUT', '/allocations/%s' % consumer, {
            'allocations': {rp: {'resources': r} for rp, r in allocations.items()},
            'project_id': project, 'user_id': 'u-' + project, 'consumer_generation': None,
            'consumer_type': consumer_type})
        consumers.append(consumer)
    return {'providers': [cn] + numa + [disk, gold], 'consumers': consumers, 'aggregate': agg}


def _sorted(value):
    # Both servers list the same rows; the order of a JSON list is not part
    # of what is compared (candidates, providers in a list).
    if isinstance(value, dict):
        return {k: _sorted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return sorted((_sorted(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def reads(base, world):
    """Every read a client makes, by path: (status, body)."""
    paths = ['/resource_providers', '/resource_classes', '/traits',
             '/resource_providers?in_tree=%s' % world['providers'][0],
             '/resource_providers?member_of=%s' % world['aggregate'],
             '/resource_providers?required=CUSTOM_FAST',
             '/usages?project_id=p1', '/usages?project_id=p2',
             '/usages?project_id=p1&consumer_type=INSTANCE',
             '/usages?project_id=p1&consumer_type=MIGRATION',
             '/usages?project_id=p1&consumer_type=all',
             '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:10',
             '/allocation_candidates?resources=CUSTOM_GOLD:1',
             '/allocation_candidates?resources1=VCPU:1&resources2=VCPU:1'
             '&group_policy=isolate']
    for rp in world['providers']:
        paths += ['/resource_providers/%s%s' % (rp, part) for part in
                  ('', '/inventories', '/usages', '/traits', '/aggregates', '/allocations')]
    paths += ['/allocations/%s' % c for c in world['consumers']]
    return {path: list(map(_sorted, servers.call('GET', base + path))) for path in paths}


def differences(got, want):
    """The reads that differ: {path: (got, wanted)}. Upstream 16.0.0 answers
    500 to /usages by project at 1.38+ on PostgreSQL (its GROUP BY is
    refused: GroupingError); there the other server must answer 200."""
    failed = {path for path in want if 500 in (got[path][0], want[path][0])}
    assert all(path.startswith('/usages?') for path in failed), failed
    assert all(200 in (got[path][0], want[path][0]) for path in failed), failed
    diff = {path: (got.get(path), want[path]) for path in want
            if path not in failed and got.get(path) != want[path]}
    if os.environ.get('TAKEOVER_DIFF'):
        with open(os.environ['TAKEOVER_DIFF'], 'w') as f:
            json.dump(diff, f, indent=1)
    return diff


def test_upstream_database_taken_over_and_given_back(empty_database, tmp_path):
    workdir = str(tmp_path / 'upstream')
    first = upstream.UpstreamPlacement(empty_database, workdir)
    with first:
        world = fill(first.url)
        before = reads(first.url, world)
    conf_path = os.path.join(workdir, 'placement.conf')

    synced = manage(tmp_path, conf_path, 'db', 'sync')
    assert synced.returncode == 0, synced.stderr
    version = manage(tmp_path, conf_path, 'db', 'version')
    assert version.stdout.split() == [migration.head() + ';', 'upstream', 'placement',
                                      'a082b8bb98d0'], \
        version.stdout + version.stderr

    ours = servers.Server(empty_database, str(tmp_path / 'ours')).start()
    try:
        assert differences(reads(ours.url, world), before) == {}
        claim = str(uuid.uuid4())
        status, body = servers.call('PUT', '%s/allocations/%s' % (ours.url, claim), {
            'allocations': {world['providers'][2]: {'resources': {'VCPU': 1, 'MEMORY_MB': 256}}},
            'project_id': 'p3', 'user_id': 'u3', 'consumer_generation': None,
            'consumer_type': 'INSTANCE'})
        assert status == 204, body
        world['consumers'].append(claim)
        after = reads(ours.url, world)
        assert after['/allocations/%s' % claim][1]['allocations']
    finally:
        ours.stop()

    # The way back: upstream's own db sync, then upstream serves the same.
    back = upstream.UpstreamPlacement(empty_database, str(tmp_path / 'back'))
    with back:
        assert differences(reads(back.url, world), after) == {}


def test_every_upstream_revision_is_taken_over(empty_database, tmp_path):
    revisions = upstream_revisions()
    assert len(revisions) >= 5 and 'a082b8bb98d0' in revisions
    script = tmp_path / 'upgrade_to.py'
    script.write_text(UPGRADE_TO)
    conf_path = str(tmp_path / 'placement.conf')
    upstream.write_config(conf_path, empty_database)
    engine = sa.create_engine(empty_database)
    try:
        for revision in revisions:
            with engine.begin() as conn:   # start again from an empty database
                meta = sa.MetaData()
                meta.reflect(conn)
                meta.drop_all(conn)
            made = subprocess.run([upstream.venv_bin('python'), str(script), conf_path, revision],
                                  capture_output=True, text=True, timeout=300,
                                  env=upstream.clean_env())
            assert made.returncode == 0, made.stderr
            synced = manage(tmp_path, conf_path, 'db', 'sync')
            assert synced.returncode == 0, (revision, synced.stderr)
            version = manage(tmp_path, conf_path, 'db', 'version')
            assert version.stdout.strip() == (migration.head()
                                              + '; upstream placement a082b8bb98d0'), \
                (revision, version.stdout, version.stderr)
            again = subprocess.run([upstream.venv_bin('placement-manage'), '--config-file',
                                    conf_path, 'db', 'sync'],
                                   capture_output=True, text=True, timeout=300,
                                   env=upstream.clean_env())
            assert again.returncode == 0, (revision, again.stderr)
    finally:
        engine.dispose()


def test_unknown_revision_is_one_line(empty_database, tmp_path):
    conf_path = str(tmp_path / 'placement.conf')
    upstream.write_config(conf_path, empty_database)
    engine = sa.create_engine(empty_database)
    with engine.begin() as conn:
        conn.exec_driver_sql('CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)')
        conn.exec_driver_sql("INSERT INTO alembic_version VALUES ('ffffffffffff')")
    engine.dispose()
    for action in ('sync', 'version'):
        result = manage(tmp_path, conf_path, 'db', action)
        assert result.returncode == 1
        assert result.stderr.strip().count('\n') == 0
        assert 'ffffffffffff' in result.stderr, result.stderr
