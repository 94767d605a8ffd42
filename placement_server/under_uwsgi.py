"""Served by uWSGI, as Kolla-Ansible and OpenStack-Helm serve placement.

Their inis load ``placement_server.wsgi_app:application`` in each worker
(``lazy-apps``), run Python threads (``enable-threads``) and stop
gracefully on SIGTERM (``hook-master-start = unix_signal:15
gracefully_kill_them_all``). What placement-server's master does for its
workers is done here by the workers themselves:

- metrics: several processes write their numbers under one
  ``PROMETHEUS_MULTIPROC_DIR``, made per uWSGI master unless the operator
  set one (it must be set before prometheus_client is imported:
  ``share_metrics`` runs first), and worker 1 serves ``/metrics`` on
  ``[api] metrics_port`` (their sum, and the capacity series from its own
  resource view, which is brought up to date from the database at each
  scrape, so that it is the same whichever process serves it);
- a worker that cannot load the application asks the master to stop
  (``stop``): uWSGI would otherwise respawn it forever.
"""
import logging
import os
import signal
import tempfile
import threading
import time
from typing import Any
from typing import NoReturn

LOG = logging.getLogger(__name__)

GRACEFUL_ON_TERM = b'unix_signal:15 gracefully_kill_them_all'
# A worker respawned as worker 1 takes the metrics port over: its
# predecessor's socket may still be closing.
_BIND_ATTEMPTS = 30


def server() -> Any:
    """The ``uwsgi`` module inside uWSGI's processes, else None."""
    try:
        import uwsgi  # only there
    except ImportError:
        return None
    return uwsgi


def _option(uwsgi: Any, name: str) -> bytes:
    value = uwsgi.opt.get(name, b'')
    return b' '.join(value) if isinstance(value, list) else bytes(value)


def process_key(pid: int) -> str:
    """The pid and start time (clock ticks since boot) of a process: a
    name no later process shares."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            started = f.read().rpartition(')')[2].split()[19]
    except (OSError, IndexError):
        started = '0'
    return '%d.%s' % (pid, started)


def share_metrics(uwsgi: Any) -> None:
    """Under several processes, one PROMETHEUS_MULTIPROC_DIR for all of
    them, named after the master (the operator's, if set)."""
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR') or uwsgi.numproc < 2:
        return
    master = uwsgi.masterpid() or os.getpid()
    path = os.path.join(tempfile.gettempdir(), 'placement-metrics.' + process_key(master))
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.environ['PROMETHEUS_MULTIPROC_DIR'] = path


def _metrics_host(uwsgi: Any, conf: Any) -> str:
    if conf.api.metrics_host:
        return str(conf.api.metrics_host)
    listen = _option(uwsgi, 'http-socket') or _option(uwsgi, 'http')
    host = listen.decode().rpartition(':')[0].strip('[]')
    return host or '0.0.0.0'


def serve_metrics(uwsgi: Any, conf: Any) -> None:
    """Worker 1 serves /metrics on [api] metrics_port, from a thread."""
    if not conf.api.enable_metrics or not conf.api.metrics_port or uwsgi.worker_id() != 1:
        return
    from placement_server import metrics
    host = _metrics_host(uwsgi, conf)

    def bind() -> None:
        for _ in range(_BIND_ATTEMPTS):
            try:
                metrics.serve(host, conf.api.metrics_port)
                return
            except OSError as e:
                error = e
            time.sleep(1)
        LOG.error('cannot serve metrics on %s:%d: %s', host, conf.api.metrics_port,
                  error.strerror)
    threading.Thread(target=bind, name='metrics-bind', daemon=True).start()


def stop(uwsgi: Any, status: int) -> NoReturn:
    """Stop uWSGI from a worker that cannot load the application: the
    master is asked to shut down (SIGTERM where the ini makes that
    graceful, SIGINT otherwise), and this worker leaves with its signals
    blocked, so the shutdown cannot interrupt it (a worker that raises
    SystemExit while loading dies; one interrupted stays, app-less)."""
    master = uwsgi.masterpid()
    if master and master != os.getpid():
        graceful = GRACEFUL_ON_TERM in _option(uwsgi, 'hook-master-start')
        signal.pthread_sigmask(signal.SIG_BLOCK, set(signal.Signals))
        os.kill(master, signal.SIGTERM if graceful else signal.SIGINT)
    raise SystemExit(status)
