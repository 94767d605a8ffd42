"""A tiny client that calls the WSGI app in process, for API tests.

Tests read like the API reference::

    resp = api.post('/resource_providers', {'name': 'cn1'}, version='1.20')
    assert resp.status_int == 200
    assert resp.json['name'] == 'cn1'
"""
import json

from oslo_config import cfg
import webob

from placement_server import conf as conf_mod
from placement_server import wsgi


def make_conf(overrides=None):
    """A test configuration; ``overrides`` maps (group, name) to a value."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    conf([], project='placement', default_config_files=[])
    conf.set_override('auth_strategy', 'noauth2', group='api')
    for (group, name), value in (overrides or {}).items():
        conf.set_override(name, value, group=group)
    return conf


def make_app(database, conf=None):
    return wsgi.make_app(conf or make_conf(), database)


class Client:

    def __init__(self, app, token='admin', version=None):
        self.app = app
        self.token = token
        self.version = version

    def request(self, method, path, body=None, version=None, headers=None,
                token=None, raw=None):
        req = webob.Request.blank(path, method=method)
        version = version or self.version
        if version:
            req.headers['OpenStack-API-Version'] = 'placement %s' % version
        token = self.token if token is None else token
        if token:
            req.headers['X-Auth-Token'] = token
        if raw is not None:
            req.body = raw if isinstance(raw, bytes) else raw.encode()
            req.content_type = 'application/json'
        elif body is not None:
            req.body = json.dumps(body).encode()
            req.content_type = 'application/json'
        for k, v in (headers or {}).items():
            req.headers[k] = v
        return req.get_response(self.app)

    def get(self, path, **kw):
        return self.request('GET', path, **kw)

    def delete(self, path, **kw):
        return self.request('DELETE', path, **kw)

    def post(self, path, body=None, **kw):
        return self.request('POST', path, body, **kw)

    def put(self, path, body=None, **kw):
        return self.request('PUT', path, body, **kw)


def make_provider(api, name='cn1', inventories=None, uuid=None, parent=None):
    """A provider created through the API (1.20), with ``inventories`` put
    on it (1.39) when given; returns its uuid."""
    body = {'name': name}
    if uuid:
        body['uuid'] = uuid
    if parent:
        body['parent_provider_uuid'] = parent
    resp = api.post('/resource_providers', body, version='1.20')
    assert resp.status_int == 200, resp.body
    rp = resp.json['uuid']
    if inventories is not None:
        resp = api.put('/resource_providers/%s/inventories' % rp, {
            'resource_provider_generation': 0, 'inventories': inventories}, version='1.39')
        assert resp.status_int == 200, resp.body
    return rp


def error(resp, status=400, code=None):
    """The response's error object, after checking its status (and code)."""
    assert resp.status_int == status, resp.body
    error = resp.json['errors'][0]
    if code:
        assert error['code'] == code
    return error
