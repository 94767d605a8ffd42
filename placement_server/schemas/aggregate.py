"""JSON schemas for /resource_providers/{uuid}/aggregates."""
import copy

from placement_server.schemas import Schema

AGGREGATES: Schema = {
    'type': 'array',
    'items': {'type': 'string', 'format': 'uuid'},
    'uniqueItems': True,
}

# Before 1.19 the body is the bare list.
PUT_1_1 = AGGREGATES

# 1.19: the list and the provider generation it was computed from.
PUT_1_19: Schema = {
    'type': 'object',
    'properties': {
        'aggregates': copy.deepcopy(AGGREGATES),
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['aggregates', 'resource_provider_generation'],
    'additionalProperties': False,
}
