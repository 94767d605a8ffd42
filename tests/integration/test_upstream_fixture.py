"""The upstream placement fixture: a real upstream server we can talk to."""
import os
import uuid

import pytest
import requests
import sqlalchemy as sa

from tests import databases
from tests import upstream

pytestmark = pytest.mark.integration

ADMIN = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}


def _create_provider(base, name):
    resp = requests.post(base + '/resource_providers', json={'name': name},
                         headers=ADMIN, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()['uuid']


def _provider_names(base):
    resp = requests.get(base + '/resource_providers', headers=ADMIN, timeout=10)
    assert resp.status_code == 200, resp.text
    return sorted(rp['name'] for rp in resp.json()['resource_providers'])


def test_root_answers_with_upstream_version_range(upstream_placement):
    resp = requests.get(upstream_placement + '/', timeout=10)
    assert resp.status_code == 200
    version = resp.json()['versions'][0]
    assert (version['min_version'], version['max_version']) == ('1.0', '1.39')


def test_noauth2_without_token_is_401(upstream_placement):
    resp = requests.get(upstream_placement + '/resource_providers', timeout=10)
    assert resp.status_code == 401


def test_starts_empty_and_wipe_removes_what_a_test_wrote(upstream_placement, _upstream_server):
    assert _provider_names(upstream_placement) == []
    rp = _create_provider(upstream_placement, 'cn1')
    resp = requests.put(
        upstream_placement + '/resource_providers/%s/inventories' % rp,
        json={'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8}}},
        headers=ADMIN, timeout=10)
    assert resp.status_code == 200, resp.text
    assert _provider_names(upstream_placement) == ['cn1']
    upstream.wipe(_upstream_server.db_url)
    assert _provider_names(upstream_placement) == []


def test_serves_postgresql_with_two_workers_and_stops(tmp_path):
    admin = sa.engine.make_url(databases.ADMIN_URLS['postgresql'])
    engine = sa.create_engine(admin, isolation_level='AUTOCOMMIT')
    name = 'upstream_test_%s' % uuid.uuid4().hex[:10]
    with engine.connect() as conn:
        conn.exec_driver_sql('CREATE DATABASE %s' % name)
    try:
        url = admin.set(database=name).render_as_string(hide_password=False)
        server = upstream.UpstreamPlacement(url, str(tmp_path), workers=2)
        with server:
            _create_provider(server.url, 'pg-cn')
            assert _provider_names(server.url) == ['pg-cn']
            proc = server.proc
        assert proc.poll() is not None
        with pytest.raises(requests.ConnectionError):
            requests.get(server.url + '/', timeout=5)
    finally:
        with engine.connect() as conn:
            conn.exec_driver_sql('DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
        engine.dispose()


def test_unreachable_database_fails_start_with_the_reason(tmp_path):
    missing = os.path.join(str(tmp_path), 'no', 'such', 'dir', 'p.sqlite')
    server = upstream.UpstreamPlacement('sqlite:///%s' % missing, str(tmp_path))
    with pytest.raises(RuntimeError, match='db sync failed'):
        server.start()
    assert server.proc is None
