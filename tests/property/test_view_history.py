"""A worker's resource view against a database whose history changes.

Random interleavings of writes through the API (providers created and
deleted, inventories set, claims, trait and class names made), copies of
the database (a dump), restores of any copy taken so far, ``invalidate_all``
(``placement-manage db reload-views``) and refreshes of one view. After
every refresh the view must equal a view loaded fresh from the database,
whatever copy it was restored from and whatever was written since
(placement_server/db/changes.py says why). SQLite: a copy and a restore
are SQLite's online backup of the whole file, sequences included, as a
dump and a restore of every table are.
"""
import sqlite3
import uuid

import hypothesis
from hypothesis import strategies as st
import pytest

from placement_server import view as view_mod
from placement_server.db import api as db_api
from placement_server.db import changes
from placement_server.db import migration
from tests.functional import client as client_mod

SLOTS = 2

# Each operation, and whether the view is refreshed after it (a worker
# refreshes at its next request: sometimes after every write, sometimes
# after many, or after a restore and more writes).
operations = st.lists(st.tuples(st.one_of(
    st.tuples(st.just('create'), st.integers(1, 16)),
    st.tuples(st.just('inventory'), st.integers(0, 7), st.integers(1, 16)),
    st.tuples(st.just('claim'), st.integers(0, 7), st.integers(1, 2)),
    st.tuples(st.just('delete'), st.integers(0, 7)),
    st.tuples(st.just('trait'), st.integers(0, 7)),
    st.tuples(st.just('dump'), st.integers(0, SLOTS - 1)),
    st.tuples(st.just('restore'), st.integers(0, SLOTS - 1)),
    st.tuples(st.just('reload_views')),
), st.booleans()), max_size=25)


def state(view):
    """What a view holds, comparable (a class no provider holds any more
    may stay as an empty entry)."""
    return (view.rows, {rp: d[0] for rp, d in view.details.items()},
            {rc: of for rc, of in view.inventories.items() if of},
            {rc: of for rc, of in view.used.items() if of}, view.traits, view.aggregates,
            view.class_ids, view.trait_ids, view.sharing)


def copy(source, target):
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


@pytest.fixture(scope='module')
def world(tmp_path_factory):
    """(database, its file, a copy of it empty, a directory for dumps)."""
    where = tmp_path_factory.mktemp('view_history')
    path = str(where / 'placement.sqlite')
    database = db_api.Database('sqlite:///%s' % path)
    migration.sync(database)
    empty = str(where / 'empty.sqlite')
    copy(path, empty)
    yield database, path, empty, where
    database.dispose()


class Run:
    def __init__(self, database, path, where):
        self.database = database
        self.path = path
        self.where = where
        self.api = client_mod.Client(client_mod.make_app(database), version='1.39')
        self.view = view_mod.ResourceView()
        self.dumps = {}

    def providers(self):
        # from the database, not from a list (which the view answers)
        with self.database.reader() as conn:
            return sorted(u for u, in conn.exec_driver_sql(
                'SELECT uuid FROM resource_providers'))

    def generation(self, rp):
        return self.api.get('/resource_providers/%s' % rp).json['generation']

    def send(self, method, path, body=None):
        resp = self.api.request(method, path, body)
        assert resp.status_int < 500, resp.body   # refusals are fine, errors not
        return resp

    def pick(self, index):
        found = self.providers()
        return found[index % len(found)] if found else None

    def refresh(self):
        with self.database.reader() as conn:
            self.view.refresh(conn)
            fresh = view_mod.ResourceView()
            fresh.refresh(conn)
        assert state(self.view) == state(fresh)

    def do(self, op, *args):
        rp = self.pick(args[0]) if op in ('inventory', 'claim', 'delete', 'trait') else None
        if op == 'create':
            client_mod.make_provider(self.api, 'cn-%s' % uuid.uuid4(),
                                     {'VCPU': {'total': args[0]}})
        elif op == 'inventory' and rp:
            gen = self.generation(rp)
            self.send('PUT', '/resource_providers/%s/inventories' % rp, {
                'resource_provider_generation': gen,
                'inventories': {'VCPU': {'total': args[1]}}})
        elif op == 'claim' and rp:
            self.send('PUT', '/allocations/%s' % uuid.uuid4(), {
                'allocations': {rp: {'resources': {'VCPU': args[1]}}}, 'project_id': 'p',
                'user_id': 'u', 'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        elif op == 'delete' and rp:
            self.send('DELETE', '/resource_providers/%s' % rp)
        elif op == 'trait' and rp:
            name = 'CUSTOM_T%d' % args[0]
            self.send('PUT', '/traits/%s' % name, None)
            gen = self.generation(rp)
            self.send('PUT', '/resource_providers/%s/traits' % rp, {
                'resource_provider_generation': gen, 'traits': [name]})
        elif op == 'dump':
            target = str(self.where / ('dump-%d.sqlite' % args[0]))
            copy(self.path, target)
            self.dumps[args[0]] = target
        elif op == 'restore' and args[0] in self.dumps:
            copy(self.dumps[args[0]], self.path)
        elif op == 'reload_views':
            with self.database.writer() as conn:
                changes.invalidate_all(conn)


@hypothesis.settings(max_examples=60, deadline=None, database=None,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(ops=operations)
def test_the_view_is_the_databases_after_every_refresh(world, ops):
    database, path, empty, where = world
    copy(empty, path)
    run = Run(database, path, where)
    run.refresh()
    for op, then_refresh in ops:
        run.do(*op)
        if then_refresh:
            run.refresh()
    run.refresh()
