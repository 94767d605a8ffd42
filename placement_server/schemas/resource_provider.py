"""JSON schemas for /resource_providers bodies and query strings."""
import copy

from placement_server.microversion import Version
from placement_server.schemas import Schema

UUID: Schema = {'type': 'string', 'format': 'uuid'}
NAME: Schema = {'type': 'string', 'minLength': 1, 'maxLength': 200}

POST_1_0: Schema = {
    'type': 'object',
    'properties': {'name': NAME, 'uuid': UUID},
    'required': ['name'],
    'additionalProperties': False,
}

# 1.14: a provider can be created below a parent.
POST_1_14: Schema = copy.deepcopy(POST_1_0)
POST_1_14['properties']['parent_provider_uuid'] = {'anyOf': [UUID, {'type': 'null'}]}

PUT_1_0: Schema = {
    'type': 'object',
    'properties': {'name': NAME},
    'required': ['name'],
    'additionalProperties': False,
}

PUT_1_14: Schema = copy.deepcopy(PUT_1_0)
PUT_1_14['properties']['parent_provider_uuid'] = {'anyOf': [UUID, {'type': 'null'}]}

# The list's query string: each version adds filters. Values are checked
# in detail by placement_server.query; here only the key set and the plain
# string/uuid shapes.
_STRING: Schema = {'type': 'string'}
GET_1_0: Schema = {
    'type': 'object',
    'properties': {'name': _STRING, 'uuid': UUID},
    'additionalProperties': False,
}


def _with(base: Schema, **props: Schema) -> Schema:
    schema = copy.deepcopy(base)
    schema['properties'].update(props)
    return schema


GET_1_3: Schema = _with(GET_1_0, member_of=_STRING)
GET_1_4: Schema = _with(GET_1_3, resources=_STRING)
GET_1_14: Schema = _with(GET_1_4, in_tree=UUID)
GET_1_18: Schema = _with(GET_1_14, required=_STRING)


def list_schema(version: Version) -> Schema:
    for wanted, schema in (((1, 18), GET_1_18), ((1, 14), GET_1_14),
                           ((1, 4), GET_1_4), ((1, 3), GET_1_3)):
        if version >= wanted:
            return schema
    return GET_1_0
