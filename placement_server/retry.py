"""One retry policy per request: a write that lost a race is run again whole.

The dispatcher (``wsgi.Dispatcher``) runs every handler through ``run``.
A write request (any method but GET, HEAD and OPTIONS) that lost a race
to another writer is run again from its start, each attempt in a fresh
transaction that sees what the winner committed. It lost a race when:

- the database refused its transaction as conflicting (``is_transient``):
  a deadlock or lock wait timeout and Galera's certification failure
  (oslo.db's ``DBDeadlock``), PostgreSQL's serialization failure,
  SQLite's 'database is locked';
- a provider or consumer it writes changed under it, where the client
  named no generation it must answer for (an allocation write: its
  providers' generations, a consumer created meanwhile): the write raises
  ``Replay`` (``db.allocations.write_or_replay``).

One bound counts every attempt of a request, whatever it lost to:
``ATTEMPTS``, or ``[placement] allocation_conflict_retry_count`` when that
is larger; generation races end it after that many attempts lost to them.
Then the client gets the last refusal: a 503 for the database's, the 409
of a generation race.

A handler is run again from its start, so an attempt must leave nothing
another attempt cannot redo. The body is read through webob
(``Request.body``, ``util.extract_json``), which keeps it: every attempt
reads the same bytes, whatever stream the server handed in.
"""
from collections.abc import Callable
import functools
import logging
import random
import time
from typing import ParamSpec
from typing import TypeVar

from oslo_db import exception as db_exc
import sqlalchemy as sa

from placement_server import errors
from placement_server import util

LOG = logging.getLogger(__name__)

T = TypeVar('T')
P = ParamSpec('P')

# Attempts of one request, whatever each lost to.
ATTEMPTS = 10

# How long a request waits before it is run again after the database
# refused it; the wait doubles (drawn at random below it after a
# deadlock, so two losers do not meet again) up to the maximum. Short:
# the other writer has committed already. A lost generation race is run
# again at once: the winner has committed.
RETRY_INTERVAL = 0.01
MAX_RETRY_INTERVAL = 0.5

READS = frozenset(('GET', 'HEAD', 'OPTIONS'))

GAVE_UP = ('The database kept refusing the write as conflicting with '
           'concurrent writes; try again.')

# Lost races oslo.db leaves as a plain DBError.
_ALSO_TRANSIENT = (
    'could not serialize access',   # PostgreSQL 40001
    'database is locked',           # SQLite
)


class Replay(Exception):
    """The write lost a generation race the client had no part in: run
    the request again. ``conflict`` is the answer when no attempt is left."""

    def __init__(self, conflict: errors.PlacementError) -> None:
        super().__init__(conflict.message)
        self.conflict = conflict


def is_transient(error: BaseException | None) -> bool:
    """Another writer got in the way: running the transaction again may work.

    The conflict may hide behind the error it caused: when MariaDB (or
    Galera, for a write replicated from another node) aborts a
    transaction inside a savepoint, the savepoint's rollback then fails
    with "SAVEPOINT ... does not exist", raised while handling the
    deadlock. So the errors this one was raised from count too.
    """
    for _ in range(5):
        if error is None:
            return False
        if isinstance(error, db_exc.DBDeadlock):
            return True
        if isinstance(error, (db_exc.DBError, sa.exc.DBAPIError)):
            text = str(getattr(error, 'inner_exception', None) or error).lower()
            if any(t in text for t in _ALSO_TRANSIENT):
                return True
        error = error.__cause__ or error.__context__
    return False


def replayed(call: Callable[[], T], attempts: int = ATTEMPTS,
             generation_attempts: int | None = None) -> T:
    """``call()``, made again while it loses races (see the module's
    docstring), at most ``attempts`` times in all and ``generation_attempts``
    times lost to generation races (``Replay``)."""
    if generation_attempts is None:
        generation_attempts = attempts
    pause = RETRY_INTERVAL
    next_pause = RETRY_INTERVAL
    lost_generations = 0
    attempt = 0
    while True:
        attempt += 1
        try:
            return call()
        except Replay as replay:
            lost_generations += 1
            if attempt >= attempts or lost_generations >= generation_attempts:
                LOG.warning('a write lost %d generation races (%d attempts in all)',
                            lost_generations, attempt)
                raise replay.conflict
            LOG.debug('a generation moved under the write, running it again: %s',
                      replay.conflict.message)
        except Exception as e:
            if not is_transient(e):
                raise
            if attempt >= attempts:
                LOG.warning('the database refused a write %d times as conflicting',
                            attempt, exc_info=True)
                if isinstance(e, (db_exc.DBError, sa.exc.DBAPIError)):
                    raise errors.ServiceUnavailable(GAVE_UP) from e
                raise
            LOG.debug('the database refused the write as conflicting, running it '
                      'again: %s', e)
            time.sleep(pause)
            next_pause *= 2
            pause = min(random.uniform(0, next_pause) if isinstance(e, db_exc.DBDeadlock)
                        else next_pause, MAX_RETRY_INTERVAL)


def run(req: util.Request, handle: Callable[[], T]) -> T:
    """``handle()``, the handler of ``req``, under the request's policy:
    a read once, a write replayed (``replayed``)."""
    if req.method in READS:
        return handle()
    conflicts = req.conf.placement.allocation_conflict_retry_count
    return replayed(handle, max(ATTEMPTS, conflicts), conflicts)


def replaying(attempts: int = ATTEMPTS) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """The same policy for a write made outside a request (seeding the
    standard names), as a decorator: the function run again when the
    database refuses it as conflicting, a 503 error after ``attempts``."""
    def decorate(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            return replayed(lambda: fn(*args, **kwargs), attempts)
        return wrapper
    return decorate
