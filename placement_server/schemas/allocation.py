"""JSON schemas for allocation writes, one per microversion step.

1.0   list of {resource_provider: {uuid}, resources}
1.8   + project_id, user_id (required)
1.12  dict keyed by provider uuid: {resources, generation (ignored)}
1.13  POST /allocations: that dict per consumer uuid; empty allocations
      remove the consumer's allocations
1.28  + consumer_generation (required, null for a new consumer); PUT may
      send empty allocations too
1.34  + mappings (uuids checked, not stored)
1.38  + consumer_type (required)
"""
import copy

from placement_server.microversion import Version
from placement_server.schemas import Schema
from placement_server.schemas import inventory

UUID: Schema = {'type': 'string', 'format': 'uuid'}
UUID_KEY = '^[0-9a-fA-F-]{36}$'
_ID: Schema = {'type': 'string', 'minLength': 1, 'maxLength': 255}

# Amounts have no maximum, as upstream's: one past the database's integers
# fails the claim's max_unit check (409) first, as upstream's does.
RESOURCES: Schema = {
    'type': 'object',
    'minProperties': 1,
    'patternProperties': {
        inventory.RESOURCE_CLASS['pattern']: {'type': 'integer', 'minimum': 1},
    },
    'additionalProperties': False,
}

PUT_1_0: Schema = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'array',
            'minItems': 1,
            'items': {
                'type': 'object',
                'properties': {
                    'resource_provider': {
                        'type': 'object',
                        'properties': {'uuid': UUID},
                        'required': ['uuid'],
                        'additionalProperties': False,
                    },
                    'resources': RESOURCES,
                },
                'required': ['resource_provider', 'resources'],
                'additionalProperties': False,
            },
        },
    },
    'required': ['allocations'],
    'additionalProperties': False,
}

PUT_1_8: Schema = copy.deepcopy(PUT_1_0)
PUT_1_8['properties'].update(project_id=_ID, user_id=_ID)
PUT_1_8['required'] += ['project_id', 'user_id']

PUT_1_12: Schema = {
    'type': 'object',
    'properties': {
        'allocations': {
            'type': 'object',
            'minProperties': 1,
            'patternProperties': {
                UUID_KEY: {
                    'type': 'object',
                    'properties': {'generation': {'type': 'integer'},
                                   'resources': RESOURCES},
                    'required': ['resources'],
                    'additionalProperties': False,
                },
            },
            'additionalProperties': False,
        },
        'project_id': _ID,
        'user_id': _ID,
    },
    'required': ['allocations', 'project_id', 'user_id'],
    'additionalProperties': False,
}

# A consumer's entry that may be empty (meaning: remove its allocations).
_EMPTYABLE: Schema = copy.deepcopy(PUT_1_12)
_EMPTYABLE['properties']['allocations']['minProperties'] = 0

PUT_1_28: Schema = copy.deepcopy(_EMPTYABLE)
PUT_1_28['properties']['consumer_generation'] = {'type': ['integer', 'null']}
PUT_1_28['required'].append('consumer_generation')

PUT_1_34: Schema = copy.deepcopy(PUT_1_28)
PUT_1_34['properties']['mappings'] = {
    'type': 'object',
    # an empty mappings object is refused, as upstream does
    'minProperties': 1,
    # Upstream's: its group pattern unanchored and other keys let through,
    # so only the lists of keys holding a group name must hold uuids.
    'patternProperties': {
        '[a-zA-Z0-9_-]{1,64}': {'type': 'array', 'minItems': 1, 'items': UUID},
    },
}

PUT_1_38: Schema = copy.deepcopy(PUT_1_34)
PUT_1_38['properties']['consumer_type'] = {
    'type': 'string', 'pattern': '^[A-Z0-9_]+$', 'minLength': 1, 'maxLength': 255}
PUT_1_38['required'].append('consumer_type')


def _post(consumer_schema: Schema) -> Schema:
    return {'type': 'object', 'minProperties': 1,
            'patternProperties': {UUID_KEY: consumer_schema},
            'additionalProperties': False}


POST_1_13: Schema = _post(_EMPTYABLE)
POST_1_28: Schema = _post(PUT_1_28)
POST_1_34: Schema = _post(PUT_1_34)
POST_1_38: Schema = _post(PUT_1_38)


def put_schema(version: Version) -> Schema:
    for since, schema in (((1, 38), PUT_1_38), ((1, 34), PUT_1_34),
                          ((1, 28), PUT_1_28), ((1, 12), PUT_1_12),
                          ((1, 8), PUT_1_8)):
        if version >= since:
            return schema
    return PUT_1_0


def post_schema(version: Version) -> Schema:
    for since, schema in (((1, 38), POST_1_38), ((1, 34), POST_1_34),
                          ((1, 28), POST_1_28)):
        if version >= since:
            return schema
    return POST_1_13
