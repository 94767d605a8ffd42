"""GET / and /resource_classes, as the API reference describes them."""


def test_root_needs_no_token(api):
    resp = api.get('/', token='')
    assert resp.status_int == 200
    doc = resp.json['versions'][0]
    assert doc['min_version'] == '1.0'
    assert doc['max_version'] == '1.39'
    assert resp.headers['Vary'] == 'openstack-api-version'
    assert resp.headers['OpenStack-API-Version'] == 'placement 1.0'
    assert resp.headers['x-openstack-request-id'].startswith('req-')


def test_latest_and_out_of_range_versions(api):
    assert api.get('/', version='latest').headers['OpenStack-API-Version'] == 'placement 1.39'
    resp = api.get('/', version='1.40')
    assert resp.status_int == 406
    assert resp.json['errors'][0]['status'] == 406
    resp = api.get('/', version='one.two')
    assert resp.status_int == 400


def test_token_required(api):
    resp = api.get('/resource_classes', version='1.23', token='')
    assert resp.status_int == 401
    assert resp.json['errors'][0]['code'] == 'placement.undefined_code'


def test_resource_classes_before_1_2_do_not_exist(api):
    assert api.get('/resource_classes', version='1.1').status_int == 404


def test_standard_classes_listed(api):
    resp = api.get('/resource_classes', version='1.2')
    assert resp.status_int == 200
    names = [rc['name'] for rc in resp.json['resource_classes']]
    assert 'VCPU' in names and 'MEMORY_MB' in names and 'DISK_GB' in names


def test_custom_class_lifecycle(api):
    resp = api.post('/resource_classes', {'name': 'CUSTOM_GOLD'}, version='1.2')
    assert resp.status_int == 201
    assert resp.location.endswith('/resource_classes/CUSTOM_GOLD')
    resp = api.post('/resource_classes', {'name': 'CUSTOM_GOLD'}, version='1.23')
    assert resp.status_int == 409
    assert resp.json['errors'][0]['code'] == 'placement.undefined_code'   # as upstream
    resp = api.get('/resource_classes/CUSTOM_GOLD', version='1.15')
    assert resp.status_int == 200
    assert resp.json == {'name': 'CUSTOM_GOLD', 'links': [
        {'rel': 'self', 'href': '/resource_classes/CUSTOM_GOLD'}]}
    assert 'Last-Modified' in resp.headers
    assert resp.headers['Cache-Control'] == 'no-cache'
    assert api.delete('/resource_classes/CUSTOM_GOLD', version='1.2').status_int == 204
    assert api.get('/resource_classes/CUSTOM_GOLD', version='1.2').status_int == 404


def test_put_creates_from_1_7(api):
    assert api.put('/resource_classes/CUSTOM_SILVER', version='1.7').status_int == 201
    assert api.put('/resource_classes/CUSTOM_SILVER', version='1.7').status_int == 204
    assert api.put('/resource_classes/VCPU', version='1.7').status_int == 400


def test_bad_bodies_are_400(api):
    resp = api.post('/resource_classes', raw='{not json', version='1.2')
    assert resp.status_int == 400
    resp = api.post('/resource_classes', {'name': 'GOLD'}, version='1.2')
    assert resp.status_int == 400
    resp = api.post('/resource_classes', {'name': 'CUSTOM_X', 'extra': 1}, version='1.2')
    assert resp.status_int == 400


def test_standard_class_cannot_be_deleted(api):
    assert api.delete('/resource_classes/VCPU', version='1.2').status_int == 400
