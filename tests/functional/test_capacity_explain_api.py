"""GET /extensions/candidates/explain: the explanation as an admin-only
extension route, on every engine."""
from tests.functional.client import error
from tests.functional.client import make_provider

V = '1.39'
PATH = '/extensions/candidates/explain'


def _cloud(api):
    make_provider(api, 'cn1', {'VCPU': {'total': 4}, 'MEMORY_MB': {'total': 4096}})
    make_provider(api, 'cn2', {'VCPU': {'total': 5, 'reserved': 1},
                               'MEMORY_MB': {'total': 8192}})
    make_provider(api, 'cn3', {'VCPU': {'total': 16}, 'MEMORY_MB': {'total': 512}})


def test_an_admin_gets_each_roots_verdict(api):
    _cloud(api)
    resp = api.get(PATH + '?resources=VCPU:6,MEMORY_MB:1024', version=V)
    assert resp.status_int == 200, resp.body
    assert resp.content_type == 'application/json'
    body = resp.json
    assert body['query'] == 'resources=VCPU:6,MEMORY_MB:1024'
    assert body['version'] == V
    assert body['stages'] == {'capacity': 3}
    assert body['summary'] == 'no root provider fits: 3 of 3 ruled out at capacity'
    verdicts = {r['name']: (r['stage'], r['resource_class'], r['largest_free'])
                for r in body['roots']}
    assert verdicts == {'cn1': ('capacity', 'VCPU', 4), 'cn2': ('capacity', 'VCPU', 4),
                        'cn3': ('capacity', 'MEMORY_MB', 512)}


def test_a_fitting_root_is_said_to_fit(api):
    _cloud(api)
    body = api.get(PATH + '?resources=VCPU:2,MEMORY_MB:1024', version=V).json
    assert body['summary'] == '2 of 3 root providers fit'
    assert body['stages'] == {'capacity': 1, 'fits': 2}


def test_only_an_admin_may_ask(api):
    _cloud(api)
    query = PATH + '?resources=VCPU:1'
    error(api.get(query, version=V, token='alice:proj'), 403, 'placement.undefined_code')
    # the service role may list candidates, not explain them
    assert api.get('/allocation_candidates?resources=VCPU:1', version=V, token='nova',
                   headers={'X-Roles': 'service'}).status_int == 200
    error(api.get(query, version=V, token='nova', headers={'X-Roles': 'service'}), 403)


def test_a_query_placement_refuses_is_a_400_with_a_code(api):
    _cloud(api)
    # no code of placement's own: this route's
    e = error(api.get(PATH + '?resources=NO_SUCH_CLASS:1', version=V), 400,
              'placement.extensions.candidates.bad_query')
    assert 'No such resource class NO_SUCH_CLASS' in e['detail']
    error(api.get(PATH + '?resources=VCPU:1&bogus=1', version=V), 400,
          'placement.extensions.candidates.bad_query')
    error(api.get(PATH, version=V), 400, 'placement.query.missing_value')
    # placement's code where it has one
    resp = api.get(PATH + '?resources=VCPU:1&root_required=!X,X', version=V)
    ours = api.get('/allocation_candidates?resources=VCPU:1&root_required=!X,X', version=V)
    assert resp.status_int == ours.status_int == 400
    assert resp.json['errors'][0]['code'] == ours.json['errors'][0]['code'] == (
        'placement.query.bad_value')


def test_invisible_to_clients_that_do_not_ask(api):
    root = api.get('/', version=V).json
    assert 'extensions' not in repr(root)
    # below allocation candidates' own microversion the route is not there
    error(api.get(PATH + '?resources=VCPU:1', version='1.9'), 404)
