"""/resource_providers/{uuid}/inventories: all of a provider's inventory at
once (GET, PUT, DELETE from 1.5, POST one class) and one class at a time
(GET, PUT, DELETE)."""
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
import webob

from placement_server import errors
from placement_server import util
from placement_server.db import inventories as db
from placement_server.db import providers
from placement_server.schemas import inventory as schema


def _with_defaults(record: Mapping[str, Any]) -> dict[str, Any]:
    inv = dict(schema.DEFAULTS)
    inv.update(record)
    return inv


def _render(row: Mapping[str, Any]) -> dict[str, Any]:
    return {f: row[f] for f in db.FIELDS}


def _check_capacity(req: util.Request, provider: Mapping[str, Any],
                    inventories: Mapping[str, Mapping[str, Any]], action: str = 'update'
                    ) -> None:
    db.check_capacity(provider['uuid'], inventories,
                      reserved_may_equal_total=req.version >= (1, 26), action=action)


def _check_generation(provider: Mapping[str, Any], generation: int) -> None:
    if generation != provider['generation']:
        raise providers.ConcurrentUpdate(providers.CONFLICT.format(
            expected=generation, actual=provider['generation']))


def _body(req: util.Request, uuid: str, schema_: util.Schema) -> Any:
    """The request's body; as upstream, an unknown provider is a 404
    before its body is judged."""
    try:
        return util.extract_json(req, schema_)
    except errors.BadRequest:
        with req.db.reader() as conn:
            providers.get(conn, uuid)
        raise


def _lock(conn: sa.Connection, uuid: str) -> Any:
    # Writers of one provider (inventories or allocations) queue on its row:
    # the loser then sees the winner's generation and gets a clean 409
    # instead of a deadlock.
    return providers.get(conn, uuid, for_update=True)


def _location(req: util.Request, uuid: str, rc: str) -> str:
    return util.url(req, '/resource_providers/%s/inventories/%s' % (uuid, rc))


def _send_all(req: util.Request, generation: int, rows: Mapping[str, Mapping[str, Any]]
              ) -> webob.Response:
    body = {'resource_provider_generation': generation,
            'inventories': {rc: _render(row) for rc, row in rows.items()}}
    return util.json_response(
        req, body, modified=util.last_modified(*map(util.modified, rows.values())))


def _send_one(req: util.Request, generation: int, row: Mapping[str, Any], status: int = 200,
              headers: Mapping[str, str] | None = None) -> webob.Response:
    body = dict(_render(row), resource_provider_generation=generation)
    return util.json_response(req, body, status=status, modified=util.modified(row),
                              headers=headers)


def list_inventories(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:inventories:list')
    util.check_accept(req)
    with req.db.reader() as conn:
        provider = providers.get(conn, uuid, lead=providers.READ_LEADS['inventories'])
        rows = db.get_all(conn, provider['id'])
    return _send_all(req, provider['generation'], rows)


def set_inventories(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:inventories:update')
    data = _body(req, uuid, schema.PUT_ALL)
    inventories = {rc: _with_defaults(rec) for rc, rec in data['inventories'].items()}
    with req.db.writer() as conn:
        provider, current = db.take_with_current(
            conn, uuid, data['resource_provider_generation'], inventories)
        _check_capacity(req, provider, inventories)
        with errors.worded(errors.ResourceClassNotFound, 'Unknown resource class in '
                           'inventory for resource provider %s: ' % provider['uuid']), \
                errors.worded(db.InUse, 'update conflict: '):
            rows = db.write_all(conn, provider, inventories, current)
    # The body is what was just written: no need to read it back.
    return _send_all(req, provider['generation'], dict(sorted(rows.items())))


def delete_inventories(req: util.Request, uuid: str) -> webob.Response:
    if req.version < (1, 5):
        # The route exists before 1.5, the method does not.
        raise errors.method_not_allowed(req.method, 'GET, POST, PUT', message='')
    req.context.can('placement:resource_providers:inventories:delete')
    with req.db.writer() as conn:
        provider = _lock(conn, uuid)
        db.replace_inventories(conn, provider, {})
    return util.no_content()


def create_inventory(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:inventories:create')
    data = _body(req, uuid, schema.POST)
    rc = data.pop('resource_class')
    data.pop('resource_provider_generation', None)
    inv = _with_defaults(data)
    with req.db.writer() as conn:
        provider = _lock(conn, uuid)
        _check_capacity(req, provider, {rc: inv}, action='create')
        with errors.worded(errors.ResourceClassNotFound, 'Unable to create inventory '
                           'for resource provider %s: ' % provider['uuid']):
            generation = db.add_inventory(conn, provider, rc, inv)
        row = db.get_all(conn, provider['id'])[rc]
    return _send_one(req, generation, row, status=201,
                     headers={'Location': _location(req, provider['uuid'], rc)})


def get_inventory(req: util.Request, uuid: str, resource_class: str) -> webob.Response:
    req.context.can('placement:resource_providers:inventories:show')
    util.check_accept(req)
    with req.db.reader() as conn:
        provider = providers.get(conn, uuid, lead=providers.READ_LEADS['inventories'])
        row = db.get_all(conn, provider['id']).get(resource_class)
    if row is None:
        raise errors.NotFound('No inventory of class %s for %s'
                              % (resource_class, provider['uuid']))
    return _send_one(req, provider['generation'], row)


def update_inventory(req: util.Request, uuid: str, resource_class: str
                     ) -> webob.Response:
    req.context.can('placement:resource_providers:inventories:update')
    data = _body(req, uuid, schema.INVENTORY)
    generation = data.pop('resource_provider_generation')
    inv = _with_defaults(data)
    with req.db.writer() as conn:
        provider = _lock(conn, uuid)
        _check_generation(provider, generation)
        _check_capacity(req, provider, {resource_class: inv})
        generation = db.update_inventory(conn, provider, resource_class, inv, generation)
        row = db.get_all(conn, provider['id'])[resource_class]
    return _send_one(req, generation, row)


def delete_inventory(req: util.Request, uuid: str, resource_class: str
                     ) -> webob.Response:
    req.context.can('placement:resource_providers:inventories:delete')
    with req.db.writer() as conn:
        provider = _lock(conn, uuid)
        try:
            db.delete_inventory(conn, provider, resource_class)
        except db.InUse as e:
            # Upstream answers this one as a concurrent update.
            raise providers.ConcurrentUpdate('Unable to delete inventory of class %s: %s'
                                             % (resource_class, e.message))
    return util.no_content()


ROUTES = [
    ('/resource_providers/{uuid}/inventories', {
        'GET': list_inventories, 'PUT': set_inventories,
        'POST': create_inventory, 'DELETE': delete_inventories}),
    ('/resource_providers/{uuid}/inventories/{resource_class}', {
        'GET': get_inventory, 'PUT': update_inventory,
        'DELETE': delete_inventory}),
]
