"""/allocations/{consumer_uuid} (GET, PUT, DELETE), POST /allocations (1.13)
and GET /resource_providers/{uuid}/allocations."""
import collections
from collections.abc import Iterable
from collections.abc import Mapping
import datetime
from typing import Any

import webob

from placement_server import errors
from placement_server import util
from placement_server.db import allocations as db
from placement_server.db import consumers
from placement_server.db import providers
from placement_server.db import usages
from placement_server.schemas import allocation as schema


def _consumer_uuid(value: str) -> str:
    """PUT's path uuid in canonical form, as upstream stores it (a body's
    consumer and provider uuids stay as spelt: upstream looks them up,
    and stores consumers, so)."""
    try:
        return util.normalize_uuid(value)
    except ValueError:
        raise errors.BadRequest('Malformed consumer_uuid: %s' % value)


def _provider_uuids(allocations: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {rp_uuid: entry['resources'] for rp_uuid, entry in allocations.items()}


def _request(req: util.Request, consumer_uuid: str, data: Any) -> db.ConsumerAllocations:
    """A db.ConsumerAllocations from one consumer's part of a request body."""
    allocations = data['allocations']
    if isinstance(allocations, list):
        # Before 1.12: a list of {resource_provider: {uuid}, resources}.
        allocations = {a['resource_provider']['uuid']: {'resources': a['resources']}
                       for a in allocations}
    project_id, user_id = data.get('project_id'), data.get('user_id')
    if project_id is None:
        # Before 1.8 the project and user are optional ("incomplete consumer").
        project_id = req.conf.placement.incomplete_consumer_project_id
        user_id = req.conf.placement.incomplete_consumer_user_id
    return db.ConsumerAllocations(
        consumer_uuid, _provider_uuids(allocations), project_id, user_id,
        data['consumer_generation'] if req.version >= (1, 28) else db.UNCHECKED,
        data.get('consumer_type'))


def _newest(rows: Iterable[Mapping[str, Any]]) -> datetime.datetime:
    return util.last_modified(*map(util.modified, rows))


def list_for_consumer(req: util.Request, consumer_uuid: str) -> webob.Response:
    req.context.can('placement:allocations:list')
    util.check_accept(req)
    with req.db.reader() as conn:
        rows = db.get_by_consumer(conn, consumer_uuid)
        consumer = consumers.get(conn, consumer_uuid) if rows else None
    allocations: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = allocations.setdefault(row['resource_provider_uuid'], {
            'generation': row['resource_provider_generation'], 'resources': {}})
        entry['resources'][row['resource_class']] = row['used']
    body: dict[str, Any] = {'allocations': allocations}
    if consumer is not None and req.version >= (1, 12):
        body['project_id'] = consumer['project_external_id']
        body['user_id'] = consumer['user_external_id']
        if req.version >= (1, 28):
            body['consumer_generation'] = consumer['generation']
        if req.version >= (1, 38):
            body['consumer_type'] = consumer['consumer_type'] or usages.UNKNOWN
    return util.json_response(req, body, modified=_newest(rows))


def list_for_provider(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:allocations:list')
    util.check_accept(req)
    with req.db.reader() as conn:
        provider = providers.get(conn, uuid, lead=providers.READ_LEADS['allocations'])
        rows = db.get_by_provider(conn, provider['id'])
    allocations: dict[str, dict[str, Any]] = collections.defaultdict(
        lambda: {'resources': {}})
    for row in rows:
        entry = allocations[row['consumer_uuid']]
        entry['resources'][row['resource_class']] = row['used']
        if req.version >= (1, 28):
            entry['consumer_generation'] = row['consumer_generation']
    body = {'allocations': dict(allocations),
            'resource_provider_generation': provider['generation']}
    return util.json_response(req, body, modified=_newest(rows))


def set_for_consumer(req: util.Request, consumer_uuid: str) -> webob.Response:
    req.context.can('placement:allocations:update')
    consumer_uuid = _consumer_uuid(consumer_uuid)
    data = util.extract_json(req, schema.put_schema(req.version))
    with errors.worded(errors.ResourceClassNotFound,
                       'Unable to allocate inventory for consumer %s: ' % consumer_uuid):
        db.write_or_replay(req.db, [_request(req, consumer_uuid, data)])
    return util.no_content()


@util.since('1.13')
def set_allocations(req: util.Request) -> webob.Response:
    req.context.can('placement:allocations:manage')
    data = util.extract_json(req, schema.post_schema(req.version))
    requests = {}
    for consumer_uuid, part in data.items():
        requests[consumer_uuid] = _request(req, consumer_uuid, part)
    with errors.worded(errors.ResourceClassNotFound, 'Unable to allocate inventory '):
        db.write_or_replay(req.db, list(requests.values()))
    return util.no_content()


def delete_for_consumer(req: util.Request, consumer_uuid: str) -> webob.Response:
    req.context.can('placement:allocations:delete')
    with req.db.writer() as conn:
        db.delete_for_consumer(conn, consumer_uuid)
    return util.no_content()


ROUTES = [
    ('/allocations', {'POST': set_allocations}),
    ('/allocations/{consumer_uuid}', {'GET': list_for_consumer,
                                      'PUT': set_for_consumer,
                                      'DELETE': delete_for_consumer}),
    ('/resource_providers/{uuid}/allocations', {'GET': list_for_provider}),
]
