"""POST /reshaper (1.30): replace inventories and allocations atomically."""
from typing import Any

import webob

from placement_server import errors
from placement_server import util
from placement_server.db import allocations
from placement_server.db import consumers as consumers_db
from placement_server.db import inventories
from placement_server.db import reshaper as db
from placement_server.schemas import inventory as inventory_schema
from placement_server.schemas import reshaper as schema


def _inventories(data: dict[str, Any]
                 ) -> dict[str, tuple[int, dict[str, dict[str, Any]]]]:
    result = {}
    for rp_uuid, part in data.items():
        records = {}
        for rc, record in part['inventories'].items():
            records[rc] = dict(inventory_schema.DEFAULTS, **record)
        inventories.check_capacity(rp_uuid, records, reserved_may_equal_total=True)
        result[rp_uuid] = (part['resource_provider_generation'], records)
    return result


def _consumers(data: dict[str, Any]) -> list[allocations.ConsumerAllocations]:
    return [allocations.ConsumerAllocations(
        # uuids as spelt: upstream looks them up (and stores consumers) so
        consumer, {rp: entry['resources'] for rp, entry in part['allocations'].items()},
        part['project_id'], part['user_id'], part['consumer_generation'],
        part.get('consumer_type'))
        for consumer, part in data.items()]


@util.since('1.30')
def reshape(req: util.Request) -> webob.Response:
    req.context.can('placement:reshaper:reshape')
    data = util.extract_json(req, schema.for_version(req.version))
    wanted = _inventories(data['inventories'])
    consumers = _consumers(data['allocations'])
    # (a consumer inserted meanwhile shows at the write's next statement)
    with consumers_db.raced('consumer'), req.db.writer() as conn, \
            errors.worded(errors.ResourceClassNotFound, 'malformed reshaper data: '), \
            errors.worded(inventories.InUse, 'update conflict: '):
        db.reshape(conn, wanted, consumers)
    return util.no_content()


ROUTES = [
    ('/reshaper', {'POST': reshape}),
]
