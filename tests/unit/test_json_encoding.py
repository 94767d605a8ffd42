"""util._encode: orjson for speed, json where orjson refuses; the bytes
must decode to the same document either way."""
import datetime
import json

from placement_server import util


def test_plain_document():
    body = {'resource_providers': [{'uuid': 'u', 'name': 'nœud', 'generation': 3,
                                    'parent_provider_uuid': None, 'ratio': 1.5}]}
    assert json.loads(util._encode(body)) == body


def test_datetimes_as_iso_8601():
    stamp = datetime.datetime(2026, 11, 21, 14, 0, 5)
    assert json.loads(util._encode({'at': stamp})) == {'at': '2026-11-21T14:00:05'}


def test_non_string_keys():
    assert json.loads(util._encode({1: 'a'})) == {'1': 'a'}


def test_ints_past_64_bits_fall_back_to_json():
    assert json.loads(util._encode({'total': 2 ** 70})) == {'total': 2 ** 70}
