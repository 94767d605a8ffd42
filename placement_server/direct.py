"""PlacementDirect: the whole placement API in process, without a network.

Tools and tests that want to talk to placement as a client would (a
keystoneauth1 Adapter, real HTTP semantics, microversion headers) but
without starting a server use this::

    with PlacementDirect('sqlite:////tmp/p.sqlite', sync=True) as adapter:
        adapter.get('/resource_providers', microversion='1.39')

Requests go through a requests transport adapter that calls the WSGI
application directly: no socket is opened. Access is admin, as the
``noauth2`` strategy's ``admin`` token.
"""
import io
from typing import Any
import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import cfg
import requests
import requests.adapters
import requests.structures
import requests.utils
import webob

from placement_server import conf as conf_mod
from placement_server import wsgi
from placement_server.db import api as db_api
from placement_server.db import migration

ENDPOINT = 'http://placement.direct'
ADMIN_TOKEN = 'admin'


class WSGITransport(requests.adapters.BaseAdapter):
    """A requests transport that hands each request to a WSGI app."""

    def __init__(self, app: Any) -> None:
        super().__init__()
        self.app = app

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: Any = None, verify: Any = True, cert: Any = None,
             proxies: Any = None) -> requests.Response:
        url = urllib.parse.urlsplit(request.url or '')
        path = url.path + ('?' + url.query if url.query else '')
        wreq = webob.Request.blank(path, method=request.method)
        for name, value in request.headers.items():
            if name.lower() != 'content-length':
                wreq.headers[name] = value
        body = request.body or b''
        wreq.body = body.encode('utf-8') if isinstance(body, str) else body
        wresp = wreq.get_response(self.app)

        resp = requests.Response()
        resp.status_code = wresp.status_int
        resp.reason = wresp.status.partition(' ')[2]
        resp.headers = requests.structures.CaseInsensitiveDict(wresp.headerlist)
        resp.encoding = requests.utils.get_encoding_from_headers(resp.headers)
        # requests reads the body from raw when asked for its content
        resp.raw = io.BytesIO(wresp.body)
        resp.url = request.url or ''
        resp.request = request
        return resp

    def close(self) -> None:
        pass


def _conf_for(conf_or_url: Any) -> tuple[cfg.ConfigOpts, str, bool]:
    """(conf, database url, our own conf?) from either form of argument."""
    if isinstance(conf_or_url, cfg.ConfigOpts):
        return conf_or_url, conf_or_url.placement_database.connection, False
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf([], project='placement', default_config_files=[])
    return conf, str(conf_or_url), True


class PlacementDirect:
    """Context manager yielding a keystoneauth1 Adapter onto an in-process app.

    ``conf_or_url`` is a placement ConfigOpts, a database URL, or a ready
    ``placement_server.db.api.Database``; ``sync=True`` creates or upgrades
    the schema first.
    """

    def __init__(self, conf_or_url: Any, sync: bool = False) -> None:
        if isinstance(conf_or_url, db_api.Database):
            self.conf, _, self._own_conf = _conf_for(conf_or_url.url)
            self.db, self._own_db = conf_or_url, False
        else:
            self.conf, url, self._own_conf = _conf_for(conf_or_url)
            self.db, self._own_db = db_api.Database(url), True
        self.sync = sync
        self.adapter: ks_adapter.Adapter | None = None
        self.app: Any = None

    def __enter__(self) -> ks_adapter.Adapter:
        if self.sync:
            migration.sync(self.db)
        # The in-process app trusts its caller: noauth2 with the admin token.
        self.conf.set_override('auth_strategy', 'noauth2', group='api')
        self.app = wsgi.make_app(self.conf, self.db)
        adapter = self.adapter = self.new_adapter()
        return adapter

    def new_adapter(self) -> ks_adapter.Adapter:
        """Another Adapter (its own session) onto the same application."""
        session = ks_session.Session(
            auth=token_endpoint.Token(ENDPOINT, ADMIN_TOKEN))
        session.session.mount(ENDPOINT, WSGITransport(self.app))
        # admin, and service too: placement keeps the reshaper for services
        return ks_adapter.Adapter(session, service_type='placement', raise_exc=False,
                                  additional_headers={'X-Roles': 'admin,service'})

    def __exit__(self, *exc: object) -> None:
        if not self._own_conf:
            self.conf.clear_override('auth_strategy', group='api')
        if self._own_db:
            self.db.dispose()
        self.adapter = None
