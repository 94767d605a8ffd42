"""/resource_providers: create, list (with filters: ``placement_server.lists``),
show, update, delete."""
from collections.abc import Callable
from collections.abc import Sequence
import datetime
from typing import Any
import uuid as uuidlib

import webob

from placement_server import errors
from placement_server import lists
from placement_server import util
from placement_server.db import api
from placement_server.db import providers as db
from placement_server.schemas import resource_provider as schema


def renderer(req: util.Request) -> Callable[[Sequence[Any]], dict[str, Any]]:
    """A function rendering a provider row for this request's version.

    What depends on the version is decided once, not per provider: a list
    renders thousands of them.
    """
    version = req.version
    links = [(rel, suffix) for wanted, rel, suffix in lists.LINKS if version >= wanted]
    nested = version >= (1, 14)
    prefix = util.url(req, '/resource_providers/')

    def render(row: Sequence[Any]) -> dict[str, Any]:
        # By position: a provider as the database gives it (id, uuid, name,
        # generation, created_at, updated_at, parent uuid, root uuid).
        uuid = row[1]
        base = prefix + uuid
        body: dict[str, Any] = {
            'uuid': uuid, 'name': row[2], 'generation': row[3],
            'links': [{'rel': rel, 'href': base + suffix} for rel, suffix in links]}
        if nested:
            body['parent_provider_uuid'] = row[6]
            body['root_provider_uuid'] = row[7]
        return body
    return render


def _as_spelt(body: dict[str, Any], parent: Any) -> dict[str, Any]:
    """A write's answer names the parent as the body spelt it, as
    upstream's does (on MariaDB another spelling finds it)."""
    if isinstance(parent, str) and 'parent_provider_uuid' in body:
        body['parent_provider_uuid'] = parent
    return body


def _modified(row: Any) -> datetime.datetime:
    modified: datetime.datetime = row.updated_at or row.created_at
    return modified


def _create(database: api.Database, uuid: str, name: str, parent_uuid: str | None
            ) -> Any:
    try:
        with database.writer() as conn:
            return db.create(conn, uuid, name, parent_uuid)
    except api.CONSTRAINT_VIOLATION:   # a new root's: at the commit
        with database.reader() as conn:
            raise db.clash_error(conn, uuid, name)


def create_resource_provider(req: util.Request) -> webob.Response:
    req.context.can('placement:resource_providers:create')
    data = util.extract_json(
        req, schema.POST_1_14 if req.version >= (1, 14) else schema.POST_1_0)
    # The new provider's uuid in canonical form, its parent's as spelt
    # (found as the database compares it), as upstream.
    uuid = util.normalize_uuid(data['uuid']) if 'uuid' in data else str(uuidlib.uuid4())
    parent = data.get('parent_provider_uuid')
    with errors.worded(db.Refused, 'Unable to create resource provider "%s", %s: '
                       % (data['name'], uuid)):
        row = _create(req.db, uuid, data['name'], parent or None)
    location = util.url(req, '/resource_providers/%s' % uuid)
    if req.version >= (1, 20):
        # 1.20 answers 200 (not 201) with the provider.
        return util.json_response(req, _as_spelt(renderer(req)(row), parent),
                                  modified=_modified(row),
                                  headers={'Location': location})
    resp = util.no_content(201)
    resp.location = location
    return resp


def list_resource_providers(req: util.Request) -> webob.Response:
    req.context.can('placement:resource_providers:list')
    util.check_accept(req)
    util.query_params(req, schema.list_schema(req.version))
    request = lists.parse(req.GET, req.version)
    with req.db.reader() as conn:
        body, newest = lists.find(conn, request, util.url(req, '/resource_providers/'),
                                  key=req.environ.get('QUERY_STRING', ''))
    return util.json_response(req, body, modified=util.last_modified(newest))


def get_resource_provider(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:show')
    util.check_accept(req)
    with req.db.reader() as conn:
        row = db.get_view(conn, uuid)
    return util.json_response(req, renderer(req)(row), modified=_modified(row))


def _update(database: api.Database, uuid: str, data: dict[str, Any],
            allow_reparent: bool) -> Any:
    with database.writer() as conn:
        parent = data.get('parent_provider_uuid', db.UNSET)   # as spelt, as upstream
        db.update(conn, uuid, data['name'], parent, allow_reparent)
        return db.get_view(conn, uuid)


def update_resource_provider(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:update')
    try:
        data = util.extract_json(
            req, schema.PUT_1_14 if req.version >= (1, 14) else schema.PUT_1_0)
    except errors.BadRequest:
        # As upstream: an unknown provider is a 404 before its body is judged.
        with req.db.reader() as conn:
            db.get(conn, uuid)
        raise
    with errors.worded(db.Refused, 'Unable to save resource provider %s: ' % uuid):
        row = _update(req.db, uuid, data, req.version >= (1, 37))
    return util.json_response(req, _as_spelt(renderer(req)(row), data.get('parent_provider_uuid')),
                              modified=_modified(row))


def _delete(database: api.Database, uuid: str) -> None:
    with database.writer() as conn:
        db.delete(conn, uuid)


def delete_resource_provider(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:delete')
    try:
        _delete(req.db, uuid)
    except errors.NotFound as e:
        raise errors.NotFound(e.message + ' for delete')
    return util.no_content()


ROUTES = [
    ('/resource_providers', {'GET': list_resource_providers,
                             'POST': create_resource_provider}),
    ('/resource_providers/{uuid}', {'GET': get_resource_provider,
                                    'PUT': update_resource_provider,
                                    'DELETE': delete_resource_provider}),
]
