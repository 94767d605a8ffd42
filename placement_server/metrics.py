"""The placement server's Prometheus metrics: one registry, one exposition.

Every metric the server exports is defined on prometheus_client's default
registry (this module's, and any other module's that adds its own, e.g.
capacity); ``exposition()`` is the only place that renders them.

Under several worker processes each worker writes its numbers to files
under ``PROMETHEUS_MULTIPROC_DIR`` (placement-server sets it up) and a
scrape reports the sum over all of them. placement-server serves the
scrape from its master process on its own port (``[api] metrics_port``),
never on the API port: the numbers need no token, so they must not be
reachable where the API is.
"""
import os
import socket
import socketserver
import threading
from typing import Any
from wsgiref import simple_server
from wsgiref.types import StartResponse
from wsgiref.types import WSGIEnvironment

import prometheus_client
from prometheus_client import multiprocess
from sqlalchemy import event

from placement_server.capacity import metrics as capacity_metrics
from placement_server.db import api as db_api

PATH = '/metrics'
# Methods that name themselves in the metrics; any other is 'other', so
# that clients cannot add series at will.
KNOWN_METHODS = frozenset(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])

REQUESTS = prometheus_client.Counter(
    'placement_http_requests', 'HTTP requests served.',
    ['route', 'method', 'status'])
LATENCY = prometheus_client.Histogram(
    'placement_http_request_duration_seconds',
    'Time from receiving a request to the end of its response.',
    ['route', 'method', 'status'],
    buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
CATCH_UPS = prometheus_client.Counter(
    'placement_view_catch_ups',
    'Resource views brought up to date while their worker was idle, after a write.')
# livesum: with several workers, the total over the workers still alive.
POOL_IN_USE = prometheus_client.Gauge(
    'placement_db_pool_connections_in_use',
    'Database connections checked out of the pool right now.',
    multiprocess_mode='livesum')
POOL_OPEN = prometheus_client.Gauge(
    'placement_db_pool_connections_open',
    'Database connections the pool holds open (in use or idle).',
    multiprocess_mode='livesum')


def method_label(method: str) -> str:
    """The value of the ``method`` label for a request's method."""
    return method if method in KNOWN_METHODS else 'other'


def watch_pool(db: db_api.Database) -> None:
    """Keep the pool gauges current from the engine's pool events."""
    def on_connect(*_: object) -> None:
        POOL_OPEN.inc()

    def on_close(*_: object) -> None:
        POOL_OPEN.dec()

    def on_checkout(*_: object) -> None:
        POOL_IN_USE.inc()

    def on_checkin(*_: object) -> None:
        POOL_IN_USE.dec()

    for engine in db.engines:
        event.listen(engine, 'connect', on_connect)
        event.listen(engine, 'close', on_close)
        event.listen(engine, 'close_detached', on_close)
        event.listen(engine, 'checkout', on_checkout)
        event.listen(engine, 'checkin', on_checkin)


def registry() -> prometheus_client.CollectorRegistry:
    """What a scrape reads: this process's numbers, or every worker's."""
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        summed = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(summed)
        return summed
    return prometheus_client.REGISTRY


def exposition() -> tuple[bytes, str]:
    """(body, content type) of one scrape."""
    # Capacity is this process's view of the database, not a sum over
    # workers: rendered apart (placement_server.capacity.metrics).
    body = prometheus_client.generate_latest(registry()) + capacity_metrics.text()
    return body, prometheus_client.CONTENT_TYPE_LATEST


def scrape_app(environ: WSGIEnvironment, start_response: StartResponse) -> list[bytes]:
    """The metrics port's WSGI app: /metrics, and 404 for anything else."""
    if environ.get('PATH_INFO') != PATH or environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
        start_response('404 Not Found', [('Content-Type', 'text/plain'),
                                         ('Content-Length', '10')])
        return [b'not found\n']
    body, content_type = exposition()
    start_response('200 OK', [('Content-Type', content_type),
                              ('Content-Length', str(len(body)))])
    return [body]


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:   # a scrape every 15 s is no news
        pass


class _ThreadingServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True


class _ThreadingServer6(_ThreadingServer):
    address_family = socket.AF_INET6


def serve(host: str, port: int) -> simple_server.WSGIServer:
    """Serve scrapes on ``host``:``port`` from a daemon thread; the server."""
    server = simple_server.make_server(
        host, port, scrape_app, handler_class=_QuietHandler,
        server_class=_ThreadingServer6 if ':' in host else _ThreadingServer)
    threading.Thread(target=server.serve_forever, name='metrics', daemon=True).start()
    return server
