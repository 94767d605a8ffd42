"""/resource_providers: create, list (with filters), show, update, delete."""
import json
import uuid as uuidlib

from placement_server import errors
from placement_server import query
from placement_server import util
from placement_server import view as resource_view
from placement_server.candidates import search
from placement_server.db import api
from placement_server.db import providers as db
from placement_server.schemas import resource_provider as schema

_LINKS = (((1, 0), 'self', ''), ((1, 0), 'inventories', '/inventories'),
          ((1, 0), 'usages', '/usages'), ((1, 1), 'aggregates', '/aggregates'),
          ((1, 6), 'traits', '/traits'), ((1, 11), 'allocations', '/allocations'))


def renderer(req):
    """A function rendering a provider row for this request's version.

    What depends on the version is decided once, not per provider: a list
    renders thousands of them.
    """
    version = req.version
    links = [(rel, suffix) for wanted, rel, suffix in _LINKS if version >= wanted]
    nested = version >= (1, 14)
    prefix = util.url(req, '/resource_providers/')

    def render(row):
        # By position, in db.view_query's column order: the list renders the
        # database's own tuples.
        uuid = row[1]
        base = prefix + uuid
        body = {'uuid': uuid, 'name': row[2], 'generation': row[3],
                'links': [{'rel': rel, 'href': base + suffix} for rel, suffix in links]}
        if nested:
            body['parent_provider_uuid'] = row[6]
            body['root_provider_uuid'] = row[7]
        return body
    return render


def list_body(req, rows):
    """The JSON of a provider list, the same as rendering each row with
    ``renderer`` and encoding the whole, written as text: at 1000
    providers building the dicts cost more than the query."""
    version = req.version
    quoted = json.encoder.encode_basestring   # a JSON string, quotes included
    # Each provider's text up to its name is these pieces joined by its
    # uuid: '{"uuid":"<uuid>","links":[{"rel":"self","href":".../<uuid>"},...'
    pieces = ['{"uuid":"']
    links = [(rel, suffix) for wanted, rel, suffix in _LINKS if version >= wanted]
    # The links' common start as JSON text, less its closing quote.
    prefix = quoted(util.url(req, '/resource_providers/'))[:-1]
    after = '","links":['
    for rel, suffix in links:
        pieces.append(after + '{"rel":"%s","href":%s' % (rel, prefix))
        after = suffix + '"},'
    pieces.append(after[:-1] + '],"name":')
    nested = version >= (1, 14)

    def one(row):
        head = row[1].join(pieces) + quoted(row[2])
        if nested:
            return '%s,"generation":%d,"parent_provider_uuid":%s,"root_provider_uuid":%s}' % (
                head, row[3], 'null' if row[6] is None else quoted(row[6]),
                'null' if row[7] is None else quoted(row[7]))
        return '%s,"generation":%d}' % (head, row[3])
    return ('{"resource_providers":[' + ','.join(map(one, rows)) + ']}').encode()


def _modified(row):
    return row.updated_at or row.created_at


@api.retry_on_deadlock
def _create(database, uuid, name, parent_uuid):
    try:
        with database.writer() as conn:
            return db.create(conn, uuid, name, parent_uuid)
    except api.CONSTRAINT_VIOLATION:   # a new root's: at the commit
        with database.reader() as conn:
            raise db.clash_error(conn, uuid, name)


def create_resource_provider(req):
    req.context.can('placement:resource_providers:create')
    data = util.extract_json(
        req, schema.POST_1_14 if req.version >= (1, 14) else schema.POST_1_0)
    uuid = util.normalize_uuid(data['uuid']) if 'uuid' in data else str(uuidlib.uuid4())
    parent = data.get('parent_provider_uuid')
    with errors.worded(db.Refused, 'Unable to create resource provider "%s", %s: '
                       % (data['name'], uuid)):
        row = _create(req.db, uuid, data['name'],
                      util.normalize_uuid(parent) if parent else None)
    location = util.url(req, '/resource_providers/%s' % uuid)
    if req.version >= (1, 20):
        # 1.20 answers 200 (not 201) with the provider.
        return util.json_response(req, renderer(req)(row),
                                  modified=_modified(row),
                                  headers={'Location': location})
    resp = util.no_content(201)
    resp.location = location
    return resp


def _filters(req):
    """The list's filters from the query: (name, uuid, {class: amount},
    [any-of trait sets], forbidden traits, [any-of aggregate sets],
    forbidden aggregates, in_tree)."""
    params = util.query_params(req, schema.list_schema(req.version))
    member_of, forbidden_aggs, required, forbidden = [], set(), [], set()
    if 'member_of' in params:
        member_of, forbidden_aggs = query.parse_member_of(req.GET.getall('member_of'),
                                                          req.version)
    if 'required' in params:
        required, forbidden = query.parse_required(req.GET.getall('required'), req.version)
    return (params.get('name') or None,   # an empty name filters nothing, as upstream
            util.normalize_uuid(params['uuid']) if 'uuid' in params else None,
            query.parse_resources(params['resources']) if 'resources' in params else {},
            required, forbidden, member_of, forbidden_aggs,
            util.normalize_uuid(params['in_tree']) if 'in_tree' in params else None)


def _unknown_traits(names):
    return errors.BadRequest('Invalid trait(s) in "required" parameter: No such '
                             'trait(s): %s.' % ', '.join(names))


def _matching(view, filters):
    """Ids of the providers the filters select, from the resource view.
    Unknown classes and traits are 400s; unknown aggregates or an unknown
    in_tree provider match nothing."""
    name, uuid, resources, required, forbidden, member_of, forbidden_aggs, in_tree = filters
    # Upstream's order: a filter that leaves nothing ends the search before
    # a later unknown name is looked at.
    tree_root = None
    if in_tree is not None:
        tree_root = search.root_of_uuid(view, in_tree)
        if tree_root is None:
            return []
    for any_of in required:
        for trait in sorted(any_of):
            if trait not in view.trait_ids:
                raise _unknown_traits([trait])
    required_ids = [frozenset(view.trait_ids[t] for t in any_of) for any_of in required]
    if required_ids and not any(all(mine & any_of for any_of in required_ids)
                                for mine in view.traits.values()):
        return []
    if set(forbidden) - set(view.trait_ids):
        raise _unknown_traits(sorted(set(forbidden) - set(view.trait_ids)))
    aggregates = [{view.aggregate_ids[u] for u in any_of if u in view.aggregate_ids}
                  for any_of in member_of]
    if any(not ids for ids in aggregates):
        return []
    for rc in resources:
        if rc not in view.class_ids:
            raise errors.BadRequest('Invalid resource class in resources parameter: No such '
                                    'resource class %s.' % rc)
    group = search.GroupQuery(
        suffix='', granular=False,
        resources={view.class_ids[rc]: amount for rc, amount in resources.items()},
        required=required_ids,
        forbidden={view.trait_ids[t] for t in forbidden},
        member_of=aggregates,
        forbidden_aggs={view.aggregate_ids[u] for u in forbidden_aggs
                        if u in view.aggregate_ids},
        tree_root=tree_root)
    found = search.providers(view, group)
    if uuid is not None:
        found = [rp for rp in found if view.rows[rp].uuid == uuid]
    if name is not None:
        found = [rp for rp in found if view.details[rp][0] == name]
    return found


def _listed(req, view, filters):
    """The list's body and its newest provider's time, from ``view``."""
    found = _matching(view, filters)
    rows, details = view.rows, view.details
    # In db.view_query's column order, which list_body renders.
    listed = [(rp, rows[rp].uuid, details[rp][0], rows[rp].generation, details[rp][1],
               details[rp][2], rows[parent].uuid if (parent := rows[rp].parent) else None,
               rows[rows[rp].root].uuid) for rp in found]
    return list_body(req, listed), view.last_modified(found)


def list_resource_providers(req):
    req.context.can('placement:resource_providers:list')
    util.check_accept(req)
    filters = _filters(req)
    with req.db.reader() as conn:
        view = resource_view.of(conn)
        with view.lock:
            view.refresh(conn)
            # The same query at the same version, nothing changed: the
            # same answer (rendering 1000 providers costs a millisecond).
            body, newest = view.kept(
                ('providers', req.version, req.environ.get('SCRIPT_NAME', ''),
                 req.environ.get('QUERY_STRING', '')),
                lambda: _listed(req, view, filters))
    return util.json_response(req, body, modified=util.last_modified(newest))


def get_resource_provider(req, uuid):
    req.context.can('placement:resource_providers:show')
    util.check_accept(req)
    with req.db.reader() as conn:
        row = db.get_view(conn, uuid)
    return util.json_response(req, renderer(req)(row), modified=_modified(row))


@api.retry_on_deadlock
def _update(database, uuid, data, allow_reparent):
    with database.writer() as conn:
        parent = data.get('parent_provider_uuid', db.UNSET)
        if parent not in (None, db.UNSET):
            parent = util.normalize_uuid(parent)
        db.update(conn, uuid, data['name'], parent, allow_reparent)
        return db.get_view(conn, uuid)


def update_resource_provider(req, uuid):
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
    return util.json_response(req, renderer(req)(row), modified=_modified(row))


@api.retry_on_deadlock
def _delete(database, uuid):
    with database.writer() as conn:
        db.delete(conn, uuid)


def delete_resource_provider(req, uuid):
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
