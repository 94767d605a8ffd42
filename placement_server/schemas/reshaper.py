"""JSON schema for POST /reshaper (1.30; consumer_type required from 1.38)."""
import copy

from placement_server.microversion import Version
from placement_server.schemas import Schema
from placement_server.schemas import allocation
from placement_server.schemas import inventory


def _allocations(post_schema: Schema) -> Schema:
    # Unlike POST /allocations, a reshape may move no allocation at all.
    schema = copy.deepcopy(post_schema)
    schema.pop('minProperties', None)
    return schema


POST_1_30: Schema = {
    'type': 'object',
    'properties': {
        'inventories': {
            'type': 'object',
            'patternProperties': {allocation.UUID_KEY: inventory.PUT_ALL},
            # Nothing to reshape without at least one provider.
            'minProperties': 1,
            'additionalProperties': False,
        },
        'allocations': _allocations(allocation.POST_1_28),
    },
    'required': ['inventories', 'allocations'],
    'additionalProperties': False,
}

POST_1_34: Schema = copy.deepcopy(POST_1_30)
POST_1_34['properties']['allocations'] = _allocations(allocation.POST_1_34)

POST_1_38: Schema = copy.deepcopy(POST_1_30)
POST_1_38['properties']['allocations'] = _allocations(allocation.POST_1_38)


def for_version(version: Version) -> Schema:
    for since, schema in (((1, 38), POST_1_38), ((1, 34), POST_1_34)):
        if version >= since:
            return schema
    return POST_1_30
