"""JSON schemas for /traits and /resource_providers/{uuid}/traits."""
from placement_server.schemas import Schema

CUSTOM_NAME = '^CUSTOM_[A-Z0-9_]+$'

LIST_QUERY: Schema = {
    'type': 'object',
    'properties': {'name': {'type': 'string'}, 'associated': {'type': 'string'}},
    'additionalProperties': False,
}

# Names are only checked for shape here: an unknown name is reported as
# "No such trait" (400) by the write itself.
PROVIDER_TRAITS: Schema = {
    'type': 'object',
    'properties': {
        'traits': {'type': 'array',
                   'items': {'type': 'string', 'minLength': 1, 'maxLength': 255}},
        'resource_provider_generation': {'type': 'integer'},
    },
    'required': ['traits', 'resource_provider_generation'],
    'additionalProperties': False,
}
