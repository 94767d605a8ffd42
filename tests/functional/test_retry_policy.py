"""One retry policy per request (``placement_server.retry``): a write that
lost a race runs again whole, in a new transaction, at most
``retry.ATTEMPTS`` times in all, whatever each attempt lost to; then the
client gets a 503 (the database's refusal) or the 409 (a generation race).
Transactions are counted as the app opens them."""
import contextlib
import io
import json
import uuid

from oslo_db import exception as db_exc
import pytest
import webob

from placement_server import retry
from placement_server.db import allocations as allocations_db
from placement_server.db import resource_classes as resource_classes_db
from placement_server.db import traits as traits_db
from tests.functional import client as client_mod

V = '1.39'


@pytest.fixture(autouse=True)
def no_pause(monkeypatch):
    monkeypatch.setattr(retry, 'RETRY_INTERVAL', 0.0)


@pytest.fixture
def transactions(database, monkeypatch):
    """The write transactions the app opens, counted."""
    opened = []
    real = database.writer

    @contextlib.contextmanager
    def writer():
        opened.append(1)
        with real() as conn:
            yield conn
    monkeypatch.setattr(database, 'writer', writer)
    return opened


def _app(database, conflict_retries=None):
    overrides = {}
    if conflict_retries is not None:
        overrides['placement', 'allocation_conflict_retry_count'] = conflict_retries
    return client_mod.make_app(database, client_mod.make_conf(overrides))


def _losing(monkeypatch, module, name, losses):
    """``module.name`` raising the next of ``losses`` (an exception class,
    or None to do its work) on each call, the last one for ever after."""
    real = getattr(module, name)
    calls = []

    def losing(*args, **kwargs):
        loss = losses[min(len(calls), len(losses) - 1)]
        calls.append(loss)
        if loss is allocations_db.ProviderGenerationConflict:
            raise loss('resource provider generation conflict')
        if loss is not None:
            raise loss()
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, losing)
    return calls


def _claim(api, rp, consumer):
    return api.put('/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': {'VCPU': 1}}}, 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'}, version=V)


def _allocations(api, consumer):
    return api.get('/allocations/%s' % consumer, version=V).json['allocations']


def test_a_write_refused_as_deadlocked_is_attempted_ATTEMPTS_times_then_503(
        database, transactions, monkeypatch):
    api = client_mod.Client(_app(database))
    rp = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    transactions.clear()
    _losing(monkeypatch, allocations_db, 'write', [db_exc.DBDeadlock])
    consumer = str(uuid.uuid4())
    resp = _claim(api, rp, consumer)
    assert resp.status_int == 503, resp.body
    assert resp.json['errors'][0]['detail'] == retry.GAVE_UP
    assert len(transactions) == retry.ATTEMPTS
    monkeypatch.undo()
    assert _allocations(api, consumer) == {}


def test_generation_races_and_deadlocks_share_one_bound(database, transactions, monkeypatch):
    # Before, the deadlock retry around the handler replayed the
    # allocation write's own replay loop: attempts multiplied (up to 100).
    api = client_mod.Client(_app(database))
    rp = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    transactions.clear()
    race = allocations_db.ProviderGenerationConflict
    calls = _losing(monkeypatch, allocations_db, 'write',
                    [race, db_exc.DBDeadlock] * retry.ATTEMPTS)
    resp = _claim(api, rp, str(uuid.uuid4()))
    assert len(transactions) == len(calls) == retry.ATTEMPTS
    assert resp.status_int == 503, resp.body   # the last attempt's refusal


@pytest.mark.parametrize('conflict_retries, attempts', [(None, retry.ATTEMPTS), (3, 3),
                                                        (12, 12)])
def test_generation_races_alone_end_at_the_configured_count_with_a_409(
        database, transactions, monkeypatch, conflict_retries, attempts):
    api = client_mod.Client(_app(database, conflict_retries))
    rp = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    transactions.clear()
    _losing(monkeypatch, allocations_db, 'write', [allocations_db.ProviderGenerationConflict])
    resp = _claim(api, rp, str(uuid.uuid4()))
    assert resp.status_int == 409, resp.body
    assert resp.json['errors'][0]['code'] == 'placement.concurrent_update'
    assert len(transactions) == attempts


def test_a_lost_race_then_a_won_one_writes_once(database, transactions, monkeypatch):
    api = client_mod.Client(_app(database))
    rp = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    transactions.clear()
    calls = _losing(monkeypatch, allocations_db, 'write',
                    [db_exc.DBDeadlock, allocations_db.ProviderGenerationConflict, None])
    consumer = str(uuid.uuid4())
    assert _claim(api, rp, consumer).status_int == 204
    assert len(transactions) == len(calls) == 3
    assert _allocations(api, consumer) == {rp: {'generation': 2, 'resources': {'VCPU': 1}}}


@pytest.mark.parametrize('module, name, method, path, body, status', [
    (traits_db, 'create', 'PUT', '/traits/CUSTOM_GOLD', None, 201),
    # (a write no retry covered before)
    (resource_classes_db, 'create', 'POST', '/resource_classes', {'name': 'CUSTOM_X'}, 201),
])
def test_every_write_is_under_the_policy(database, transactions, monkeypatch,
                                         module, name, method, path, body, status):
    api = client_mod.Client(_app(database))
    calls = _losing(monkeypatch, module, name, [db_exc.DBDeadlock, None])
    resp = api.request(method, path, body, version=V)
    assert resp.status_int == status, resp.body
    assert len(transactions) == len(calls) == 2


def test_a_read_is_not_replayed(database, monkeypatch):
    api = client_mod.Client(_app(database))
    calls = _losing(monkeypatch, traits_db, 'list_names', [db_exc.DBDeadlock, None])
    assert api.get('/traits', version=V).status_int == 500
    assert len(calls) == 1


class _ReadOnce(io.RawIOBase):
    """A request body a server hands in as a stream read once (no seek)."""

    def __init__(self, data):
        self._data = data

    def readable(self):
        return True

    def readinto(self, buffer):
        n = min(len(buffer), len(self._data))
        buffer[:n], self._data = self._data[:n], self._data[n:]
        return n


def test_a_replayed_request_reads_the_same_body(database, monkeypatch):
    app = _app(database)
    api = client_mod.Client(app)
    rp = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    _losing(monkeypatch, allocations_db, 'write', [db_exc.DBDeadlock, None])
    consumer = str(uuid.uuid4())
    data = json.dumps({'allocations': {rp: {'resources': {'VCPU': 3}}},
                       'consumer_generation': None, 'project_id': 'p', 'user_id': 'u',
                       'consumer_type': 'INSTANCE'}).encode()
    req = webob.Request.blank('/allocations/%s' % consumer, method='PUT', headers={
        'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement ' + V,
        'Content-Type': 'application/json', 'Content-Length': str(len(data))})
    req.environ['wsgi.input'] = _ReadOnce(data)
    req.environ.pop('webob.is_body_seekable', None)
    assert req.get_response(app).status_int == 204
    assert _allocations(api, consumer)[rp]['resources'] == {'VCPU': 3}
