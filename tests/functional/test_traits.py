"""/traits and /resource_providers/{uuid}/traits, per the API reference."""
from tests.functional.client import error
from tests.functional.client import make_provider

RP1 = '5d3c1a7e-8b2f-4c61-9e0d-3a4b5c6d7e01'
RP2 = '5d3c1a7e-8b2f-4c61-9e0d-3a4b5c6d7e02'


def _set(api, uuid, traits, generation, version='1.6'):
    return api.put('/resource_providers/%s/traits' % uuid,
                   {'traits': traits, 'resource_provider_generation': generation},
                   version=version)


def test_traits_do_not_exist_before_1_6(api):
    assert api.get('/traits', version='1.5').status_int == 404
    assert api.put('/traits/CUSTOM_A', version='1.5').status_int == 404
    make_provider(api, 'cn1', uuid=RP1)
    assert api.get('/resource_providers/%s/traits' % RP1, version='1.5').status_int == 404


def test_list_has_the_standard_traits(api):
    resp = api.get('/traits', version='1.6')
    assert resp.status_int == 200
    assert 'HW_CPU_X86_AVX' in resp.json['traits']
    assert 'Last-Modified' not in resp.headers
    assert 'Last-Modified' in api.get('/traits', version='1.15').headers


def test_list_name_filters(api):
    resp = api.get('/traits?name=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE,CUSTOM_NONE',
                   version='1.6')
    assert resp.status_int == 200
    assert sorted(resp.json['traits']) == ['HW_CPU_X86_AVX', 'HW_CPU_X86_SSE']
    resp = api.get('/traits?name=startswith:HW_CPU_X86_AVX5', version='1.6')
    assert resp.json['traits'] and all(
        t.startswith('HW_CPU_X86_AVX5') for t in resp.json['traits'])
    # LIKE wildcards in the prefix are taken literally.
    resp = api.get('/traits?name=startswith:HW_%', version='1.6')
    assert resp.json['traits'] == []


def test_list_associated(api):
    make_provider(api, 'cn1', uuid=RP1)
    assert _set(api, RP1, ['HW_CPU_X86_AVX'], 0).status_int == 200
    resp = api.get('/traits?associated=true', version='1.6')
    assert resp.json == {'traits': ['HW_CPU_X86_AVX']}
    resp = api.get('/traits?associated=false&name=in:HW_CPU_X86_AVX,HW_CPU_X86_SSE',
                   version='1.6')
    assert resp.json == {'traits': ['HW_CPU_X86_SSE']}


def test_list_bad_query(api):
    error(api.get('/traits?name=HW_CPU_X86_AVX', version='1.6'), 400)
    error(api.get('/traits?associated=yes', version='1.6'), 400)
    error(api.get('/traits?colour=blue', version='1.6'), 400)


def test_custom_trait_lifecycle(api):
    resp = api.put('/traits/CUSTOM_GOLD', version='1.6')
    assert resp.status_int == 201
    assert resp.location.endswith('/traits/CUSTOM_GOLD')
    assert resp.body == b''
    resp = api.put('/traits/CUSTOM_GOLD', version='1.15')
    assert resp.status_int == 204
    assert resp.location.endswith('/traits/CUSTOM_GOLD')
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in resp.headers
    resp = api.get('/traits/CUSTOM_GOLD', version='1.6')
    assert resp.status_int == 204
    assert 'Last-Modified' not in resp.headers
    assert api.delete('/traits/CUSTOM_GOLD', version='1.6').status_int == 204
    error(api.get('/traits/CUSTOM_GOLD', version='1.6'), 404)
    error(api.delete('/traits/CUSTOM_GOLD', version='1.6'), 404)


def test_put_trait_needs_custom_prefix(api):
    error(api.put('/traits/GOLD', version='1.6'), 400)
    error(api.put('/traits/CUSTOM_gold', version='1.6'), 400)
    error(api.put('/traits/CUSTOM_' + 'A' * 250, version='1.6'), 400)


def test_standard_trait_cannot_be_deleted(api):
    err = error(api.delete('/traits/HW_CPU_X86_AVX', version='1.6'), 400)
    assert 'standard' in err['detail']


def test_trait_in_use_cannot_be_deleted(api):
    make_provider(api, 'cn1', uuid=RP1)
    assert api.put('/traits/CUSTOM_GOLD', version='1.6').status_int == 201
    assert _set(api, RP1, ['CUSTOM_GOLD'], 0).status_int == 200
    error(api.delete('/traits/CUSTOM_GOLD', version='1.6'), 409)


def test_provider_traits_replace_and_clear(api):
    make_provider(api, 'cn1', uuid=RP1)
    resp = api.get('/resource_providers/%s/traits' % RP1, version='1.6')
    assert resp.status_int == 200
    assert resp.json == {'traits': [], 'resource_provider_generation': 0}
    resp = _set(api, RP1, ['HW_CPU_X86_SSE', 'HW_CPU_X86_AVX'], 0, version='1.15')
    assert resp.status_int == 200
    assert sorted(resp.json['traits']) == ['HW_CPU_X86_AVX', 'HW_CPU_X86_SSE']
    assert resp.json['resource_provider_generation'] == 1
    assert 'Last-Modified' in resp.headers
    resp = _set(api, RP1, ['HW_CPU_X86_AVX'], 1)
    assert resp.json == {'traits': ['HW_CPU_X86_AVX'], 'resource_provider_generation': 2}
    assert api.get('/resource_providers/%s' % RP1).json['generation'] == 2
    resp = api.delete('/resource_providers/%s/traits' % RP1, version='1.6')
    assert resp.status_int == 204
    resp = api.get('/resource_providers/%s/traits' % RP1, version='1.6')
    assert resp.json == {'traits': [], 'resource_provider_generation': 3}


def test_unchanged_traits_keep_the_generation(api):
    make_provider(api, 'cn1', uuid=RP1)
    assert _set(api, RP1, ['HW_CPU_X86_AVX'], 0).json['resource_provider_generation'] == 1
    resp = _set(api, RP1, ['HW_CPU_X86_AVX'], 1)
    assert resp.json['resource_provider_generation'] == 1
    # ... but the generation is still checked.
    error(_set(api, RP1, ['HW_CPU_X86_AVX'], 0, version='1.23'), 409,
           'placement.concurrent_update')


def test_provider_traits_wrong_generation_is_409(api):
    make_provider(api, 'cn1', uuid=RP1)
    error(_set(api, RP1, ['HW_CPU_X86_AVX'], 5, version='1.23'), 409,
           'placement.concurrent_update')
    # Nothing was written.
    resp = api.get('/resource_providers/%s/traits' % RP1, version='1.6')
    assert resp.json['traits'] == []


def test_provider_traits_unknown_trait_is_400(api):
    make_provider(api, 'cn1', uuid=RP1)
    err = error(_set(api, RP1, ['HW_CPU_X86_AVX', 'CUSTOM_NOPE'], 0), 400)
    assert 'CUSTOM_NOPE' in err['detail']
    assert api.get('/resource_providers/%s' % RP1).json['generation'] == 0


def test_provider_traits_bad_bodies(api):
    make_provider(api, 'cn1', uuid=RP1)
    path = '/resource_providers/%s/traits' % RP1
    error(api.put(path, {'traits': ['HW_CPU_X86_AVX']}, version='1.6'), 400)
    error(api.put(path, {'traits': 'HW_CPU_X86_AVX', 'resource_provider_generation': 0},
                   version='1.6'), 400)
    error(api.put(path, {'traits': [], 'resource_provider_generation': '0'},
                   version='1.6'), 400)
    error(api.put(path, {'traits': [], 'resource_provider_generation': 0, 'x': 1},
                   version='1.6'), 400)
    error(api.put(path, raw='[', version='1.6'), 400)


def test_provider_traits_unknown_provider_is_404(api):
    path = '/resource_providers/%s/traits' % RP2
    error(api.get(path, version='1.6'), 404)
    error(_set(api, RP2, [], 0), 404)
    error(api.delete(path, version='1.6'), 404)


def test_deleting_a_provider_removes_its_traits(api):
    make_provider(api, 'cn1', uuid=RP1)
    assert api.put('/traits/CUSTOM_GOLD', version='1.6').status_int == 201
    assert _set(api, RP1, ['CUSTOM_GOLD'], 0).status_int == 200
    assert api.delete('/resource_providers/%s' % RP1).status_int == 204
    assert api.delete('/traits/CUSTOM_GOLD', version='1.6').status_int == 204


def test_absurd_generation_is_409_not_500(api):
    make_provider(api, 'cn1', uuid=RP1)
    for generation in (2 ** 70, -2 ** 70):
        error(_set(api, RP1, ['HW_CPU_X86_AVX'], generation, version='1.23'), 409,
               'placement.concurrent_update')
