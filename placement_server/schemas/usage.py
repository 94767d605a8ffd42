"""JSON schemas for GET /usages (query string)."""
import copy

from placement_server.schemas import Schema

_ID: Schema = {'type': 'string', 'minLength': 1, 'maxLength': 255}

GET_1_9: Schema = {
    'type': 'object',
    'properties': {'project_id': _ID, 'user_id': _ID},
    'required': ['project_id'],
    'additionalProperties': False,
}

# 1.38: filter or group by consumer type; 'all' and 'unknown' are special.
GET_1_38: Schema = copy.deepcopy(GET_1_9)
GET_1_38['properties']['consumer_type'] = {
    'type': 'string', 'pattern': '^([A-Z0-9_]+|all|unknown)$',
    'minLength': 1, 'maxLength': 255}
