"""The API's schemas: fastjsonschema's fast check agrees with jsonschema.

``util._check`` takes fastjsonschema's word when it accepts a body and
asks jsonschema otherwise, so a body the fast check accepts and jsonschema
refuses would be let through unchecked. These properties feed both every
schema placement_server.schemas defines, with bodies shaped like what the
schema accepts and bent out of shape in every way a schema can see.
"""
import importlib
import pkgutil

import hypothesis
from hypothesis import strategies as st
import jsonschema
import pytest

from placement_server import schemas
from placement_server import util

ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40)
    | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6)


def _all_schemas():
    """Every public schema (a dict with a type or subschemas) a module of
    placement_server.schemas holds at its top level, by name."""
    found = {}
    for info in pkgutil.iter_modules(schemas.__path__):
        module = importlib.import_module('%s.%s' % (schemas.__name__, info.name))
        for name, value in vars(module).items():
            if (not name.startswith('_') and isinstance(value, dict)
                    and {'type', 'anyOf'} & set(value)):
                found['%s.%s' % (info.name, name)] = value
    return found


SCHEMAS = _all_schemas()


def _mostly(likely, *others):
    """``likely`` three draws in four, one of ``others`` otherwise."""
    return st.sampled_from([likely] * 3 * len(others) + list(others)).flatmap(lambda s: s)


def _numbers(schema, integer):
    low, high = schema.get('minimum', -2 ** 31), schema.get('maximum', 2 ** 31)
    edges = st.sampled_from([v + d for v in (low, high) for d in (-1, 0, 1)])
    inside = st.integers(int(low), int(high))
    wide = st.integers(-2 ** 63, 2 ** 63) | st.booleans()
    if integer:
        # 3.0 is an integer to jsonschema; True is not.
        return _mostly(inside, edges, inside.map(float), wide, st.floats())
    return _mostly(inside | st.floats(low, high), edges, wide, st.floats())


def _strings(schema):
    likely = st.text(min_size=1, max_size=12)
    if 'pattern' in schema:
        likely = st.from_regex(schema['pattern'])
    if schema.get('format') == 'uuid':
        likely = (st.uuids().map(str) | st.uuids().map(lambda u: u.hex.upper())
                  | st.uuids().map(lambda u: str(u).upper()))
    lengths = [schema[k] for k in ('minLength', 'maxLength') if k in schema]
    return _mostly(likely, st.text(max_size=12),
                   *[st.just('x' * max(n + d, 0)) for n in lengths for d in (-1, 0, 1)])


def _objects(schema):
    properties = {k: near(v) for k, v in schema.get('properties', {}).items()}
    required = {k: properties[k] for k in schema.get('required', ()) if k in properties}
    optional = {k: v for k, v in properties.items() if k not in required}
    # Mostly with what it requires, sometimes without.
    shaped = _mostly(st.fixed_dictionaries(required, optional=optional),
                     st.fixed_dictionaries({}, optional=properties))
    for pattern, sub in schema.get('patternProperties', {}).items():
        matching = st.dictionaries(st.from_regex(pattern), near(sub),
                                   min_size=schema.get('minProperties', 0), max_size=3)
        shaped = st.tuples(shaped, _mostly(matching, st.just({}))).map(
            lambda p: {**p[1], **p[0]})
    # Keys the schema does not name, which additionalProperties may refuse.
    stray = st.dictionaries(st.text(max_size=4), ANY_JSON, min_size=1, max_size=1)
    return _mostly(shaped, st.tuples(shaped, stray).map(lambda p: {**p[1], **p[0]}))


def near(schema):
    """Values near what ``schema`` accepts: mostly its shape, with any
    value anywhere once in a while."""
    options = []
    if 'enum' in schema:
        options.append(st.sampled_from(schema['enum']))
    for key in ('anyOf', 'oneOf', 'allOf'):
        options += [near(sub) for sub in schema.get(key, ())]
    types = schema.get('type', [])
    for kind in types if isinstance(types, list) else [types]:
        if kind == 'object':
            options.append(_objects(schema))
        elif kind == 'array':
            items = near(schema.get('items', {}))
            least = schema.get('minItems', 0)
            options.append(_mostly(st.lists(items, min_size=least, max_size=4),
                                   st.lists(items, max_size=least),
                                   st.lists(items, min_size=1, max_size=2).map(lambda v: v + v)))
        elif kind == 'string':
            options.append(_strings(schema))
        elif kind in ('integer', 'number'):
            options.append(_numbers(schema, kind == 'integer'))
        elif kind == 'boolean':
            options.append(st.booleans())
        elif kind == 'null':
            options.append(st.none())
    if not options:
        return ANY_JSON
    # At each level one draw in eight is anything at all.
    return st.sampled_from([st.one_of(options)] * 7 + [ANY_JSON]).flatmap(lambda s: s)


def _jsonschema_valid(schema, data):
    return jsonschema.validators.validator_for(schema)(
        schema, format_checker=util.FORMAT_CHECKER).is_valid(data)


def test_every_schema_module_is_seen():
    # A schema module the collection misses would go unchecked.
    assert {'allocation.PUT_1_38', 'inventory.PUT_ALL', 'trait.PROVIDER_TRAITS',
            'resource_provider.POST_1_14', 'allocation_candidate.GET_1_10'} <= set(SCHEMAS)


@pytest.mark.parametrize('name', sorted(SCHEMAS))
@hypothesis.settings(max_examples=150, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.too_slow])
@hypothesis.given(data=st.data())
def test_fast_check_agrees_with_jsonschema(name, data):
    schema = SCHEMAS[name]
    body = data.draw(near(schema))
    expected = _jsonschema_valid(schema, body)
    assert (util._check(body, schema) is None) == expected, body
    # as a query string's (uuids need their dashes there)
    expected = jsonschema.validators.validator_for(schema)(
        schema, format_checker=util.QUERY_FORMAT_CHECKER).is_valid(body)
    assert (util._check(body, schema, query=True) is None) == expected, body


@pytest.mark.parametrize('body, valid', [
    ({'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8}}}, True),
    ({'resource_provider_generation': True, 'inventories': {}}, False),
    ({'resource_provider_generation': 0.0, 'inventories': {}}, True),
    ({'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 0}}}, False),
    ({'resource_provider_generation': 0, 'inventories': {'vcpu': {'total': 8}}}, False),
])
def test_known_bodies(body, valid):
    assert (util._check(body, SCHEMAS['inventory.PUT_ALL']) is None) == valid


def test_defaults_are_not_filled_in():
    # fastjsonschema would write a schema's defaults into the body.
    schema = {'type': 'object', 'properties': {'reserved': {'type': 'integer', 'default': 0}}}
    body = {}
    assert util._check(body, schema) is None
    assert body == {}
