"""Catching up while idle: a worker brings its resource view up to date
between requests rather than at the start of the next one.

Every read first asks the change sequence what changed (``view.refresh``).
After a write, each worker's first read also reloads the changed
providers and searches their trees again, on that request's time. A
worker that committed a write, or that a sibling says committed one
(``placement_server.siblings``), does that work instead when its event
loop has nothing to do (``run``): it refreshes the view and answers again
the candidates requests asked since the change before
(``candidates.answer_again``), so that the next of them pays the change
sequence's round trip alone.

Only a view read since its last catch-up, and only requests asked since
their last answer, are worked on: writes that nobody reads cost a
datagram each. Nothing depends on it for being right: every request still
refreshes the view first, and a worker that hears nothing (another host's
writes, a server without that loop) catches up on its next request.
"""
from collections.abc import Callable
import logging
import weakref

from placement_server import candidates
from placement_server import metrics
from placement_server import siblings
from placement_server import view as view_mod
from placement_server.db import api as db_api

LOG = logging.getLogger(__name__)

_watched: 'weakref.WeakSet[db_api.Database]' = weakref.WeakSet()


def watch(db: db_api.Database) -> None:
    """Announce ``db``'s writes, and catch up on its view while idle."""
    _watched.add(db)
    db.after_write = siblings.announce
    siblings.when_idle(_run_all)


def _run_all(still_idle: Callable[[], bool]) -> None:
    for db in list(_watched):
        run(db, still_idle)


def run(db: db_api.Database, still_idle: Callable[[], bool]) -> None:
    """Catches up on ``db``'s view, if it was read since its last
    catch-up, while ``still_idle()``. Never raises: what fails here, the
    next request does again."""
    view = view_mod.existing(db.read_engine)
    if view is None or not view.read or not still_idle():
        return
    try:
        with db.reader() as conn, view.lock:
            before = view.version
            view.refresh(conn)
            view.read = False
        metrics.CATCH_UPS.inc()
        if view.version != before:
            candidates.answer_again(view, before, still_idle)
    except Exception as e:
        LOG.warning('catching up on the resource view failed: %s', e)
