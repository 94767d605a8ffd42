"""What the workers of one server tell each other: that a write committed.

Each worker of placement-server's event loop has an inbox, a unix datagram
socket in a directory named after the master; ``announce`` sends one byte
to every other inbox there, and notes the write for this worker too. The
loop, when it has nothing else to do after a write (``due``), calls what
the application registered with ``when_idle`` (``placement_server.catch_up``).

Only the standard library here: the worker imports this module, and
benchmarks run other servers' applications under that worker.
"""
import atexit
from collections.abc import Callable
import contextlib
import logging
import os
import socket
import tempfile
import time

from placement_server import under_uwsgi

LOG = logging.getLogger(__name__)

# Called with ``still_idle`` by an idle loop after a write
IdleWork = Callable[[Callable[[], bool]], None]

_inbox: socket.socket | None = None
_due = False
_idle_work: list[IdleWork] = []
# The siblings' inboxes as last listed, with the directory's modification
# time then: listed again only when a worker came or went, one stat per
# write rather than a listing. (A time stamp is coarse, a few ms: within a
# second of a change the directory is listed at each write.)
_siblings: tuple[list[str], int] = ([], -1)
_SETTLED_NS = 1_000_000_000


def when_idle(work: IdleWork) -> None:
    """Have ``work(still_idle)`` done by an idle loop after each write."""
    if work not in _idle_work:
        _idle_work.append(work)


def _directory(master: int) -> str:
    return os.path.join(tempfile.gettempdir(),
                        'placement-workers.' + under_uwsgi.process_key(master))


def listen(master: int) -> socket.socket | None:
    """This worker's inbox among ``master``'s workers (non-blocking; the
    event loop calls ``heard`` when it is readable), or None when it
    cannot have one: it then hears nothing, and serves as before."""
    global _inbox
    directory = _directory(master)
    path = os.path.join(directory, str(os.getpid()))
    inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)   # (a pid used again)
        inbox.bind(path)      # (a path over 107 bytes is refused)
    except OSError as e:
        inbox.close()
        LOG.warning('workers will not tell each other of writes: %s: %s', path, e)
        return None
    inbox.setblocking(False)
    atexit.register(_leave, path)
    _inbox = inbox
    return inbox


def _leave(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
        os.rmdir(os.path.dirname(path))   # (the last one out)


def announce() -> None:
    """A write of this process committed: due here, and told to the
    siblings. A sibling whose inbox is full has been told already."""
    global _due, _siblings
    _due = True
    if _inbox is None:
        return
    own = _inbox.getsockname()
    try:
        changed = os.stat(os.path.dirname(own)).st_mtime_ns
    except OSError:
        return
    paths, listed = _siblings
    if changed != listed:
        paths = _listed(own)
        _siblings = (paths, changed if time.time_ns() - changed > _SETTLED_NS else -1)
    for path in paths:
        try:
            _inbox.sendto(b'.', path)
        except (BlockingIOError, InterruptedError):
            pass
        except (ConnectionRefusedError, FileNotFoundError):
            with contextlib.suppress(OSError):
                os.unlink(path)   # a worker that is gone
        except OSError as e:
            LOG.debug('could not tell worker %s of a write: %s', path, e)


def _listed(own: str) -> list[str]:
    """The other inboxes in ``own``'s directory."""
    directory = os.path.dirname(own)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [path for path in (os.path.join(directory, name) for name in names)
            if path != own]


def heard(inbox: socket.socket) -> None:
    """The inbox is readable: a sibling wrote."""
    global _due
    with contextlib.suppress(OSError):
        while inbox.recv(64):
            pass
    _due = True


def due() -> bool:
    """Whether a write was committed or heard of since the last ``idle``."""
    return _due


def idle(still_idle: Callable[[], bool]) -> None:
    """The loop is idle after a write: the registered work, while
    ``still_idle()``. Never raises: what fails here, a request does again."""
    global _due
    _due = False
    for work in _idle_work:
        try:
            work(still_idle)
        except Exception as e:
            LOG.warning('work while idle failed: %s', e)
