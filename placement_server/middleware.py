"""What operators need around the API: health, metrics, request log, CORS.

These wrap the whole ``wsgi.make_app`` stack, outside authentication:

  CORS           oslo.middleware, only when [cors] allowed_origin is set
  Observer       /healthcheck and /metrics (no token needed: load balancers
                 and Prometheus scrape them), one log line per request, and
                 request count and latency by route, method and status

Under several worker processes the Prometheus numbers live in files under
``PROMETHEUS_MULTIPROC_DIR`` (placement-server sets it up); a scrape of
any worker then reports the sum over all of them.
"""
import json
import logging
import os
import time

from oslo_context import context as oslo_context
from oslo_middleware import cors
import prometheus_client
from prometheus_client import multiprocess
import sqlalchemy as sa
from sqlalchemy import event

from placement_server import errors
from placement_server import handlers
from placement_server import router

LOG = logging.getLogger('placement_server.requests')

HEALTHCHECK_PATH = '/healthcheck'
METRICS_PATH = '/metrics'

REQUESTS = prometheus_client.Counter(
    'placement_http_requests', 'HTTP requests served.',
    ['route', 'method', 'status'])
LATENCY = prometheus_client.Histogram(
    'placement_http_request_duration_seconds',
    'Time from receiving a request to the end of its response.',
    ['route', 'method', 'status'],
    buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30))
# livesum: with several workers, the total over the workers still alive.
POOL_IN_USE = prometheus_client.Gauge(
    'placement_db_pool_connections_in_use',
    'Database connections checked out of the pool right now.',
    multiprocess_mode='livesum')
POOL_OPEN = prometheus_client.Gauge(
    'placement_db_pool_connections_open',
    'Database connections the pool holds open (in use or idle).',
    multiprocess_mode='livesum')


class _RouteNames:
    """Maps a path to its route template, so metrics have few label values.

    It reuses the API's own router with the template standing in for the
    handler.
    """

    def __init__(self):
        self._router = router.Router(
            [(template, {method: template for method in methods})
             for template, methods in handlers.ROUTES])

    def __call__(self, method, path):
        if path in (HEALTHCHECK_PATH, METRICS_PATH):
            return path
        try:
            return self._router.match(method, path)[0]
        except errors.PlacementError:
            return 'unmatched'


def watch_pool(db):
    """Keep the pool gauges current from the engine's pool events."""
    def on_connect(*_):
        POOL_OPEN.inc()

    def on_close(*_):
        POOL_OPEN.dec()

    def on_checkout(*_):
        POOL_IN_USE.inc()

    def on_checkin(*_):
        POOL_IN_USE.dec()

    event.listen(db.engine, 'connect', on_connect)
    event.listen(db.engine, 'close', on_close)
    event.listen(db.engine, 'close_detached', on_close)
    event.listen(db.engine, 'checkout', on_checkout)
    event.listen(db.engine, 'checkin', on_checkin)


def _registry():
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        registry = prometheus_client.CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return registry
    return prometheus_client.REGISTRY


class Observer:
    """Health check, metrics endpoint, request log and request metrics."""

    def __init__(self, app, db, metrics=True):
        self.app = app
        self.db = db
        self.metrics = metrics
        self.route_of = _RouteNames()

    def healthcheck(self, start_response):
        try:
            with self.db.reader() as conn:
                conn.execute(sa.text('SELECT 1'))
            status, body = '200 OK', {'status': 'OK', 'database': 'OK'}
        except Exception as e:
            LOG.warning('health check: database unreachable: %s', e)
            status = '503 Service Unavailable'
            body = {'status': 'DOWN', 'database': 'unreachable'}
        data = json.dumps(body).encode()
        start_response(status, [('Content-Type', 'application/json'),
                                ('Content-Length', str(len(data))),
                                ('Cache-Control', 'no-cache')])
        return [data]

    def scrape(self, start_response):
        data = prometheus_client.generate_latest(_registry())
        start_response('200 OK', [('Content-Type', prometheus_client.CONTENT_TYPE_LATEST),
                                  ('Content-Length', str(len(data)))])
        return [data]

    def __call__(self, environ, start_response):
        started = time.monotonic()
        method = environ.get('REQUEST_METHOD', '')
        path = environ.get('PATH_INFO', '') or '/'
        seen = {}

        def recording_start_response(status, headers, exc_info=None):
            seen['status'] = status.split(' ', 1)[0]
            seen['length'] = next((v for k, v in headers if k.lower() == 'content-length'), '-')
            return start_response(status, headers, exc_info)

        if method in ('GET', 'HEAD') and path == HEALTHCHECK_PATH:
            body = self.healthcheck(recording_start_response)
        elif method == 'GET' and path == METRICS_PATH and self.metrics:
            body = self.scrape(recording_start_response)
        else:
            body = self.app(environ, recording_start_response)
        # The API's responses are whole bodies already; nothing to stream.
        body = list(body)
        elapsed = time.monotonic() - started
        status = seen.get('status', '500')
        if self.metrics:
            route = self.route_of(method, path)
            REQUESTS.labels(route, method, status).inc()
            LATENCY.labels(route, method, status).observe(elapsed)
        self._log(environ, method, status, seen.get('length', '-'), elapsed)
        return body

    @staticmethod
    def _log(environ, method, status, length, elapsed):
        ctx = environ.get('placement.context') or oslo_context.RequestContext(
            request_id=environ.get('placement.request_id'),
            global_request_id=environ.get('openstack.global_request_id'),
            overwrite=False)
        path = environ.get('PATH_INFO', '') or '/'
        if environ.get('QUERY_STRING'):
            path += '?' + environ['QUERY_STRING']
        version = environ.get('placement.microversion')
        LOG.info('%s "%s %s" status: %s len: %s microversion: %s time: %.6f',
                 environ.get('REMOTE_ADDR', '-'), method, path, status, length,
                 version or '-', elapsed, extra={'context': ctx})


def wrap(app, conf, db):
    """The operator-facing layers around the API application ``app``."""
    if conf.api.enable_metrics:
        watch_pool(db)
    app = Observer(app, db, metrics=conf.api.enable_metrics)
    if conf.cors.allowed_origin:
        app = cors.CORS(app, conf)
    return app
