"""placement-server: the placement API under gunicorn.

The master process checks the configuration and the database (and
upgrades the schema with --sync-db) before forking workers, so a mistake
is one line and exit status 1, not a crash loop. Each worker then opens
its own database pool.

Each worker's event loop reads every request whole before the application
runs it (placement_server.cmd.gunicorn_worker): a connection waiting for
its client (slow, stalled, or idle between keep-alive requests) holds
nothing but a buffer, only until its read timeout, so such clients cannot
stop the others being served. By default (``--threads 1``) the loop runs
the application itself, one request at a time per worker, and sends each
answer as the client takes it; ``--threads N`` runs up to N at once in a
thread pool instead. SIGTERM (or SIGINT) stops gracefully: requests in
flight finish, then the master exits 0.

gunicorn's own messages (workers booting, timing out, killed) go through
oslo.log like the service's; the master logs the version and every
option's effective value at start, and serves /metrics, summed over the
workers, on its own port (``[api] metrics_port``).
"""
import argparse
import logging
import os
import shutil
import socket
import sys
import tempfile
from typing import TYPE_CHECKING
from typing import NoReturn
from wsgiref import simple_server
from wsgiref.types import WSGIApplication

from gunicorn import glogging
from oslo_config import cfg

from placement_server import auth
from placement_server import cmd
from placement_server.db import migration

if TYPE_CHECKING:   # gunicorn ships no types: these name what it passes
    from gunicorn import arbiter
    from gunicorn import config as gunicorn_config
    from gunicorn.app import base as gunicorn_base
    from gunicorn.workers import base as gunicorn_workers

DEFAULT_HOST = '127.0.0.1'
DEFAULT_PORT = 8778
# One request at a time per worker, run by its event loop: no hand-off to
# a thread and back, no GIL passed between threads; against 4 threads,
# 0.83-0.92x the server CPU per request on every gate cell and as much or
# more throughput (docs/bench/serving.md, "Inline").
DEFAULT_THREADS = 1
# What Apache in front of upstream's placement accepts (LimitRequestLine).
DEFAULT_LIMIT_REQUEST_LINE = 8190
MAX_LIMIT_REQUEST_LINE = 65535          # uwsgi's largest buffer-size
DEFAULT_LIMIT_REQUEST_BODY = 16 << 20   # the largest real request is ~1 MB


class GunicornLog(glogging.Logger):
    """gunicorn's log lines through oslo.log's handlers: the service's
    format, its log_file, its syslog. gunicorn's access log stays off: the
    service logs each request itself (placement_server.middleware)."""

    def setup(self, cfg: 'gunicorn_config.Config') -> None:
        self.error_log.propagate = True
        self.error_log.setLevel(logging.INFO)
        self.access_log.propagate = False


def _parser() -> cmd.ArgumentParser:
    parser = cmd.ArgumentParser(
        prog='placement-server',
        description='Serve the OpenStack Placement compatible API.')
    parser.add_argument('--host', default=DEFAULT_HOST,
                        help='address to listen on (default %(default)s)')
    parser.add_argument('--port', type=int, default=DEFAULT_PORT,
                        help='port to listen on (default %(default)s)')
    parser.add_argument('--workers', type=int, default=1,
                        help='worker processes (default %(default)s)')
    parser.add_argument('--threads', type=int, default=DEFAULT_THREADS,
                        help='requests each worker runs at once; 1 runs them '
                             'in its event loop, more in a thread pool '
                             '(default %(default)s)')
    parser.add_argument('--timeout', type=int, default=120,
                        help='seconds a request may take before its worker '
                             'is restarted (default %(default)s)')
    parser.add_argument('--limit-request-line', type=int,
                        default=DEFAULT_LIMIT_REQUEST_LINE,
                        help='longest request line in bytes, up to %d; longer is 414 '
                             '(default %%(default)s)' % MAX_LIMIT_REQUEST_LINE)
    parser.add_argument('--limit-request-body', type=int,
                        default=DEFAULT_LIMIT_REQUEST_BODY,
                        help='largest request body in bytes; larger is 413 '
                             '(default %(default)s)')
    parser.add_argument('--header-timeout', type=float, default=20,
                        help='seconds a request\'s head may take to arrive; then 408 '
                             '(default %(default)s)')
    parser.add_argument('--body-timeout', type=float, default=60,
                        help='seconds a request\'s body may take to arrive after its '
                             'head, and its answer to be taken; then 408 '
                             '(default %(default)s)')
    parser.add_argument('--auth-strategy', choices=('keystone', 'noauth2'),
                        help='override [api] auth_strategy')
    parser.add_argument('--sync-db', action='store_true',
                        help='create or upgrade the database schema first')
    cmd.add_conf_arguments(parser)
    return parser


def _check_port_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ':' in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            raise cmd.CommandError('cannot listen on %s:%d: %s' % (host, port, e.strerror))


def _check_keystone(conf: cfg.ConfigOpts) -> None:
    """Refuse to start a keystone-authenticated server that cannot reach
    keystone: every request would fail."""
    missing = auth.keystone_conf_missing(conf)
    if missing:
        raise cmd.CommandError(
            'placement-server: auth strategy keystone needs [keystone_authtoken] %s '
            '(and the service credentials) in the config file; for development '
            'use --auth-strategy noauth2' % ' and '.join(missing))


def _gunicorn_app(conf: cfg.ConfigOpts,
                  options: dict[str, object]) -> 'gunicorn_base.BaseApplication':
    from gunicorn.app import base

    class PlacementServer(base.BaseApplication):

        def load_config(self) -> None:
            for key, value in options.items():
                if key in self.cfg.settings:   # some are newer than gunicorn 21
                    self.cfg.set(key, value)

        def load(self) -> WSGIApplication:
            # In each worker after the fork: its own engine and pool.
            from placement_server import deploy
            return deploy.init_application(conf)

    return PlacementServer()


def _child_exit(server: 'arbiter.Arbiter', worker: 'gunicorn_workers.Worker') -> None:
    # Drop a dead worker's live gauges from the Prometheus totals.
    from prometheus_client import multiprocess
    multiprocess.mark_process_dead(worker.pid)


def _serve_metrics(conf: cfg.ConfigOpts, host: str) -> simple_server.WSGIServer | None:
    """The master's metrics port (None when off)."""
    if not conf.api.enable_metrics or not conf.api.metrics_port:
        return None
    from placement_server import metrics
    from placement_server.capacity import flavors
    from placement_server.capacity import metrics as capacity_metrics
    # The master builds no application: the capacity series its scrapes
    # show come from its own database handle and resource view.
    try:
        capacity_metrics.install(conf, cmd.open_database(conf))
    except flavors.FlavorError as e:
        raise cmd.CommandError('placement-server: [capacity] flavor: %s' % e)
    host = conf.api.metrics_host or host
    try:
        return metrics.serve(host, conf.api.metrics_port)
    except OSError as e:
        raise cmd.CommandError('placement-server: cannot serve metrics on %s:%d: %s'
                               % (host, conf.api.metrics_port, e.strerror))


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if not 0 < args.port < 65536:
        raise cmd.CommandError('placement-server: --port must be 1-65535')
    if args.workers < 1:
        raise cmd.CommandError('placement-server: --workers must be at least 1')
    if args.threads < 1:
        raise cmd.CommandError('placement-server: --threads must be at least 1')
    if not 1 <= args.limit_request_line <= MAX_LIMIT_REQUEST_LINE:
        raise cmd.CommandError('placement-server: --limit-request-line must be 1-%d'
                               % MAX_LIMIT_REQUEST_LINE)
    if args.limit_request_body < 0:
        raise cmd.CommandError('placement-server: --limit-request-body must not be negative')
    if not (args.header_timeout > 0 and args.body_timeout > 0):
        raise cmd.CommandError('placement-server: --header-timeout and --body-timeout '
                               'must be positive')
    # Set before prometheus_client is first imported, in the master, so that
    # every worker writes its numbers where one scrape can sum them.
    metrics_dir = None
    if not os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        metrics_dir = tempfile.mkdtemp(prefix='placement-metrics-')
        os.environ['PROMETHEUS_MULTIPROC_DIR'] = metrics_dir
    else:   # the operator's: it must exist, or every request would fail
        try:
            os.makedirs(os.environ['PROMETHEUS_MULTIPROC_DIR'], exist_ok=True)
        except OSError as e:
            raise cmd.CommandError('placement-server: PROMETHEUS_MULTIPROC_DIR: %s' % e)
    master = os.getpid()
    try:
        overrides: dict[tuple[str, str], object] = {}
        if args.auth_strategy:
            overrides[('api', 'auth_strategy')] = args.auth_strategy
        return _serve(args, cmd.load_conf(args, overrides))
    finally:
        # Workers unwind through here too when they exit: only the master
        # owns the directory.
        if metrics_dir and os.getpid() == master:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _set_limits(args: argparse.Namespace) -> None:
    """The workers' read limits and timeouts, before they fork."""
    from gunicorn.config import Config

    from placement_server.cmd import gunicorn_worker
    from placement_server.cmd import request_framing
    defaults = Config()
    gunicorn_worker.Serving.limits = request_framing.Limits(
        request_line=args.limit_request_line,
        head=args.limit_request_line + 4
        + defaults.limit_request_fields * (defaults.limit_request_field_size + 2),
        body=args.limit_request_body)
    gunicorn_worker.Serving.header_timeout = args.header_timeout
    gunicorn_worker.Serving.body_timeout = args.body_timeout


def _serve(args: argparse.Namespace, conf: cfg.ConfigOpts) -> int:
    from oslo_log import log as logging

    if conf.api.auth_strategy == 'keystone':
        _check_keystone(conf)
    db = cmd.open_database(conf)
    try:
        if args.sync_db or conf.placement_database.sync_on_startup:
            migration.sync(db)
        elif not migration.is_current(db):
            raise cmd.CommandError(
                'placement-server: the database schema at %s is not current; '
                'run "placement-manage db sync" or pass --sync-db'
                % cmd.safe_url(conf.placement_database.connection))
    finally:
        db.dispose()
    # The workers must not sync again, concurrently.
    conf.set_override('sync_on_startup', False, group='placement_database')
    _check_port_free(args.host, args.port)
    logging.setup(conf, 'placement')
    from placement_server import deploy
    deploy.log_start(conf)
    metrics_server = _serve_metrics(conf, args.host)

    def post_fork(server: 'arbiter.Arbiter', worker: 'gunicorn_workers.Worker') -> None:
        # The metrics port is the master's alone.
        if metrics_server is not None:
            metrics_server.socket.close()
            # Leave the master's capacity connections open for the master.
            from placement_server.capacity import metrics as capacity_metrics
            capacity_metrics.forget_after_fork()

    _set_limits(args)
    options: dict[str, object] = {
        'bind': '[%s]:%d' % (args.host, args.port) if ':' in args.host
                else '%s:%d' % (args.host, args.port),
        'workers': args.workers,
        'worker_class': 'placement_server.cmd.gunicorn_worker.Worker',
        'threads': args.threads,
        'timeout': args.timeout,
        # The worker reads requests and judges the line itself (gunicorn's
        # own limit stops at 8190 bytes): gunicorn's parser must not refuse.
        'limit_request_line': 0,
        'graceful_timeout': 10,
        'proc_name': 'placement-server',
        # One log line per request comes from placement_server.middleware.
        'accesslog': None,
        'logger_class': GunicornLog,
        'child_exit': _child_exit,
        'post_fork': post_fork,
        # Several servers may run on one host: no shared control socket.
        'control_socket_disable': True,
    }
    print('placement-server: serving http://%s:%d/ with %d worker(s) of %d thread(s), '
          '%s auth, database %s%s' % (
              args.host, args.port, args.workers, args.threads, conf.api.auth_strategy,
              cmd.safe_url(conf.placement_database.connection),
              ', metrics on port %d' % metrics_server.server_port if metrics_server else ''),
          file=sys.stderr, flush=True)
    _gunicorn_app(conf, options).run()
    return 0


def main(argv: list[str] | None = None) -> NoReturn:
    sys.exit(cmd.run(_main, argv))


if __name__ == '__main__':
    main()
