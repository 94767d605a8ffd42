"""JSON schema for POST /reshaper (1.30; consumer_type required from 1.38)."""
import copy

from placement_server.schemas import allocation
from placement_server.schemas import inventory

POST_1_30 = {
    'type': 'object',
    'properties': {
        'inventories': {
            'type': 'object',
            'patternProperties': {allocation.UUID_KEY: inventory.PUT_ALL},
            # Nothing to reshape without at least one provider.
            'minProperties': 1,
            'additionalProperties': False,
        },
        'allocations': allocation.POST_1_28,
    },
    'required': ['inventories', 'allocations'],
    'additionalProperties': False,
}

POST_1_38 = copy.deepcopy(POST_1_30)
POST_1_38['properties']['allocations'] = allocation.POST_1_38


def for_version(version):
    return POST_1_38 if version >= (1, 38) else POST_1_30
