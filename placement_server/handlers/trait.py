"""/traits (1.6): list, show, create custom, delete; and
/resource_providers/{uuid}/traits: show, replace, clear."""
import datetime
import re
from typing import Any

import webob

from placement_server import errors
from placement_server import util
from placement_server.db import providers
from placement_server.db import traits as db
from placement_server.schemas import trait as schema

_CUSTOM = re.compile(schema.CUSTOM_NAME)


def _bodiless(req: util.Request, status: int, modified: datetime.datetime,
              location: str | None = None) -> webob.Response:
    resp = util.no_content(status)
    if req.version >= (1, 15):
        resp.last_modified = modified   # naive UTC, rendered as GMT
        resp.headers['Cache-Control'] = 'no-cache'
    if location:
        resp.location = location
    return resp


def _list_filters(req: util.Request) -> dict[str, Any]:
    params = util.query_params(req, schema.LIST_QUERY)
    filters: dict[str, Any] = {}
    if 'name' in params:
        name = params['name']
        if name.startswith('in:'):
            filters['names'] = name[3:].split(',')
        elif name.startswith('startswith:'):
            filters['prefix'] = name[len('startswith:'):]
        else:
            raise errors.BadRequest(
                'Badly formatted name parameter. Expected name query string '
                'parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. '
                'Got: "%s"' % name)
    if 'associated' in params:
        # any case: osc-placement and openstacksdk send "True"
        associated = params['associated'].lower()
        if associated not in ('true', 'false'):
            raise errors.BadRequest('The query parameter "associated" only '
                                    'accepts "true" or "false"')
        filters['associated'] = associated == 'true'
    return filters


@util.since('1.6')
def list_traits(req: util.Request) -> webob.Response:
    req.context.can('placement:traits:list')
    util.check_accept(req)
    filters = _list_filters(req)
    with req.db.reader() as conn:
        rows = db.list_names(conn, **filters)
    return util.json_response(req, {'traits': [r['name'] for r in rows]},
                              modified=util.last_modified(*map(util.modified, rows)))


@util.since('1.6')
def get_trait(req: util.Request, name: str) -> webob.Response:
    req.context.can('placement:traits:show')
    with req.db.reader() as conn:
        row = db.get(conn, name)
    return _bodiless(req, 204, util.modified(row))


@util.since('1.6')
def put_trait(req: util.Request, name: str) -> webob.Response:
    req.context.can('placement:traits:update')
    if len(name) > 255 or not _CUSTOM.match(name):
        raise errors.BadRequest(
            'The trait is invalid. A valid trait must be no longer than 255 '
            'characters, start with the prefix "CUSTOM_" and use following '
            'characters: "A"-"Z", "0"-"9" and "_"')
    with req.db.writer() as conn:
        row, created = db.create(conn, name)
    return _bodiless(req, 201 if created else 204, util.modified(row),
                     location=util.url(req, '/traits/%s' % name))


@util.since('1.6')
def delete_trait(req: util.Request, name: str) -> webob.Response:
    req.context.can('placement:traits:delete')
    with req.db.writer() as conn:
        db.delete(conn, name)
    return util.no_content()


def _provider_traits(req: util.Request, names: list[str], generation: int,
                     modified: datetime.datetime) -> webob.Response:
    return util.json_response(
        req, {'traits': names, 'resource_provider_generation': generation},
        modified=modified)


@util.since('1.6')
def get_provider_traits(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:traits:list')
    util.check_accept(req)
    with req.db.reader() as conn:
        row = providers.get(conn, uuid, lead=providers.READ_LEADS['traits'])
        rows = db.of_provider(conn, row['id'])
    return _provider_traits(req, [r['name'] for r in rows], row['generation'],
                            util.last_modified(*map(util.modified, rows)))


@util.since('1.6')
def put_provider_traits(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:traits:update')
    data = util.extract_json(req, schema.PROVIDER_TRAITS)
    try:
        with req.db.writer() as conn:
            generation = db.set_for_provider(conn, uuid, data['traits'],
                                             data['resource_provider_generation'])
    except db.Unchanged as unchanged:
        generation = unchanged.generation
    # The body is what was just written: no need to read it back.
    return _provider_traits(req, sorted(set(data['traits'])), generation,
                            util.last_modified())


@util.since('1.6')
def delete_provider_traits(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:traits:delete')
    with req.db.writer() as conn:
        db.clear_provider(conn, uuid)
    return util.no_content()


ROUTES = [
    ('/traits', {'GET': list_traits}),
    ('/traits/{name}', {'GET': get_trait, 'PUT': put_trait, 'DELETE': delete_trait}),
    ('/resource_providers/{uuid}/traits', {'GET': get_provider_traits,
                                           'PUT': put_provider_traits,
                                           'DELETE': delete_provider_traits}),
]
