"""/resource_providers/{uuid}/aggregates (1.1): show and replace."""
import datetime
from typing import Any

import webob

from placement_server import errors
from placement_server import util
from placement_server.db import aggregates as db
from placement_server.db import providers
from placement_server.db import tables
from placement_server.schemas import aggregate as schema


def _render(req: util.Request, uuids: list[str], generation: int | None,
            modified: datetime.datetime) -> webob.Response:
    body: dict[str, Any] = {'aggregates': uuids}
    if req.version >= (1, 19):
        body['resource_provider_generation'] = generation
    return util.json_response(req, body, modified=modified)


@util.since('1.1')
def get_aggregates(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:aggregates:list')
    util.check_accept(req)
    with req.db.reader() as conn:
        row = providers.get(conn, uuid)
        rows = db.of_provider(conn, row['id'])
    return _render(req, [r['uuid'] for r in rows], row['generation'],
                   util.last_modified(*map(util.modified, rows)))


@util.since('1.1')
def put_aggregates(req: util.Request, uuid: str) -> webob.Response:
    req.context.can('placement:resource_providers:aggregates:update')
    try:
        if req.version >= (1, 19):
            data = util.extract_json(req, schema.PUT_1_19)
            aggregates, generation = data['aggregates'], data['resource_provider_generation']
        else:
            aggregates, generation = util.extract_json(req, schema.PUT_1_1), None
    except errors.BadRequest:
        # As upstream: an unknown provider is a 404 before its body is judged.
        with req.db.reader() as conn:
            providers.get(conn, uuid)
        raise
    # Stored as spelt, as upstream: member_of finds them by that spelling.
    # A spelling longer than the column (braces, "urn:uuid:"; upstream's
    # PostgreSQL refuses it, a 500) is stored in canonical form.
    aggregates = [a if len(a) <= tables.UUID_LENGTH else util.normalize_uuid(a) for a in aggregates]
    with req.db.writer() as conn:
        generation = db.set_for_provider(conn, uuid, aggregates, generation)
    # The body is what was just written, in the order given (as upstream).
    return _render(req, list(dict.fromkeys(aggregates)), generation, util.last_modified())


ROUTES = [
    ('/resource_providers/{uuid}/aggregates', {'GET': get_aggregates,
                                               'PUT': put_aggregates}),
]
