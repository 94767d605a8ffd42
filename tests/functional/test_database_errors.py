"""What the database layer makes of database failures.

A deadlock (or Galera's certification failure, which MariaDB reports as
one) is replayed; a lost database is a 503 JSON error, never a 500.
"""
import threading
import time

from oslo_db import exception as db_exc
import pytest
import sqlalchemy as sa
import webob

from placement_server import deploy
from placement_server import errors
from placement_server import policy
from placement_server import retry
from placement_server.db import api as db_api
from placement_server.db import tables

ADMIN = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement 1.39'}
UNREACHABLE = {'postgresql': 'postgresql+psycopg2://nobody@127.0.0.1:1/placement',
               'mysql': 'mysql+pymysql://nobody@127.0.0.1:1/placement'}


@pytest.fixture(autouse=True)
def default_policy_afterwards():
    yield
    policy._ENFORCER = None


@pytest.mark.parametrize('backend', sorted(UNREACHABLE))
@pytest.mark.parametrize('method, path, body', [
    ('GET', '/resource_providers', None),
    ('POST', '/resource_providers', b'{"name": "cn1"}'),
    ('GET', '/allocation_candidates?resources=VCPU:1', None),
])
def test_an_unreachable_database_is_a_503_json_error(tmp_path, backend, method, path, body):
    conf_path = tmp_path / 'placement.conf'
    conf_path.write_text('[api]\nauth_strategy = noauth2\n')
    conf = deploy.load_conf(config_files=[str(conf_path)])
    app = deploy.init_application(conf, db_api.Database(UNREACHABLE[backend]))
    req = webob.Request.blank(path, method=method, headers=ADMIN)
    if body:
        req.body, req.content_type = body, 'application/json'
    resp = req.get_response(app)
    assert resp.status_int == 503, resp.body
    error = resp.json['errors'][0]
    assert error['status'] == 503
    assert error['code'] == errors.UNDEFINED
    assert 'database' in error['detail']


def _deadlock(db):
    """Two transactions taking two rows in opposite orders: the database
    breaks the cycle by failing one of them; returns what each raised."""
    rc = tables.resource_classes
    ids = [1, 2]
    both_hold_one = threading.Barrier(2)
    outcome = [None, None]

    def take(k):
        try:
            with db.writer() as conn:
                first, second = (ids if k == 0 else ids[::-1])
                conn.execute(rc.update().where(rc.c.id == first).values(updated_at=None))
                both_hold_one.wait(10)
                conn.execute(rc.update().where(rc.c.id == second).values(updated_at=None))
        except Exception as e:   # what the caller of writer() sees
            outcome[k] = e
    threads = [threading.Thread(target=take, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return outcome


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'])
def test_a_deadlock_reaches_the_retry_as_dbdeadlock(_databases, backend):
    db = _databases(backend).db
    outcome = _deadlock(db)
    failed = [e for e in outcome if e is not None]
    assert len(failed) == 1, outcome
    assert isinstance(failed[0], db_exc.DBDeadlock), repr(failed[0])
    assert retry.is_transient(failed[0])


def test_retry_replays_transient_errors_then_gives_503():
    calls = []

    @retry.replaying(attempts=3)
    def conflicted(outcomes):
        calls.append(1)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    locked = db_exc.DBError(sa.exc.OperationalError('BEGIN', {}, Exception(
        'database is locked')))
    assert conflicted([db_exc.DBDeadlock(), locked, 'done']) == 'done'
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(errors.ServiceUnavailable):
        conflicted([db_exc.DBDeadlock()] * 3)
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(db_exc.DBError):   # not a lost race: no replay
        conflicted([db_exc.DBError('syntax error'), 'never'])
    assert len(calls) == 1


def test_a_deadlock_hidden_by_a_failed_savepoint_rollback_is_replayed():
    # MariaDB/Galera abort the whole transaction inside a savepoint; the
    # savepoint's rollback then fails, raised while handling the deadlock.
    calls = []

    @retry.replaying(attempts=3)
    def create():
        calls.append(1)
        if len(calls) == 1:
            try:
                raise db_exc.DBDeadlock()
            except db_exc.DBDeadlock:
                raise db_exc.DBError('SAVEPOINT sa_savepoint_1 does not exist')
        return 'created'

    assert create() == 'created'
    assert len(calls) == 2


def _drop_pooled_connection(test_db, engine=None):
    """The database ends the session of the one connection the pool of
    ``engine`` (the readers', by default) holds, as a restart or a
    failover would."""
    engine = engine or test_db.db.read_engine
    engine.dispose()   # other tests' connections
    with engine.connect() as conn:
        if test_db.backend == 'postgresql':
            session = conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()
            kill = 'SELECT pg_terminate_backend(%d)' % session
            alive = 'SELECT count(*) FROM pg_stat_activity WHERE pid = %d' % session
        else:
            session = conn.exec_driver_sql('SELECT CONNECTION_ID()').scalar()
            kill = 'KILL %d' % session
            alive = ('SELECT count(*) FROM information_schema.processlist '
                     'WHERE id = %d' % session)
    with test_db._admin.connect() as admin:
        admin.exec_driver_sql(kill)
        deadline = time.monotonic() + 10
        while admin.exec_driver_sql(alive).scalar():   # the kill lands later
            assert time.monotonic() < deadline
            time.sleep(0.01)


def _read(db):
    with db.reader() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(tables.traits)).scalar()


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'])
def test_a_connection_dropped_while_idle_is_replaced_unseen(_databases, backend,
                                                           monkeypatch):
    test_db = _databases(backend)
    _drop_pooled_connection(test_db)
    monkeypatch.setattr(db_api, 'PING_AFTER_IDLE', 0)   # it has been idle long enough
    assert _read(test_db.db) > 0


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'])
def test_a_connection_dropped_just_after_use_is_one_503_then_recovers(_databases, backend):
    test_db = _databases(backend)
    _drop_pooled_connection(test_db)
    with pytest.raises(errors.ServiceUnavailable):
        _read(test_db.db)   # taken back at once: not pinged
    assert _read(test_db.db) > 0
    _drop_pooled_connection(test_db, test_db.db.engine)   # the writers'
    with pytest.raises(errors.ServiceUnavailable):
        _write(test_db.db)
    _write(test_db.db)


def _write(db):
    with db.writer() as conn:
        conn.execute(tables.traits.update().where(tables.traits.c.id < 0).values(name='x'))
