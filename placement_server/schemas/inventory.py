"""JSON schemas for /resource_providers/{uuid}/inventories."""
import copy

from placement_server.schemas import Schema

# Inventory integers are stored in signed 32-bit columns.
MAX_INT = 2147483647
# allocation_ratio is stored as a single precision float.
MAX_FLOAT = 3.40282e+38
RESOURCE_CLASS: Schema = {'type': 'string', 'pattern': '^[A-Z0-9_]+$', 'maxLength': 255}


def _integer(minimum: int) -> Schema:
    return {'type': 'integer', 'minimum': minimum, 'maximum': MAX_INT}


# One inventory record as PUT /inventories/{rc} takes it.
INVENTORY: Schema = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'total': _integer(1),
        'reserved': _integer(0),
        'min_unit': _integer(1),
        'max_unit': _integer(1),
        'step_size': _integer(1),
        'allocation_ratio': {'type': 'number', 'maximum': MAX_FLOAT},
    },
    'required': ['total', 'resource_provider_generation'],
    'additionalProperties': False,
}

# POST /inventories names the class in the body; no generation needed.
POST: Schema = copy.deepcopy(INVENTORY)
POST['properties']['resource_class'] = RESOURCE_CLASS
POST['required'] = ['total', 'resource_class']

# A record inside PUT /inventories: the generation is given once, outside.
RECORD: Schema = copy.deepcopy(INVENTORY)
RECORD['required'] = ['total']

PUT_ALL: Schema = {
    'type': 'object',
    'properties': {
        'resource_provider_generation': {'type': 'integer'},
        'inventories': {
            'type': 'object',
            'patternProperties': {RESOURCE_CLASS['pattern']: RECORD},
            'additionalProperties': False,
        },
    },
    'required': ['resource_provider_generation', 'inventories'],
    'additionalProperties': False,
}

# What a record gets for the fields it leaves out.
DEFAULTS: Schema = {'reserved': 0, 'min_unit': 1, 'max_unit': MAX_INT,
            'step_size': 1, 'allocation_ratio': 1.0}
