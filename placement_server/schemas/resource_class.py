"""JSON schemas for /resource_classes."""
from placement_server.schemas import Schema

CUSTOM_NAME: Schema = {'type': 'string', 'pattern': '^CUSTOM_[A-Z0-9_]+$', 'maxLength': 255}

POST: Schema = {
    'type': 'object',
    'properties': {'name': CUSTOM_NAME},
    'required': ['name'],
    'additionalProperties': False,
}

# Before 1.7, PUT renames: the body names the new class.
PUT_1_2 = POST
