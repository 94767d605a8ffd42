"""GET /resource_providers/{uuid}/usages and GET /usages (1.9)."""
from typing import Any

import webob

from placement_server import util
from placement_server.db import providers
from placement_server.db import usages as db
from placement_server.schemas import usage as schema


def _send(req: util.Request, body: dict[str, Any]) -> webob.Response:
    # Usages are computed, not stored: they are as of now.
    return util.json_response(req, body, modified=util.last_modified())


def provider_usages(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:usages')
    util.check_accept(req)
    with req.db.reader() as conn:
        provider = providers.get(conn, uuid, lead=providers.READ_LEADS['usages'])
        usages = db.for_provider(conn, provider['id'])
    return _send(req, {'resource_provider_generation': provider['generation'],
                       'usages': usages})


@util.since('1.9')
def total_usages(req: util.Request) -> webob.Response:
    util.check_accept(req)
    by_type = req.version >= (1, 38)
    params = util.query_params(req, schema.GET_1_38 if by_type else schema.GET_1_9)
    req.context.can('placement:usages', {'project_id': params['project_id']})
    with req.db.reader() as conn:
        if by_type:
            usages = db.by_consumer_type(conn, params['project_id'], params.get('user_id'),
                                         params.get('consumer_type'))
        else:
            usages = db.for_project(conn, params['project_id'], params.get('user_id'))
    return _send(req, {'usages': usages})


ROUTES = [
    ('/resource_providers/{uuid}/usages', {'GET': provider_usages}),
    ('/usages', {'GET': total_usages}),
]
