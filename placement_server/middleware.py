"""What operators need around the API: proxies, health, request log, CORS.

These wrap the whole ``wsgi.make_app`` stack, outside authentication,
from the outside in:

  HTTPProxyToWSGI  oslo.middleware: with [oslo_middleware]
                   enable_proxy_headers_parsing, the scheme, host and path
                   prefix the proxy's X-Forwarded-* / Forwarded headers say
                   (left out when off: it would do nothing, at ~60 us a
                   request; docs/bench/placement-server.md)
  CORS             oslo.middleware, only when [cors] allowed_origin is set
  Observer         /healthcheck (no token: load balancers call it; see
                   placement_server.health), one log line per request, and
                   request count and latency by route, method and status
                   (placement_server.metrics; scraped on its own port)
"""
from collections.abc import Callable
import logging
import re
import time
from typing import TYPE_CHECKING
from wsgiref.types import StartResponse
from wsgiref.types import WSGIApplication
from wsgiref.types import WSGIEnvironment

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi

from placement_server import errors
from placement_server import handlers
from placement_server import health
from placement_server import metrics
from placement_server import router
from placement_server.capacity import metrics as capacity_metrics
from placement_server.db import api as db_api

if TYPE_CHECKING:
    from _typeshed import OptExcInfo  # what sys.exc_info() gives

LOG = logging.getLogger('placement_server.requests')
# What a client may put in a path that a log line must not show as is: a
# newline would start a forged line.
_CONTROL = re.compile('[\x00-\x1f\x7f-\x9f]')


def _printable(text: str) -> str:
    """``text`` with its control characters written as %XX, as in a URL."""
    return _CONTROL.sub(lambda m: '%%%02X' % ord(m.group()), text)


class _RouteNames:
    """Maps a path to its route template, so metrics have few label values.

    It reuses the API's own router with the template standing in for the
    handler.
    """

    def __init__(self) -> None:
        self._router = router.Router(
            [(template, {method: template for method in methods})
             for template, methods in handlers.ROUTES])

    def __call__(self, method: str, path: str) -> str:
        if path == health.PATH:
            return path
        try:
            return self._router.match(method, path)[0]
        except errors.PlacementError:
            return 'unmatched'


class Observer:
    """Health check, request log and request metrics."""

    def __init__(self, app: WSGIApplication, health_app: WSGIApplication,
                 metrics: bool = True) -> None:
        self.app = app
        self.health_app = health_app
        self.metrics = metrics
        self.route_of = _RouteNames()

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> list[bytes]:
        started = time.monotonic()
        method = environ.get('REQUEST_METHOD', '')
        path = environ.get('PATH_INFO', '') or '/'
        seen: dict[str, str] = {}

        def recording_start_response(
                status: str, headers: list[tuple[str, str]],
                exc_info: 'OptExcInfo | None' = None,
        ) -> Callable[[bytes], object]:
            seen['status'] = status.split(' ', 1)[0]
            seen['length'] = next((v for k, v in headers if k.lower() == 'content-length'), '-')
            return start_response(status, headers, exc_info)

        if method in ('GET', 'HEAD') and path == health.PATH:
            answer = self.health_app(environ, recording_start_response)
        else:
            answer = self.app(environ, recording_start_response)
        # The API's responses are whole bodies already; nothing to stream.
        body = list(answer)
        elapsed = time.monotonic() - started
        status = seen.get('status', '500')
        if self.metrics:
            route = self.route_of(method, path)
            method_label = metrics.method_label(method)
            metrics.REQUESTS.labels(route, method_label, status).inc()
            metrics.LATENCY.labels(route, method_label, status).observe(elapsed)
        self._log(environ, method, status, seen.get('length', '-'), elapsed)
        return body

    @staticmethod
    def _log(environ: WSGIEnvironment, method: str, status: str, length: str,
             elapsed: float) -> None:
        ctx = environ.get('placement.context') or oslo_context.RequestContext(
            request_id=environ.get('openstack.request_id'),
            global_request_id=environ.get('openstack.global_request_id'),
            overwrite=False)
        # The path the client asked for: under a prefix, the prefix too.
        path = environ.get('SCRIPT_NAME', '') + (environ.get('PATH_INFO', '') or '/')
        if environ.get('QUERY_STRING'):
            path += '?' + environ['QUERY_STRING']
        version = environ.get('placement.microversion')
        LOG.info('%s "%s %s" status: %s len: %s microversion: %s time: %.6f',
                 environ.get('REMOTE_ADDR', '-'), _printable(method), _printable(path),
                 status, length,
                 version or '-', elapsed, extra={'context': ctx})


def wrap(app: WSGIApplication, conf: cfg.ConfigOpts, db: db_api.Database) -> WSGIApplication:
    """The operator-facing layers around the API application ``app``."""
    if conf.api.enable_metrics:
        metrics.watch_pool(db)
        capacity_metrics.install(conf, db)
    app = Observer(app, health.app(conf, db), metrics=conf.api.enable_metrics)
    if conf.cors.allowed_origin:
        app = cors.CORS(app, conf)
    conf.register_opts(http_proxy_to_wsgi.OPTS, group='oslo_middleware')
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    return app
