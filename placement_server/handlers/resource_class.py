"""/resource_classes: list, show, create (POST, and PUT from 1.7), rename
(PUT before 1.7), delete."""
from collections.abc import Mapping
from typing import Any

import webob

from placement_server import errors
from placement_server import util
from placement_server.db import resource_classes as db
from placement_server.schemas import resource_class as schema


def _render(req: util.Request, row: Mapping[str, Any]) -> dict[str, Any]:
    href = util.url(req, '/resource_classes/%s' % row['name'])
    return {'name': row['name'], 'links': [{'rel': 'self', 'href': href}]}


@util.since('1.2')
def list_resource_classes(req: util.Request) -> webob.Response:
    req.context.can('placement:resource_classes:list')
    util.check_accept(req)
    with req.db.reader() as conn:
        rows = db.list_all(conn)
    return util.json_response(
        req, {'resource_classes': [_render(req, r) for r in rows]},
        modified=util.last_modified(*map(util.modified, rows)))


@util.since('1.2')
def get_resource_class(req: util.Request, name: str) -> webob.Response:
    req.context.can('placement:resource_classes:show')
    util.check_accept(req)
    with req.db.reader() as conn:
        row = db.get(conn, name)
    return util.json_response(req, _render(req, row),
                              modified=util.modified(row))


@util.since('1.2')
def create_resource_class(req: util.Request) -> webob.Response:
    req.context.can('placement:resource_classes:create')
    data = util.extract_json(req, schema.POST)
    name = data['name']
    with req.db.writer() as conn:
        if not db.create(conn, name):
            # (upstream gives this one no specific code)
            raise errors.Conflict('Conflicting resource class already exists: %s' % name)
    resp = util.no_content(201)
    resp.location = util.url(req, '/resource_classes/%s' % name)
    return resp


@util.since('1.2')
def update_resource_class(req: util.Request, name: str) -> webob.Response:
    req.context.can('placement:resource_classes:update')
    if req.version >= (1, 7):
        # 1.7+: PUT creates the custom class if it is missing; no body.
        # The name in the path is judged as a body naming it would be.
        util.validate({'name': name}, schema.PUT_1_2)
        with req.db.writer() as conn:
            created = db.create(conn, name)
        resp = util.no_content(201 if created else 204)
        resp.location = util.url(req, '/resource_classes/%s' % name)
        return resp
    data = util.extract_json(req, schema.PUT_1_2)
    with req.db.writer() as conn:
        row = db.rename(conn, name, data['name'])
    return util.json_response(req, _render(req, row))


@util.since('1.2')
def delete_resource_class(req: util.Request, name: str) -> webob.Response:
    req.context.can('placement:resource_classes:delete')
    with req.db.writer() as conn:
        db.delete(conn, name)
    return util.no_content()


ROUTES = [
    ('/resource_classes', {'GET': list_resource_classes,
                           'POST': create_resource_class}),
    ('/resource_classes/{name}', {'GET': get_resource_class,
                                  'PUT': update_resource_class,
                                  'DELETE': delete_resource_class}),
]
