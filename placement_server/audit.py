"""CADF audit notifications: keystonemiddleware's audit middleware.

Off by default. ``[audit] enabled = true`` wraps the API, inside
authentication (so that each event names who asked), in
keystonemiddleware's ``AuditMiddleware``: one ``audit.http.request`` and
one ``audit.http.response`` notification per request, whose targets the
audit map file (``[audit] audit_map_file``; etc/placement/api_audit_map.conf
is placement's) names; methods in ``[audit] ignore_req_list`` go
unaudited. Where notifications go is keystonemiddleware's
``[audit_middleware_notifications]`` (oslo.messaging, or its log).
"""
import os
from wsgiref.types import WSGIApplication

from oslo_config import cfg

OPTS = [
    cfg.BoolOpt('enabled', default=False,
                help='Send a CADF notification for each API request and response '
                     "(keystonemiddleware's audit middleware)."),
    cfg.StrOpt('audit_map_file', default='/etc/placement/api_audit_map.conf',
               help='The audit map file: how API paths map to CADF targets '
                    '(etc/placement/api_audit_map.conf).'),
    cfg.StrOpt('ignore_req_list', default='',
               help='HTTP methods not audited, comma separated, e.g. GET,HEAD.'),
]


def wrap(app: WSGIApplication, conf: cfg.ConfigOpts) -> WSGIApplication:
    """``app`` audited when [audit] enabled says so."""
    if not conf.audit.enabled:
        return app
    path = conf.audit.audit_map_file
    if not os.path.isfile(path):
        # Fail when the server loads the app, not at the first request.
        raise RuntimeError('[audit] audit_map_file %s: no such file' % path)
    from keystonemiddleware import audit
    audited: WSGIApplication = audit.AuditMiddleware(
        app, audit_map_file=path, ignore_req_list=conf.audit.ignore_req_list,
        service_name='placement', oslo_config_config=conf)
    return audited
