"""A database restored from an earlier dump under running servers.

As an operator does it: providers made, a dump taken (``pg_dump``,
``mariadb-dump``; SQLite: a copy of the file), more providers made and a
claim, read by both workers of a ``placement-server --workers 2`` so that
their views hold them; the dump restored (``pg_restore --clean``, the
dump fed to ``mariadb``, the file copied back), with or without
``placement-manage db reload-views`` after it; one more provider made.
Then every provider list, candidates, usage in the candidates' summaries
and capacity series on the metrics port must hold exactly what the
database holds, from every worker (many reads, several at once).

placement_server/db/changes.py says why the views notice by themselves.
"""
import concurrent.futures
import os
import sqlite3
import subprocess
import uuid

import pytest
import requests
import sqlalchemy as sa

from tests.integration import servers

pytestmark = pytest.mark.integration

VCPU = {'VCPU': {'total': 8}}
READS = 24


def dump_and_restore(url, workdir):
    """(dump(), restore()) of the database at ``url`` with its engine's own tools."""
    parsed = sa.engine.make_url(url)
    path = os.path.join(workdir, 'placement.dump')
    if parsed.get_backend_name() == 'sqlite':
        def copy(source, target):
            with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
                src.backup(dst)
        return (lambda: copy(parsed.database, path)), (lambda: copy(path, parsed.database))
    if parsed.get_backend_name() == 'postgresql':
        where = ['-h', parsed.host, '-p', str(parsed.port), '-U', parsed.username]
        return ((lambda: _run(['pg_dump', '-Fc', '-f', path] + where + [parsed.database])),
                (lambda: _run(['pg_restore', '--clean', '--if-exists', '-d', parsed.database]
                              + where + [path])))
    where = ['-h', parsed.host, '-P', str(parsed.port), '-u', parsed.username]

    def restore():
        with open(path, 'rb') as dump:
            _run(['mariadb'] + where + [parsed.database], stdin=dump)
    return ((lambda: _run(['mariadb-dump', '--single-transaction', '--result-file', path]
                          + where + [parsed.database])), restore)


def _run(args, stdin=None):
    result = subprocess.run(args, stdin=stdin, capture_output=True, timeout=300)
    assert result.returncode == 0, (args, result.stderr.decode(errors='replace'))


def truth(url):
    """What the database holds: {provider uuid: (name, VCPU used)}."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                'SELECT p.uuid, p.name, COALESCE(SUM(a.used), 0) FROM resource_providers p '
                'LEFT JOIN allocations a ON a.resource_provider_id = p.id '
                'GROUP BY p.uuid, p.name').all()
    finally:
        engine.dispose()
    return {u: (name, int(used)) for u, name, used in rows}


def answers(server):
    """What the server answers, one frozenset per read (READS reads of
    each kind, four at once, so both workers answer)."""
    def one(kind):
        if kind == 'list':
            status, body = servers.call('GET', server.url + '/resource_providers')
            assert status == 200, body
            return kind, frozenset((p['uuid'], p['name']) for p in body['resource_providers'])
        if kind == 'candidates':
            status, body = servers.call('GET', server.url
                                        + '/allocation_candidates?resources=VCPU:1')
            assert status == 200, body
            return kind, frozenset(
                (rp, s['resources']['VCPU']['used'])
                for rp, s in body['provider_summaries'].items())
        text = requests.get(server.metrics_url, timeout=60).text
        return kind, frozenset(
            line.split('hostname="', 1)[1].split('"', 1)[0] + ' ' + line.rsplit(' ', 1)[1]
            for line in text.splitlines()
            if line.startswith('openstack_placement_resource_usage{'))
    kinds = ['list', 'candidates'] * READS + ['capacity'] * 4
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, kinds))


def expected(held):
    return {'list': frozenset((u, name) for u, (name, _) in held.items()),
            'candidates': frozenset((u, used) for u, (_, used) in held.items()),
            'capacity': frozenset('%s %d' % (name, used) for name, used in held.values())}


def claim(server, rp, vcpus):
    status, body = servers.call('PUT', '%s/allocations/%s' % (server.url, uuid.uuid4()), {
        'allocations': {rp: {'resources': {'VCPU': vcpus}}}, 'project_id': 'p',
        'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    assert status == 204, body


@pytest.mark.parametrize('reload_views', [False, True], ids=['automatic', 'reload-views'])
def test_a_restore_under_running_servers(placement_servers, database, tmp_path, reload_views):
    server, = placement_servers(database.url, workers=2)
    dump, restore = dump_and_restore(database.url, str(tmp_path))
    kept = [servers.make_provider(server.url, VCPU) for _ in range(3)]
    claim(server, kept[0], 1)
    dump()
    # lost with the restore: providers on every shard, and a claim
    for _ in range(20):
        servers.make_provider(server.url, VCPU)
    claim(server, kept[1], 2)
    held = truth(database.url)
    assert all(answer == expected(held)[kind] for kind, answer in answers(server))
    restore()
    if reload_views:
        result = subprocess.run([servers.PLACEMENT_MANAGE, '--database-connection',
                                 database.url, 'db', 'reload-views'],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
    servers.make_provider(server.url, VCPU)
    held = truth(database.url)
    assert len(held) == 4
    wrong = [(kind, len(answer ^ expected(held)[kind]))
             for kind, answer in answers(server) if answer != expected(held)[kind]]
    assert not wrong, '%d of %d answers wrong (kind, items off): %s' % (
        len(wrong), 2 * READS + 4, wrong[:4])
