"""/resource_providers/{uuid}/inventories, as the API reference describes it."""
import uuid

import pytest

from placement_server import errors
from tests.functional.client import make_provider

V = '1.39'
DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': 2147483647,
            'step_size': 1, 'allocation_ratio': 1.0}


def inv_url(rp, rc=None):
    return '/resource_providers/%s/inventories%s' % (rp, '/' + rc if rc else '')


def put_all(api, rp, inventories, generation, version=V):
    return api.put(inv_url(rp), {'resource_provider_generation': generation,
                                 'inventories': inventories}, version=version)


def error_code(resp):
    return resp.json['errors'][0]['code']


def test_new_provider_has_no_inventory(api):
    rp = make_provider(api)
    resp = api.get(inv_url(rp), version=V)
    assert resp.status_int == 200
    assert resp.json == {'inventories': {}, 'resource_provider_generation': 0}


def test_unknown_provider_is_404(api):
    missing = str(uuid.uuid4())
    assert api.get(inv_url(missing), version=V).status_int == 404
    assert put_all(api, missing, {}, 0).status_int == 404
    assert api.get(inv_url(missing, 'VCPU'), version=V).status_int == 404


def test_put_all_fills_defaults_and_bumps_generation_once(api):
    rp = make_provider(api)
    resp = put_all(api, rp, {'VCPU': {'total': 8, 'allocation_ratio': 16.0},
                             'MEMORY_MB': {'total': 4096, 'reserved': 512}}, 0)
    assert resp.status_int == 200, resp.body
    assert resp.json['resource_provider_generation'] == 1
    assert resp.json['inventories'] == {
        'VCPU': dict(DEFAULTS, total=8, allocation_ratio=16.0),
        'MEMORY_MB': dict(DEFAULTS, total=4096, reserved=512)}
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert 'Last-Modified' in resp.headers
    got = api.get(inv_url(rp), version=V)
    assert got.json == resp.json
    # Replacing: MEMORY_MB goes, DISK_GB comes, VCPU changes; one bump.
    resp = put_all(api, rp, {'VCPU': {'total': 4}, 'DISK_GB': {'total': 100}}, 1)
    assert resp.status_int == 200
    assert resp.json['resource_provider_generation'] == 2
    assert sorted(resp.json['inventories']) == ['DISK_GB', 'VCPU']
    assert resp.json['inventories']['VCPU']['total'] == 4


def test_no_last_modified_before_1_15(api):
    rp = make_provider(api)
    resp = api.get(inv_url(rp), version='1.14')
    assert resp.status_int == 200
    assert 'Last-Modified' not in resp.headers


def test_stale_generation_is_409_concurrent_update(api):
    rp = make_provider(api)
    assert put_all(api, rp, {'VCPU': {'total': 8}}, 0).status_int == 200
    resp = put_all(api, rp, {'VCPU': {'total': 9}}, 0)
    assert resp.status_int == 409
    assert error_code(resp) == 'placement.concurrent_update'
    resp = api.put(inv_url(rp, 'VCPU'), {'resource_provider_generation': 0, 'total': 9},
                   version=V)
    assert resp.status_int == 409
    assert error_code(resp) == 'placement.concurrent_update'
    assert api.get(inv_url(rp, 'VCPU'), version=V).json['total'] == 8


def test_post_one_class(api):
    rp = make_provider(api)
    resp = api.post(inv_url(rp), {'resource_class': 'DISK_GB', 'total': 100,
                                  'reserved': 10}, version=V)
    assert resp.status_int == 201, resp.body
    assert resp.location.endswith(inv_url(rp, 'DISK_GB'))
    assert resp.json == dict(DEFAULTS, total=100, reserved=10,
                             resource_provider_generation=1)
    resp = api.post(inv_url(rp), {'resource_class': 'DISK_GB', 'total': 5}, version=V)
    assert resp.status_int == 409
    assert error_code(resp) == 'placement.concurrent_update'
    resp = api.post(inv_url(rp), {'resource_class': 'CUSTOM_NOPE', 'total': 5}, version=V)
    assert resp.status_int == 400


def test_get_update_delete_one_class(api):
    rp = make_provider(api)
    put_all(api, rp, {'VCPU': {'total': 8}}, 0)
    resp = api.get(inv_url(rp, 'VCPU'), version=V)
    assert resp.status_int == 200
    assert resp.json == dict(DEFAULTS, total=8, resource_provider_generation=1)
    assert api.get(inv_url(rp, 'DISK_GB'), version=V).status_int == 404

    resp = api.put(inv_url(rp, 'VCPU'), {'resource_provider_generation': 1, 'total': 16,
                                         'max_unit': 4}, version=V)
    assert resp.status_int == 200, resp.body
    assert resp.json == dict(DEFAULTS, total=16, max_unit=4, resource_provider_generation=2)
    # PUT on a class the provider has no inventory of.
    resp = api.put(inv_url(rp, 'DISK_GB'), {'resource_provider_generation': 2, 'total': 1},
                   version=V)
    assert resp.status_int == 400

    assert api.delete(inv_url(rp, 'VCPU'), version=V).status_int == 204
    assert api.get(inv_url(rp), version=V).json == {
        'inventories': {}, 'resource_provider_generation': 3}
    assert api.delete(inv_url(rp, 'VCPU'), version=V).status_int == 404


def test_delete_all_exists_from_1_5(api):
    rp = make_provider(api)
    put_all(api, rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 10}}, 0)
    resp = api.delete(inv_url(rp), version='1.4')
    assert resp.status_int == 405
    assert api.delete(inv_url(rp), version='1.5').status_int == 204
    assert api.get(inv_url(rp), version=V).json == {
        'inventories': {}, 'resource_provider_generation': 2}


@pytest.mark.parametrize('record', [
    {'total': 0},
    {'total': -1},
    {'total': 2147483648},
    {'total': '8'},
    {'total': 8.5},
    {'total': 8, 'reserved': -1},
    {'total': 8, 'reserved': 9},
    {'total': 8, 'min_unit': 0},
    {'total': 8, 'max_unit': 0},
    {'total': 8, 'step_size': 0},
    {'total': 8, 'allocation_ratio': -1.0},
    {'total': 8, 'allocation_ratio': 'x'},
    {'total': 8, 'colour': 'blue'},
    {'reserved': 1},
])
def test_invalid_inventory_is_400(api, record):
    rp = make_provider(api)
    resp = put_all(api, rp, {'VCPU': record}, 0)
    assert resp.status_int == 400, resp.body
    assert error_code(resp) == errors.UNDEFINED
    assert api.get(inv_url(rp), version=V).json['resource_provider_generation'] == 0


def test_zero_allocation_ratio_holds_everything_back_from_1_26(api):
    # As upstream: capacity 0 (a ratio of 0, or reserved equal to total) is
    # refused before 1.26 and accepted from it.
    rp = make_provider(api)
    for record in ({'total': 8, 'allocation_ratio': 0}, {'total': 8, 'reserved': 8}):
        resp = put_all(api, rp, {'VCPU': record}, 0, version='1.25')
        assert resp.status_int == 400, resp.body
        assert 'The reserved value is greater than or equal to total.' in resp.text
    resp = put_all(api, rp, {'VCPU': {'total': 8, 'allocation_ratio': 0}}, 0, version='1.26')
    assert resp.status_int == 200, resp.body


def test_bad_bodies_are_400_or_415(api):
    rp = make_provider(api)
    assert api.put(inv_url(rp), raw='{"resource_provider', version=V).status_int == 400
    assert api.put(inv_url(rp), {'inventories': {}}, version=V).status_int == 400
    assert put_all(api, rp, {'vcpu': {'total': 1}}, 0).status_int == 400
    assert put_all(api, rp, {'CUSTOM_UNKNOWN': {'total': 1}}, 0).status_int == 400
    resp = api.request('PUT', inv_url(rp), version=V, headers={'Content-Type': 'text/plain'})
    assert resp.status_int == 415


def test_reserved_equal_to_total_allowed_from_1_26(api):
    rp = make_provider(api)
    resp = put_all(api, rp, {'VCPU': {'total': 8, 'reserved': 8}}, 0, version='1.25')
    assert resp.status_int == 400
    resp = put_all(api, rp, {'VCPU': {'total': 8, 'reserved': 8}}, 0, version='1.26')
    assert resp.status_int == 200
    assert resp.json['inventories']['VCPU']['reserved'] == 8
    resp = put_all(api, rp, {'VCPU': {'total': 8, 'reserved': 9}}, 1, version='1.26')
    assert resp.status_int == 400


def claim(api, rp, consumer, resources):
    return api.put('/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': resources}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}, version='1.28')


def test_allocated_class_cannot_be_removed(api):
    rp = make_provider(api)
    put_all(api, rp, {'VCPU': {'total': 8}, 'DISK_GB': {'total': 100}}, 0)
    assert claim(api, rp, str(uuid.uuid4()), {'VCPU': 2}).status_int == 204
    gen = api.get(inv_url(rp), version=V).json['resource_provider_generation']

    resp = put_all(api, rp, {'DISK_GB': {'total': 100}}, gen)
    assert resp.status_int == 409
    assert error_code(resp) == 'placement.inventory.inuse'
    assert "Inventory for 'VCPU' on resource provider" in resp.json['errors'][0]['detail']
    resp = api.delete(inv_url(rp), version=V)
    assert resp.status_int == 409
    assert error_code(resp) == 'placement.inventory.inuse'
    resp = api.delete(inv_url(rp, 'VCPU'), version=V)
    assert resp.status_int == 409
    # (one class at a time: a concurrent update, as upstream answers it)
    assert error_code(resp) == 'placement.concurrent_update'
    # Nothing changed, and the unallocated class can still go.
    assert api.get(inv_url(rp), version=V).json['resource_provider_generation'] == gen
    assert api.delete(inv_url(rp, 'DISK_GB'), version=V).status_int == 204


def test_total_may_drop_below_what_is_allocated(api):
    rp = make_provider(api)
    put_all(api, rp, {'VCPU': {'total': 8}}, 0)
    assert claim(api, rp, str(uuid.uuid4()), {'VCPU': 6}).status_int == 204
    resp = put_all(api, rp, {'VCPU': {'total': 4}}, 2)
    assert resp.status_int == 200, resp.body
    usages = api.get('/resource_providers/%s/usages' % rp, version=V).json['usages']
    assert usages == {'VCPU': 6}
    # Over capacity now: a further claim fails.
    resp = claim(api, rp, str(uuid.uuid4()), {'VCPU': 1})
    assert resp.status_int == 409
