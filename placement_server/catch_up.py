"""Catching up while idle: a worker brings its resource view up to date
between requests rather than at the start of the next one.

Every read first asks the change sequence what changed (``view.refresh``).
After a write, each worker's first read also reloads the changed
providers and searches their trees again, on that request's time. A
worker that committed a write, or that a sibling says committed one
(``announce``: a datagram to each worker of the same server, through unix
sockets in a directory named after the master), does that work instead
when its event loop has nothing to do (``run``): it refreshes the view
and answers again the candidates requests asked since the change before
(``candidates.catch_up``), so that the next of them pays the change
sequence's round trip alone.

Only a view read since its last catch-up, and only requests asked since
their last answer, are worked on: writes that nobody reads cost a
datagram each. Nothing depends on it for being right: every request still
refreshes the view first, and a worker that hears nothing (another host's
writes, a server without this loop) catches up on its next request.
"""
import atexit
from collections.abc import Callable
import contextlib
import logging
import os
import socket
import tempfile
import weakref

from placement_server import candidates
from placement_server import metrics
from placement_server import under_uwsgi
from placement_server import view as view_mod
from placement_server.db import api as db_api

LOG = logging.getLogger(__name__)

_watched: 'weakref.WeakSet[db_api.Database]' = weakref.WeakSet()
_inbox: socket.socket | None = None
_due = False


def watch(db: db_api.Database) -> None:
    """Catch up on ``db``'s view, and announce its writes."""
    _watched.add(db)
    db.after_write = announce


def _directory(master: int) -> str:
    return os.path.join(tempfile.gettempdir(),
                        'placement-workers.' + under_uwsgi.process_key(master))


def listen(master: int) -> socket.socket:
    """This worker's inbox among ``master``'s workers (non-blocking; the
    event loop calls ``heard`` when it is readable)."""
    global _inbox
    directory = _directory(master)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = os.path.join(directory, str(os.getpid()))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)   # (a pid used again)
    inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    inbox.setblocking(False)
    inbox.bind(path)
    atexit.register(_leave, path)
    _inbox = inbox
    return inbox


def _leave(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
        os.rmdir(os.path.dirname(path))   # (the last one out)


def announce() -> None:
    """A write of this process committed: catch up here, and tell the
    siblings. A sibling whose inbox is full has been told already."""
    global _due
    _due = True
    if _inbox is None:
        return
    own = _inbox.getsockname()
    directory = os.path.dirname(own)
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        path = os.path.join(directory, name)
        if path == own:
            continue
        try:
            _inbox.sendto(b'.', path)
        except (BlockingIOError, InterruptedError):
            pass
        except (ConnectionRefusedError, FileNotFoundError):
            with contextlib.suppress(OSError):
                os.unlink(path)   # a worker that is gone
        except OSError as e:
            LOG.debug('could not tell worker %s of a write: %s', name, e)


def heard(inbox: socket.socket) -> None:
    """The inbox is readable: a sibling wrote."""
    global _due
    with contextlib.suppress(OSError):
        while inbox.recv(64):
            pass
    _due = True


def due() -> bool:
    """Whether a write was committed or heard of since the last ``run``."""
    return _due


def run(still_idle: Callable[[], bool]) -> None:
    """Catches up, while ``still_idle()``, on every watched database's view
    read since its last catch-up. Never raises: what fails here, the next
    request does again."""
    global _due
    _due = False
    for db in list(_watched):
        view = view_mod.existing(db.read_engine)
        if view is None or not view.read or not still_idle():
            continue
        try:
            with db.reader() as conn, view.lock:
                before = view.version
                view.refresh(conn)
                view.read = False
            metrics.CATCH_UPS.inc()
            if view.version != before:
                candidates.catch_up(view, before, still_idle)
        except Exception as e:
            LOG.warning('catching up on the resource view failed: %s', e)
