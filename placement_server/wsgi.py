"""The WSGI application: middleware stack around the router.

From the outside in:

  RequestId      oslo.middleware: the request id (and the caller's global
                 one) in the environ and in x-openstack-request-id
  PlacementApp   microversion, error rendering (every error a JSON body
                 with a code, never a traceback)
  auth           noauth2 or keystonemiddleware (sets X-User-Id, X-Roles...)
  dispatch       builds the RequestContext, routes, calls the handler
                 under the one retry policy (``retry.run``)

WSGI servers import ``placement_server.wsgi_app:application``, which
placement_server.deploy builds with the operator layers (health check,
metrics, request log, CORS) around ``make_app``.
"""
from collections.abc import Callable
from collections.abc import Iterable
import html
import json
import logging
from typing import TYPE_CHECKING
from wsgiref.types import StartResponse
from wsgiref.types import WSGIApplication
from wsgiref.types import WSGIEnvironment

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_middleware import request_id as oslo_request_id
import webob

from placement_server import audit
from placement_server import auth
from placement_server import context
from placement_server import errors
from placement_server import handlers
from placement_server import microversion
from placement_server import retry
from placement_server import router
from placement_server import util
from placement_server.db import api as db_api

if TYPE_CHECKING:
    from _typeshed import OptExcInfo  # what sys.exc_info() gives

LOG = logging.getLogger(__name__)


def _error_body(err: errors.PlacementError, request_id: str,
                version: microversion.Version | None) -> bytes:
    error: dict[str, object] = {'status': err.status, 'title': err.title, 'detail': err.detail,
             'request_id': request_id}
    # Like upstream: no code when the version itself was refused.
    if version is not None and version >= (1, 23):
        error['code'] = err.code
    error.update(err.extra)
    return json.dumps({'errors': [error]}).encode('utf-8')


_HTML = """<html>
 <head>
  <title>%(status)s</title>
 </head>
 <body>
  <h1>%(status)s</h1>
  %(detail)s
 </body>
</html>"""


def _error_response(err: errors.PlacementError, request_id: str,
                    version: microversion.Version | None, accept: str | None) -> webob.Response:
    """The error as placement's JSON document; as an HTML page (as upstream,
    through webob) only for a client that asks for HTML rather than JSON."""
    offers = webob.acceptparse.create_accept_header(accept).acceptable_offers(
        ['application/json', 'text/html']) if accept else []
    wants_html = bool(offers) and offers[0][0] == 'text/html'
    if wants_html:
        resp = webob.Response(status=err.status, content_type='text/html', charset='utf-8')
        resp.text = _HTML % {'status': html.escape(resp.status),
                             'detail': html.escape(err.detail)}
    else:
        resp = webob.Response(status=err.status, content_type='application/json',
                              charset='utf-8')
        resp.body = _error_body(err, request_id, version)
    resp.headers.update(err.headers)
    return resp


def _check_body_headers(environ: WSGIEnvironment) -> None:
    """A body must say its type; its length must be a number (400 before
    routing, as upstream)."""
    length = environ.get('CONTENT_LENGTH')
    if not length:
        return
    try:
        size = int(length)
    except ValueError:
        raise errors.BadRequest('content-length header must be an integer')
    if size > 0 and not environ.get('CONTENT_TYPE'):
        raise errors.BadRequest('content-type header required when content-length > 0')


class Dispatcher:
    """Innermost app: context, route, handler."""

    def __init__(self, db: db_api.Database, conf: cfg.ConfigOpts) -> None:
        self.db = db
        self.conf = conf
        self.router = router.Router(handlers.ROUTES)

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        environ['placement.db'] = self.db
        environ['placement.conf'] = self.conf
        ctx = context.RequestContext.from_environ(environ)
        ctx.request_id = environ[oslo_request_id.ENV_REQUEST_ID]
        environ['placement.context'] = ctx
        req = util.Request(environ)
        # No name, uuid or filter of placement holds a NUL, and PostgreSQL
        # refuses it in any string: say so before a query does.
        try:
            path = req.path_info
        except UnicodeDecodeError:
            raise errors.BadRequest('The URL path is not valid UTF-8.')
        query = environ.get('QUERY_STRING', '')
        # (a NUL reaches the query only as itself or as %00)
        if '\x00' in path or '%00' in query or '\x00' in query:
            raise errors.BadRequest('NUL characters are not allowed in the URL.')
        _check_body_headers(environ)
        handler, kwargs = self.router.match(req.method, path)
        # The one retry policy: a write that lost a race runs again whole.
        resp = retry.run(req, lambda: handler(req, **kwargs))
        body: Iterable[bytes] = resp(environ, start_response)   # webob is untyped
        return body


class RequestId(oslo_request_id.RequestId):
    """oslo.middleware's request id (its rule for the caller's global id,
    its environ keys, header and id format) as a plain WSGI layer.

    oslo's own ``__call__`` goes through webob.dec: it builds a request,
    turns the answer back into a webob.Response and renders it again,
    which cost more than the rest of GET / together
    (docs/bench/placement-server.md, issue 40).
    """

    def __init__(self, app: WSGIApplication) -> None:
        super().__init__(app)
        self.app = app

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        self.set_global_req_id(webob.BaseRequest(environ))
        request_id = oslo_context.generate_request_id()
        environ[oslo_request_id.ENV_REQUEST_ID] = request_id
        wanted = [oslo_request_id.HTTP_RESP_HEADER_REQUEST_ID, *self.compat_headers]

        def start(status: str, headers: list[tuple[str, str]],
                  exc_info: 'OptExcInfo | None' = None) -> Callable[[bytes], object]:
            present = {name.lower() for name, _ in headers}
            headers = headers + [(name, request_id) for name in wanted
                                 if name.lower() not in present]
            return start_response(status, headers, exc_info)
        return self.app(environ, start)


class PlacementApp:
    """Outermost app: what every response carries, and error rendering."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment,
                 start_response: StartResponse) -> Iterable[bytes]:
        request_id = environ[oslo_request_id.ENV_REQUEST_ID]
        version = None
        try:
            try:
                version = microversion.negotiate(environ.get('HTTP_OPENSTACK_API_VERSION'))
            except microversion.InvalidVersion as e:
                raise errors.BadRequest(str(e))
            except microversion.UnacceptableVersion as e:
                err = errors.NotAcceptable(str(e))
                # As upstream: the error says which versions are offered.
                err.extra = {'min_version': str(microversion.MIN_VERSION),
                             'max_version': str(microversion.MAX_VERSION)}
                raise err
            environ['placement.microversion'] = version
            # The handlers answer whole bodies: anything that goes wrong is
            # raised before the answer starts.
            return self.app(environ, _with_headers(start_response, version))
        except errors.PlacementError as err:
            resp = _error_response(err, request_id, version, environ.get('HTTP_ACCEPT'))
        except Exception:
            LOG.exception('unexpected error handling %s %s',
                          environ.get('REQUEST_METHOD'), environ.get('PATH_INFO'))
            unexpected = errors.PlacementError('An unexpected error occurred; the '
                                               'server log has the details.')
            unexpected.status = 500
            resp = _error_response(unexpected, request_id, version, environ.get('HTTP_ACCEPT'))
        body: Iterable[bytes] = resp(environ, _with_headers(start_response, version))
        return body


def _with_headers(start_response: StartResponse,
                  version: microversion.Version | None) -> StartResponse:
    """``start_response`` adding what every versioned answer carries: the
    version served (once negotiated) and Vary on the version header."""
    ours = []
    if version is not None:
        ours.append(('OpenStack-API-Version', microversion.response_header(version)))
    ours.append(('Vary', microversion.HEADER.lower()))   # as upstream writes it
    replaced = {name.lower() for name, _ in ours}

    def start(status: str, headers: list[tuple[str, str]],
              exc_info: 'OptExcInfo | None' = None) -> Callable[[bytes], object]:
        headers = [h for h in headers if h[0].lower() not in replaced] + ours
        return start_response(status, headers, exc_info)
    return start


def make_app(conf: cfg.ConfigOpts, db: db_api.Database) -> WSGIApplication:
    """The full application for ``conf`` on database ``db``."""
    return RequestId(PlacementApp(
        auth.wrap(audit.wrap(Dispatcher(db, conf), conf), conf)))
