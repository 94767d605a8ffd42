"""Catching up while idle (``placement_server.catch_up``), in one process
on every backend: after a write, the idle worker refreshes its view and
answers again what was asked since, so the next such request is answered
from what was kept, and that answer is the one a search from scratch
gives."""
import random

import pytest

from placement_server import candidates
from placement_server import catch_up
from placement_server import metrics
from placement_server import siblings
from placement_server import view as view_mod
from tests.functional import test_candidates_kept as kept

QUERY = kept.QUERIES[2]   # a nested request


@pytest.fixture
def watched(database, monkeypatch):
    """``database`` watched, as placement_server.deploy watches the served one."""
    monkeypatch.setattr(catch_up, '_watched', type(catch_up._watched)())
    monkeypatch.setattr(siblings, '_due', False)
    monkeypatch.setattr(database, 'after_write', None)
    catch_up.watch(database)
    return database


def _catch_ups():
    return metrics.CATCH_UPS._value.get()


def _view(database):
    view = view_mod.existing(database.read_engine)
    assert view is not None
    return view


def _cloud(api):
    cloud = kept.Cloud(api, random.Random(3))
    for _ in range(3):
        cloud.tree()
    return cloud


def test_a_write_read_since_is_answered_again_while_idle(api, watched, monkeypatch):
    cloud = _cloud(api)
    assert siblings.due()
    siblings.idle(lambda: True)
    first = kept._answer(api, QUERY)
    assert first['allocation_requests']
    cloud.claim()
    assert siblings.due()
    before, version = _catch_ups(), _view(watched).version
    built = kept._counting_answers(monkeypatch)
    siblings.idle(lambda: True)
    assert not siblings.due()
    assert _catch_ups() == before + 1
    assert _view(watched).version > version
    assert len(built) == 2          # the requests asked since (the claim's own too)
    built.clear()
    assert kept._answer(api, QUERY) == kept._from_scratch(watched, QUERY)
    assert len(built) == 1          # only the search from scratch: the API's was kept


def test_nothing_is_done_for_what_nobody_read(api, watched, monkeypatch):
    cloud = _cloud(api)
    kept._answer(api, QUERY)
    cloud.claim()
    siblings.idle(lambda: True)
    built = kept._counting_answers(monkeypatch)
    view = _view(watched)
    # Written again, but nothing read since the catch-up: not even the
    # change sequence is asked.
    assert api.put('/traits/CUSTOM_SILVER', version=kept.VERSION).status_int == 201
    assert siblings.due()
    before, version, position = _catch_ups(), view.version, view.position
    refreshed = []
    monkeypatch.setattr(view, 'refresh', lambda conn: refreshed.append(conn))
    siblings.idle(lambda: True)
    assert (refreshed, built, _catch_ups(), view.version, view.position) == (
        [], [], before, version, position)


def test_a_request_answered_unasked_is_not_answered_again(api, watched, monkeypatch):
    cloud = _cloud(api)
    kept._answer(api, QUERY)
    cloud.claim()
    siblings.idle(lambda: True)      # answered again, unasked
    kept._answer(api, kept.QUERIES[0])   # (the view is read: another request)
    cloud.claim()
    built = kept._counting_answers(monkeypatch)
    siblings.idle(lambda: True)
    assert len(built) == 2          # QUERIES[0] and the claim's request, not QUERY
    built.clear()
    assert kept._answer(api, QUERY) == kept._from_scratch(watched, QUERY)
    assert len(built) == 2          # QUERY built on request, and from scratch


def test_a_busy_worker_leaves_it_to_the_next_request(api, watched, monkeypatch):
    cloud = _cloud(api)
    kept._answer(api, QUERY)
    cloud.claim()
    version = _view(watched).version
    siblings.idle(lambda: False)
    assert not siblings.due()
    assert _view(watched).version == version
    built = kept._counting_answers(monkeypatch)
    assert kept._answer(api, QUERY) == kept._from_scratch(watched, QUERY)
    assert len(built) == 2


def test_a_failure_is_left_to_the_next_request(api, watched, monkeypatch, caplog):
    cloud = _cloud(api)
    kept._answer(api, QUERY)
    cloud.claim()

    def broken(*args):
        raise RuntimeError('the database went away')
    monkeypatch.setattr(candidates, '_find', broken)
    siblings.idle(lambda: True)
    assert 'catching up on the resource view failed: the database went away' in caplog.text
    monkeypatch.undo()
    assert kept._answer(api, QUERY) == kept._from_scratch(watched, QUERY)
