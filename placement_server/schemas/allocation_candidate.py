"""Query string schemas for GET /allocation_candidates, per microversion.

Each version adds keys; a key a version does not know is a 400. Values are
validated in detail by the request parser (placement_server.candidates.request),
which gives clearer messages than a schema can.
"""
import copy

from placement_server.microversion import Version
from placement_server.schemas import Schema

# Request group suffixes: numbers from 1.25, strings from 1.33.
SUFFIX_1_25 = r'[1-9][0-9]*'
SUFFIX_1_33 = r'[a-zA-Z0-9_-]{1,64}'
GROUP_KEYS = ('resources', 'required', 'member_of', 'in_tree')

_STRING: Schema = {'type': 'string'}

GET_1_10: Schema = {
    'type': 'object',
    'properties': {'resources': _STRING},
    'required': ['resources'],
    'additionalProperties': False,
}

GET_1_16: Schema = copy.deepcopy(GET_1_10)
GET_1_16['properties']['limit'] = {'type': 'string', 'pattern': '^[1-9][0-9]*$'}

GET_1_17: Schema = copy.deepcopy(GET_1_16)
GET_1_17['properties']['required'] = _STRING

GET_1_21: Schema = copy.deepcopy(GET_1_17)
GET_1_21['properties']['member_of'] = _STRING


def _grouped(base: Schema, keys: tuple[str, ...], suffix: str) -> Schema:
    schema = copy.deepcopy(base)
    for key in GROUP_KEYS:
        schema['properties'].pop(key, None)
    schema.pop('required', None)
    schema['patternProperties'] = {
        '^%s(%s)?$' % (key, suffix): _STRING for key in keys}
    return schema


# 1.25: numbered groups, and group_policy; resources no longer mandatory.
GET_1_25: Schema = _grouped(GET_1_21, ('resources', 'required', 'member_of'), SUFFIX_1_25)
GET_1_25['properties']['group_policy'] = {'type': 'string',
                                          'enum': ['none', 'isolate']}
GET_1_31: Schema = _grouped(GET_1_25, GROUP_KEYS, SUFFIX_1_25)
GET_1_33: Schema = _grouped(GET_1_31, GROUP_KEYS, SUFFIX_1_33)
GET_1_35: Schema = copy.deepcopy(GET_1_33)
GET_1_35['properties']['root_required'] = _STRING
GET_1_36: Schema = copy.deepcopy(GET_1_35)
GET_1_36['properties']['same_subtree'] = _STRING

_BY_VERSION = [((1, 36), GET_1_36), ((1, 35), GET_1_35), ((1, 33), GET_1_33),
               ((1, 31), GET_1_31), ((1, 25), GET_1_25), ((1, 21), GET_1_21),
               ((1, 17), GET_1_17), ((1, 16), GET_1_16)]


def for_version(version: Version) -> Schema:
    for since, schema in _BY_VERSION:
        if version >= since:
            return schema
    return GET_1_10
