"""Allocation candidates side by side with upstream 16.0.0 where the two
once differed (issue 29): each request is sent to both servers (upstream a
real process, ours on every engine) and the answers compared, allocation
requests as sets; where upstream is wrong, the difference is stated.
"""
import json

from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

CN1 = 'c0a80101-0000-4000-8000-0000000003a1'
CN2 = 'c0a80101-0000-4000-8000-0000000003a2'
CHILD1 = 'c0a80101-0000-4000-8000-0000000003b1'
CHILD2 = 'c0a80101-0000-4000-8000-0000000003b2'
SHARED = 'c0a80101-0000-4000-8000-0000000003c1'
AGG = 'a99a0000-0000-4000-8000-0000000003d1'
UNKNOWN_AGG = 'a99a0000-0000-4000-8000-0000000003ee'


def provider(uuid, name, inventories, parent=None):
    body = {'name': name, 'uuid': uuid}
    if parent:
        body['parent_provider_uuid'] = parent
    return [('POST', '/resource_providers', '1.20', body),
            ('PUT', '/resource_providers/%s/inventories' % uuid, '1.20',
             {'resource_provider_generation': 0,
              'inventories': {rc: {'total': total} for rc, total in inventories.items()}})]


def setup(api, base, script):
    for method, path, version, body in script:
        status, _, got = side_by_side.ours(api, method, path, version, body)
        want, _, _ = side_by_side.upstream(base, method, path, version, body)
        if path.startswith('/traits/'):
            # upstream keeps custom traits from test to test (201, then 204)
            assert max(status, want) < 400, (method, path, got)
            continue
        assert status == want < 400, (method, path, got)


def as_set(body):
    """A candidates answer with its allocation requests as a set."""
    if body is None or 'allocation_requests' not in body:
        return body
    return dict(body, allocation_requests=sorted(
        json.dumps(r, sort_keys=True) for r in body['allocation_requests']))


def same_answer(api, base, path, version):
    status, _, got = side_by_side.ours(api, 'GET', path, version)
    want_status, _, want = side_by_side.upstream(base, 'GET', path, version)
    for doc in (got, want):
        for error in (doc or {}).get('errors', ()):
            error.pop('request_id')
    assert (status, as_set(got)) == (want_status, as_set(want))
    return status, want


def test_unsuffixed_group_from_a_sharing_provider_alone_beside_a_tree_group(
        api, upstream_placement):
    setup(api, upstream_placement, provider(CN1, 'cn1', {'VCPU': 8})
          + provider(SHARED, 'nfs', {'DISK_GB': 100}) + [
        ('PUT', '/resource_providers/%s/aggregates' % CN1, '1.1', [AGG]),
        ('PUT', '/resource_providers/%s/aggregates' % SHARED, '1.1', [AGG]),
        ('PUT', '/resource_providers/%s/traits' % SHARED, '1.6', {
            'resource_provider_generation': 1, 'traits': ['MISC_SHARES_VIA_AGGREGATE']})])
    for query in ['resources=DISK_GB:10&resources1=VCPU:1&group_policy=none',
                  'resources=DISK_GB:10,VCPU:1']:
        status, want = same_answer(api, upstream_placement,
                                   '/allocation_candidates?' + query, '1.33')
        assert status == 200
        assert [set(r['allocations']) for r in want['allocation_requests']] == [{CN1, SHARED}]


def test_limit_before_1_29_summarises_the_chosen_candidates(api, upstream_placement):
    """Which candidate a limit keeps is upstream's undefined order; what is
    summarised with it is not."""
    setup(api, upstream_placement,
          provider(CN1, 'cn1', {'VCPU': 8}) + provider(CHILD1, 'cn1-nic', {'SRIOV_NET_VF': 4}, CN1)
          + provider(CN2, 'cn2', {'VCPU': 8})
          + provider(CHILD2, 'cn2-nic', {'SRIOV_NET_VF': 4}, CN2))
    path = '/allocation_candidates?resources=VCPU:1&limit=1'
    for answer in (side_by_side.ours(api, 'GET', path, '1.28'),
                   side_by_side.upstream(upstream_placement, 'GET', path, '1.28')):
        status, _, body = answer
        assert status == 200
        (chosen,) = body['allocation_requests']
        assert set(body['provider_summaries']) == set(chosen['allocations'])


def test_an_emptied_result_is_not_judged_for_a_later_unknown_trait(api, upstream_placement):
    setup(api, upstream_placement, provider(CN1, 'cn1', {'VCPU': 8}))
    status, want = same_answer(
        api, upstream_placement,
        '/allocation_candidates?resources=VCPU:1&member_of=%s&required=CUSTOM_NOPE'
        % UNKNOWN_AGG, '1.23')
    assert (status, want) == (200, {'allocation_requests': [], 'provider_summaries': {}})


def test_a_list_emptied_by_required_traits_never_judges_forbidden_ones(
        api, upstream_placement):
    setup(api, upstream_placement, provider(CN1, 'cn1', {'VCPU': 8}))
    for query in ['uuid=%s&required=STORAGE_DISK_SSD,!CUSTOM_UNKNOWN' % CN1,
                  'required=CUSTOM_UNKNOWN,STORAGE_DISK_SSD&resources=CUSTOM_NOPE:1',
                  'member_of=%s&resources=CUSTOM_NOPE:1' % UNKNOWN_AGG]:
        same_answer(api, upstream_placement, '/resource_providers?' + query, '1.26')


def test_a_group_that_finds_nothing_ends_the_search_before_later_names(
        api, upstream_placement):
    """Upstream searches group by group and stops at the first group that
    alone finds nothing: a later group's unknown class is then never
    judged (200, empty); when every earlier group finds something, it is."""
    setup(api, upstream_placement, provider(CN1, 'cn1', {'VCPU': 8})
          + [('PUT', '/traits/CUSTOM_GOLD', '1.6', None)])
    statuses = []
    for query, version in [
            # a required trait no provider has
            ('resources=VCPU:3&required=STORAGE_DISK_SSD&resources1=CUSTOM_NOPE:4'
             '&group_policy=none', '1.29'),
            # a class no provider has
            ('resources=MEMORY_MB:3&resources1=VCPU:4,CUSTOM_NOPE:1&group_policy=none', '1.37'),
            # a root filter no tree passes
            ('resources=VCPU:1&resources1=CUSTOM_NOPE:1&root_required=CUSTOM_GOLD'
             '&group_policy=none', '1.35'),
            # the unsuffixed group first, wherever the query names it
            ('resources1=CUSTOM_NOPE:1&resources=VCPU:3&required=STORAGE_DISK_SSD'
             '&group_policy=none', '1.33'),
            # the first group finds cn1: the second's class is judged
            ('resources1=VCPU:1&resources2=CUSTOM_NOPE:1&group_policy=none', '1.33')]:
        statuses.append(same_answer(api, upstream_placement,
                                    '/allocation_candidates?' + query, version)[0])
    assert statuses[:3] == [200, 200, 200] and statuses[4] == 400, statuses


def test_an_emptying_root_or_aggregate_filter_comes_before_unknown_names(
        api, upstream_placement):
    """The roots' traits are searched before any group's names are judged,
    and a group's aggregates (their providers, not the names alone) before
    its traits."""
    setup(api, upstream_placement, provider(CN1, 'cn1', {'VCPU': 8}) + [
        ('PUT', '/traits/CUSTOM_GOLD', '1.6', None),
        # AGG is known but, once cn1 leaves it and cn2 is deleted, holds no provider
        ('PUT', '/resource_providers/%s/aggregates' % CN1, '1.1', [AGG]),
        ('PUT', '/resource_providers/%s/aggregates' % CN1, '1.1', [UNKNOWN_AGG])]
          + provider(CN2, 'cn2', {'VCPU': 8}) + [
        ('PUT', '/resource_providers/%s/aggregates' % CN2, '1.1', [AGG]),
        ('DELETE', '/resource_providers/%s' % CN2, '1.1', None)])
    statuses = [same_answer(api, upstream_placement, '/allocation_candidates?' + query,
                            version)[0] for query, version in [
        ('resources=VCPU:1,CUSTOM_NOPE:1&root_required=CUSTOM_GOLD', '1.35'),
        ('resources=VCPU:1,CUSTOM_NOPE:1&root_required=!CUSTOM_GOLD', '1.35'),
        ('resources=VCPU:1&member_of=%s&required=CUSTOM_NOPE' % AGG, '1.29'),
        ('resources=VCPU:1&member_of=%s&required=CUSTOM_NOPE' % UNKNOWN_AGG, '1.29')]]
    assert statuses == [200, 400, 200, 400]


def test_a_list_asking_for_aggregates_no_provider_is_in_never_judges_classes(
        api, upstream_placement):
    setup(api, upstream_placement, provider(CN1, 'cn1', {'VCPU': 8})
          + provider(CN2, 'cn2', {'VCPU': 8}) + [
        # AGG is known but, once cn2 is deleted, holds no provider
        ('PUT', '/resource_providers/%s/aggregates' % CN1, '1.1', [UNKNOWN_AGG]),
        ('PUT', '/resource_providers/%s/aggregates' % CN2, '1.1', [AGG]),
        ('DELETE', '/resource_providers/%s' % CN2, '1.1', None)])
    statuses = [same_answer(api, upstream_placement, '/resource_providers?' + query, version)[0]
                for query, version in [
        ('member_of=in:%s,%s&resources=CUSTOM_NOPE:1' % (AGG, CN2), '1.14'),
        ('member_of=%s&resources=CUSTOM_NOPE:1' % UNKNOWN_AGG, '1.14')]]
    assert statuses == [200, 400]
