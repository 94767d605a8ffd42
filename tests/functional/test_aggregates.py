"""/resource_providers/{uuid}/aggregates, per the API reference."""
from tests.functional.client import error
from tests.functional.client import make_provider

RP1 = '9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c01'
RP2 = '9a8b7c6d-1e2f-4a3b-8c4d-5e6f7a8b9c02'
AGG1 = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e801'
AGG2 = '0b1c2d3e-4f50-4617-8293-a4b5c6d7e802'
PATH = '/resource_providers/%s/aggregates' % RP1


def _generation(api, uuid):
    return api.get('/resource_providers/%s' % uuid).json['generation']


def test_aggregates_do_not_exist_before_1_1(api):
    make_provider(api, 'cn1', uuid=RP1)
    assert api.get(PATH, version='1.0').status_int == 404
    assert api.put(PATH, [AGG1], version='1.0').status_int == 404


def test_get_empty(api):
    make_provider(api, 'cn1', uuid=RP1)
    resp = api.get(PATH, version='1.1')
    assert resp.status_int == 200
    assert resp.json == {'aggregates': []}
    resp = api.get(PATH, version='1.19')
    assert resp.json == {'aggregates': [], 'resource_provider_generation': 0}
    assert resp.headers['Cache-Control'] == 'no-cache'


def test_put_plain_list_before_1_19(api):
    make_provider(api, 'cn1', uuid=RP1)
    resp = api.put(PATH, [AGG2, AGG1], version='1.1')
    assert resp.status_int == 200
    # as upstream: the aggregates as given
    assert resp.json == {'aggregates': [AGG2, AGG1]}
    assert 'Last-Modified' not in resp.headers
    # Before 1.19 the generation does not move.
    assert _generation(api, RP1) == 0
    resp = api.put(PATH, [AGG2], version='1.18')
    assert resp.json == {'aggregates': [AGG2]}
    assert api.get(PATH, version='1.1').json == {'aggregates': [AGG2]}
    assert api.put(PATH, [], version='1.1').json == {'aggregates': []}


def test_put_with_generation_from_1_19(api):
    make_provider(api, 'cn1', uuid=RP1)
    resp = api.put(PATH, {'aggregates': [AGG1], 'resource_provider_generation': 0},
                   version='1.19')
    assert resp.status_int == 200
    assert resp.json == {'aggregates': [AGG1], 'resource_provider_generation': 1}
    assert 'Last-Modified' in resp.headers
    # Even an unchanged set bumps the generation.
    resp = api.put(PATH, {'aggregates': [AGG1], 'resource_provider_generation': 1},
                   version='1.19')
    assert resp.json == {'aggregates': [AGG1], 'resource_provider_generation': 2}
    assert _generation(api, RP1) == 2


def test_put_wrong_generation_is_409(api):
    make_provider(api, 'cn1', uuid=RP1)
    error(api.put(PATH, {'aggregates': [AGG1], 'resource_provider_generation': 3},
                   version='1.23'), 409, 'placement.concurrent_update')
    assert api.get(PATH, version='1.19').json == {
        'aggregates': [], 'resource_provider_generation': 0}


def test_bodies_per_version(api):
    make_provider(api, 'cn1', uuid=RP1)
    # A plain list is wrong from 1.19, an object is wrong before.
    error(api.put(PATH, [AGG1], version='1.19'), 400)
    error(api.put(PATH, {'aggregates': [AGG1], 'resource_provider_generation': 0},
                   version='1.18'), 400)
    error(api.put(PATH, {'aggregates': [AGG1]}, version='1.19'), 400)
    error(api.put(PATH, {'aggregates': [AGG1], 'resource_provider_generation': 0,
                          'extra': 1}, version='1.19'), 400)


def test_bad_aggregate_uuids_are_400(api):
    make_provider(api, 'cn1', uuid=RP1)
    error(api.put(PATH, ['not-a-uuid'], version='1.1'), 400)
    error(api.put(PATH, [AGG1, AGG1], version='1.1'), 400)
    error(api.put(PATH, [1], version='1.1'), 400)
    error(api.put(PATH, raw='[', version='1.1'), 400)


def test_an_aggregate_is_stored_as_spelt(api):
    """As upstream: member_of finds it by that spelling only."""
    make_provider(api, 'cn1', uuid=RP1)
    spelt = AGG1.replace('-', '').upper()
    assert api.put(PATH, [spelt], version='1.1').json == {'aggregates': [spelt]}
    assert api.get(PATH, version='1.1').json == {'aggregates': [spelt]}


def test_unknown_provider_is_404(api):
    path = '/resource_providers/%s/aggregates' % RP2
    error(api.get(path, version='1.1'), 404)
    error(api.put(path, [AGG1], version='1.1'), 404)


def test_shared_aggregate_and_provider_delete(api):
    make_provider(api, 'cn1', uuid=RP1)
    make_provider(api, 'cn2', uuid=RP2)
    assert api.put(PATH, [AGG1], version='1.1').status_int == 200
    assert api.put('/resource_providers/%s/aggregates' % RP2, [AGG1, AGG2],
                   version='1.1').status_int == 200
    assert api.delete('/resource_providers/%s' % RP1).status_int == 204
    resp = api.get('/resource_providers/%s/aggregates' % RP2, version='1.1')
    assert resp.json == {'aggregates': [AGG1, AGG2]}


def test_absurd_generation_is_409_not_500(api):
    make_provider(api, 'cn1', uuid=RP1)
    for generation in (2 ** 70, -2 ** 70):
        error(api.put(PATH, {'aggregates': [AGG1], 'resource_provider_generation': generation},
                       version='1.23'), 409, 'placement.concurrent_update')
