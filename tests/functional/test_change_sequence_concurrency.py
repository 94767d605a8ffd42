"""The change sequence under concurrent writers: a reader following it
never skips a committed change.

Writer threads, each on its own connections, make many small writes
(inventories, traits, aggregates, claims that move a consumer between
providers, providers created and deleted) on providers of their own and
on providers they share, while a reader follows the sequence as a
worker's resource view does: ``since(last)``, then reload the providers
it names (everything when it answers None).

What is checked (``Checker``), during the run and at the end:

- coverage: a write that had committed before a ``since`` call began is
  at or below the position the reader holds after that call;
- delivery: the call whose range (old position, new position] holds a
  write's number named every provider of that write (a reader that moved
  past a number without learning its providers skipped a change);
- at the end, the reader's record of every provider is what a full load
  reads.

Each writer learns its own (shard, number) inside its transaction
(``changes.record`` wrapped) and reports it once COMMIT returned.

The check is shown to catch the two ways of skipping a change the module
docstring of placement_server/db/changes.py argues against, on a
deterministic interleaving: the new position read from the counters
after the rows (a write committing in between is skipped), and numbers
handed out when the transaction first writes, as an auto-increment or a
sequence would, instead of under a lock held until COMMIT (a reader sees
the later number first and moves past the earlier one).

Only PostgreSQL and MariaDB: SQLite runs one writer at a time.
"""
import random
import threading
import time
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement_server import retry
from placement_server.db import aggregates
from placement_server.db import allocations
from placement_server.db import changes
from placement_server.db import inventories
from placement_server.db import providers
from placement_server.db import tables
from placement_server.db import traits
from placement_server.db import write as write_mod

WRITERS = 4
WRITES = 60        # per writer
SHARED = 3         # providers every writer writes to
OWN = 2            # providers of each writer's own
TRAITS = ['HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE', 'HW_CPU_X86_SSE2']
AGGS = ['a0000000-0000-4000-8000-00000000000%d' % i for i in range(3)]
RELOAD = 'everything'   # what a call that reloaded everything "named"
WAIT = 30               # seconds any bounded wait may take


@pytest.fixture
def database(server_database):
    return server_database


def inventory(total):
    return {'total': total, 'reserved': 0, 'min_unit': 1, 'max_unit': total,
            'step_size': 1, 'allocation_ratio': 1.0}


# What a view holds of a provider: enough that a missed change shows.

RP = tables.resource_providers
INV = tables.inventories
ALLOC = tables.allocations
RPT = tables.resource_provider_traits
RPA = tables.resource_provider_aggregates


def load(conn, ids=None):
    """{provider id: state} of the providers ``ids`` (all when None);
    ids that name no provider are left out."""
    def where(column):
        return sa.true() if ids is None else column.in_(sorted(ids))
    state = {row.id: [row.name, row.generation, row.parent_provider_id,
                      row.root_provider_id, set(), set(), set(), set()]
             for row in conn.execute(sa.select(RP).where(where(RP.c.id)))}
    parts = [
        (4, sa.select(INV.c.resource_provider_id, INV.c.resource_class_id, INV.c.total,
                      INV.c.reserved).where(where(INV.c.resource_provider_id))),
        (5, sa.select(ALLOC.c.resource_provider_id, ALLOC.c.consumer_id,
                      ALLOC.c.resource_class_id, ALLOC.c.used)
         .where(where(ALLOC.c.resource_provider_id))),
        (6, sa.select(RPT.c.resource_provider_id, RPT.c.trait_id)
         .where(where(RPT.c.resource_provider_id))),
        (7, sa.select(RPA.c.resource_provider_id, RPA.c.aggregate_id)
         .where(where(RPA.c.resource_provider_id))),
    ]
    for index, query in parts:
        for row in conn.execute(query):
            if row[0] in state:
                state[row[0]][index].add(tuple(row[1:]))
    return {i: tuple(frozenset(v) if isinstance(v, set) else v for v in s)
            for i, s in state.items()}


def numbers(position):
    """{shard: number} of a position (its marks without their tokens)."""
    return {shard: mark.seq for shard, mark in position.items()}


class Skipped(AssertionError):
    """A reader following the sequence missed a committed change."""


class Checker:
    """Committed writes and a reader's calls, and the two rules between
    them (see the module docstring)."""

    def __init__(self, start):
        self.start = numbers(start)   # the reader loaded everything up to here
        self.writes = []           # (shard, seq, ids), appended once committed
        self.calls = []            # (old, new, ids named or RELOAD)
        self.checked = 0           # writes[:checked] passed both rules

    def committed(self, shard, seq, ids):
        self.writes.append((shard, seq, frozenset(ids)))

    def call(self, old, new, named, committed_before):
        """Record a reader's call and check every write that had
        committed before it began (``writes[:committed_before]``)."""
        self.calls.append((numbers(old), numbers(new), named))
        for number in range(self.checked, committed_before):
            self._check(number, len(self.calls) - 1)
        self.checked = max(self.checked, committed_before)

    def check_all(self):
        for number in range(len(self.writes)):
            self._check(number, len(self.calls) - 1)

    def _check(self, number, upto):
        shard, seq, ids = self.writes[number]
        if seq <= self.start.get(shard, 0):
            return
        new = self.calls[upto][1]
        if seq > new.get(shard, 0):
            raise Skipped('write %s (shard %d, number %d) committed before call %d began '
                          'but the reader stands at %d' % (sorted(ids), shard, seq, upto,
                                                           new.get(shard, 0)))
        for k, (old, new, named) in enumerate(self.calls[:upto + 1]):
            if old.get(shard, 0) < seq <= new.get(shard, 0):
                if named is not RELOAD and not ids <= named:
                    raise Skipped('call %d moved shard %d from %d to %d but did not name '
                                  'providers %s of write %d'
                                  % (k, shard, old.get(shard, 0), new.get(shard, 0),
                                     sorted(ids - named), seq))
                return
        raise Skipped('no call covered write %d of shard %d' % (seq, shard))


class Follower:
    """A reader following the sequence as a worker's view does."""

    def __init__(self, database, checker=None, since=None):
        self.database = database
        self.since = since or (lambda conn, last: changes.since(conn, last))
        with database.reader() as conn:
            self.last = changes.position(conn)
            self.record = load(conn)
        self.checker = checker or Checker(self.last)
        self.reloads = 0

    def step(self):
        """One ``since`` and what the view does with its answer; the answer."""
        committed_before = len(self.checker.writes)
        with self.database.reader() as conn:
            result = self.since(conn, self.last)
            if result is None:
                new, named = changes.position(conn), RELOAD
                self.record = load(conn)
                self.reloads += 1
            else:
                new, named = result
                ids = named - {changes.NAMES}
                fresh = load(conn, ids)
                for i in ids:
                    if i in fresh:
                        self.record[i] = fresh[i]
                    else:
                        self.record.pop(i, None)
        self.checker.call(self.last, new, named, committed_before)
        self.last = new
        return result


# Writers


_captured = threading.local()


@pytest.fixture
def capture(monkeypatch):
    """Wrap ``changes.record``: each write learns its (shard, number, ids)
    in its transaction (the counter row is its own until COMMIT)."""
    real = changes.record

    def record(conn, commit=False):
        ids = set(write_mod.Write.of(conn).changed)
        real(conn)
        if ids:
            shard = min(ids) % changes.SHARDS
            seq = conn.exec_driver_sql('SELECT seq FROM resource_view_counters '
                                       'WHERE shard = %d' % shard).scalar_one()
            _captured.pending = (shard, seq, ids)
        if commit:   # the writer folds COMMIT into the record (PostgreSQL, MySQL)
            conn.exec_driver_sql('COMMIT')
    monkeypatch.setattr(changes, 'record', record)


def commit(database, checker, work):
    """Run ``work(conn)`` in a write transaction, replayed while it loses a
    race; report what it recorded to ``checker`` once COMMIT returned."""
    for _ in range(50):
        _captured.pending = None
        try:
            with database.writer() as conn:
                result = work(conn)
        except providers.ConcurrentUpdate:
            continue
        except traits.Unchanged:
            return None   # rolled back: nothing to record
        except Exception as e:
            if retry.is_transient(e):
                continue
            raise
        if _captured.pending is not None and checker is not None:
            checker.committed(*_captured.pending)
        return result
    raise AssertionError('a write lost 50 races in a row')


def new_provider(database, checker, name, inventories_=None):
    uuid = str(uuidlib.uuid4())

    def work(conn):
        providers.create(conn, uuid, name)
        if inventories_:
            inventories.replace_inventories(conn, providers.get(conn, uuid), inventories_)
    commit(database, checker, work)
    return uuid


class Writer(threading.Thread):
    """Small writes on its own providers and shared ones, chosen by a
    seeded random generator (the interleaving is the run's own)."""

    def __init__(self, database, checker, number, shared, start_line):
        super().__init__(name='writer-%d' % number)
        self.database, self.checker = database, checker
        self.rng = random.Random(number)
        self.shared = shared
        self.own = [new_provider(database, checker, 'w%d-%d' % (number, i),
                                 {'VCPU': inventory(100)}) for i in range(OWN)]
        self.consumer = str(uuidlib.uuid4())
        self.temporary = []
        self.start_line = start_line
        self.error = None

    def run(self):
        try:
            self.start_line.wait(WAIT)
            for _ in range(WRITES):
                self.one()
        except BaseException as e:   # reported by the test
            self.error = e

    def one(self):
        rng = self.rng
        rp = rng.choice(self.own + self.shared)
        op = rng.choice(['inventory', 'traits', 'aggregates', 'aggregates_1_19', 'move',
                         'move', 'two', 'leave', 'create', 'delete'])
        if op == 'inventory':
            total = rng.randint(50, 100)
            commit(self.database, self.checker, lambda conn: inventories.replace_inventories(
                conn, providers.get(conn, rp, for_update=True), {'VCPU': inventory(total)}))
        elif op == 'traits':
            names = rng.sample(TRAITS, rng.randint(0, 2))
            commit(self.database, self.checker, lambda conn: traits.set_for_provider(
                conn, rp, names, providers.get(conn, rp, for_update=True)['generation']))
        elif op == 'aggregates':
            aggs = rng.sample(AGGS, rng.randint(0, 2))
            commit(self.database, self.checker,
                   lambda conn: aggregates.set_for_provider(conn, rp, aggs))
        elif op == 'aggregates_1_19':
            aggs = rng.sample(AGGS, rng.randint(0, 2))
            commit(self.database, self.checker, lambda conn: aggregates.set_for_provider(
                conn, rp, aggs, providers.get(conn, rp, for_update=True)['generation']))
        elif op in ('move', 'two', 'leave'):
            # the consumer moves to rp (and another provider), or leaves
            # everything: the providers it was on change too
            wanted = {} if op == 'leave' else {rp: {'VCPU': 1}}
            if op == 'two':
                wanted[rng.choice([p for p in self.own + self.shared if p != rp])] = {'VCPU': 1}
            commit(self.database, self.checker, lambda conn: allocations.write(conn, [
                allocations.ConsumerAllocations(self.consumer, wanted, 'p', 'u')]))
        elif op == 'create' or not self.temporary:
            parent = rng.choice([None, rp])
            uuid = str(uuidlib.uuid4())
            commit(self.database, self.checker, lambda conn: providers.create(
                conn, uuid, 'tmp-%s' % uuid, parent))
            self.temporary.append(uuid)
        else:
            uuid = self.temporary.pop(rng.randrange(len(self.temporary)))
            commit(self.database, self.checker, lambda conn: providers.delete(conn, uuid))


def run_writers_and_follow(database, force_reloads=False):
    """The writers against one follower; returns the follower, checked."""
    shared = [new_provider(database, None, 'shared-%d' % i, {'VCPU': inventory(100)})
              for i in range(SHARED)]
    follower = Follower(database)
    checker = follower.checker
    start_line = threading.Event()
    writers = [Writer(database, checker, i, shared, start_line) for i in range(WRITERS)]
    for writer in writers:
        writer.start()
    start_line.set()
    deadline = time.monotonic() + 120
    steps = forced = 0
    try:
        while any(w.is_alive() for w in writers):
            assert time.monotonic() < deadline, 'the writers never finished'
            if force_reloads and steps % 10 == 9:
                forced += wait_until_two_writes_in_one_shard(follower, writers)
            else:
                follower.step()
            steps += 1
    finally:
        for writer in writers:
            writer.join(WAIT)
    for writer in writers:
        if writer.error is not None:
            raise writer.error
    # quiet now: one more call covers everything, and the record is whole
    follower.step()
    checker.check_all()
    # most writes change something (some leave a set as it was)
    assert len(checker.writes) >= WRITERS * WRITES // 2
    with database.reader() as conn:
        assert follower.record == load(conn)
    assert steps > 10, 'the follower hardly ran beside the writers'
    return follower, forced


def wait_until_two_writes_in_one_shard(follower, writers):
    """Wait (bounded) until two writes of one shard committed past the
    follower's position; with KEEP = 1 its next call must then reload.
    1 if that happened, 0 if the writers finished first."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        ahead = {}
        for shard, seq, _ in list(follower.checker.writes):
            if seq > numbers(follower.last).get(shard, 0):
                ahead[shard] = ahead.get(shard, 0) + 1
        if any(n >= 2 for n in ahead.values()):
            assert follower.step() is None, 'two writes past a reader, one row kept: reload'
            return 1
        if not any(w.is_alive() for w in writers):
            break
        time.sleep(0.001)
    follower.step()
    return 0


def test_a_follower_never_skips_a_committed_write(database, capture):
    follower, _ = run_writers_and_follow(database)
    # the follower followed: it never had to reload
    assert follower.reloads == 0


def test_a_follower_behind_the_pruning_reloads_and_skips_nothing(
        database, capture, monkeypatch):
    monkeypatch.setattr(changes, 'KEEP', 1)
    monkeypatch.setattr(changes, 'prune_due', lambda: True)
    follower, forced = run_writers_and_follow(database, force_reloads=True)
    assert forced >= 1
    assert follower.reloads >= forced


# The check catches a skipped change


def _two_providers(database):
    return [new_provider(database, None, 'cn%d' % i, {'VCPU': inventory(8)}) for i in range(2)]


def _set_total(database, checker, uuid, total):
    return lambda: commit(database, checker, lambda conn: inventories.replace_inventories(
        conn, providers.get(conn, uuid, for_update=True), {'VCPU': inventory(total)}))


@pytest.mark.parametrize('broken', [False, True])
def test_the_check_catches_a_position_read_after_the_rows(database, capture, broken):
    """A ``since`` that takes its new position from the counters in a
    statement of its own, after reading the rows: a write committing in
    between is never named."""
    rp, _ = _two_providers(database)
    follower = Follower(database)
    write = _set_total(database, follower.checker, rp, 16)

    def since(conn, last):
        rows = changes.since(conn, last)
        write()   # commits between the two statements
        if broken:
            return changes.position(conn), rows[1]
        return rows
    follower.since = since
    if broken:
        follower.step()
        with pytest.raises(Skipped, match='did not name'):
            follower.step()
    else:
        follower.step()
        follower.since = changes.since
        follower.step()
        follower.checker.check_all()
        with database.reader() as conn:
            assert follower.record == load(conn)


@pytest.mark.parametrize('broken', [False, True])
def test_the_check_catches_numbers_taken_before_commit(database, capture, monkeypatch, broken):
    """Numbers handed out when a transaction first writes and not held to
    its COMMIT (an auto-increment, a sequence): the later number commits
    first, the reader moves past the earlier one, which commits after."""
    p, q = _two_providers(database)
    follower = Follower(database)
    checker = follower.checker
    if broken:
        real_note = changes.note

        def note(conn, ids):
            if 'early' not in conn.info:
                # taken at once, on its own connection: nothing holds it
                with database.engine.connect() as other:
                    other.exec_driver_sql('UPDATE resource_view_counters SET seq = seq + 1 '
                                          'WHERE shard = 0')
                    conn.info['early'] = other.exec_driver_sql(
                        'SELECT seq FROM resource_view_counters WHERE shard = 0').scalar_one()
                    other.commit()
            real_note(conn, ids)

        def record(conn, commit=False):
            ids, seq = write_mod.Write.of(conn).take_notes()[0], conn.info.pop('early', None)
            if ids:
                conn.exec_driver_sql(
                    'INSERT INTO resource_view_changes (shard, seq, provider_id) VALUES %s'
                    % ','.join('(0, %d, %d)' % (seq, i) for i in sorted(ids)))
                _captured.pending = (0, seq, ids)
            if commit:
                conn.exec_driver_sql('COMMIT')
        monkeypatch.setattr(changes, 'note', note)
        monkeypatch.setattr(changes, 'record', record)
    noted, go_on = threading.Event(), threading.Event()
    failure = []

    def slow(conn):
        row = providers.get(conn, p, for_update=True)
        inventories.replace_inventories(conn, row, {'VCPU': inventory(32)})
        noted.set()
        assert go_on.wait(WAIT)

    def first():
        try:
            commit(database, checker, slow)
        except BaseException as e:
            failure.append(e)
    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert noted.wait(WAIT)
        _set_total(database, checker, q, 24)()   # the second write commits first
        follower.step()
    finally:
        go_on.set()
        thread.join(WAIT)
    assert not failure, failure
    if broken:
        with pytest.raises(Skipped, match='did not name'):
            follower.step()
    else:
        follower.step()
        checker.check_all()
        with database.reader() as conn:
            assert follower.record == load(conn)
