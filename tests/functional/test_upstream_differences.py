"""Differences from upstream placement that clients saw (issue 29), each
sent to upstream 16.0.0 (a real process) and to ours on every engine: the
status, the code and the whole error text must be the same, and each test
also says what the answer is, so that it fails without upstream too.
"""
import uuid

import pytest

from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

CN = 'c0a80101-0000-4000-8000-0000000002a1'
MISSING = 'c0a80101-0000-4000-8000-0000000002ff'
C1 = 'c0c0c0c0-0000-4000-8000-000000000201'
C2 = 'c0c0c0c0-0000-4000-8000-000000000202'
INV = '/resource_providers/%s/inventories' % CN
BAD = 'The server could not comply with the request since it is either malformed or ' \
      'otherwise incorrect.\n\n %s  '
NOT_FOUND = 'The resource could not be found.\n\n %s  '
CONFLICT = 'There was a conflict when trying to complete your request.\n\n %s  '


def alloc(resources, gen=None):
    return {'allocations': {CN: {'resources': resources}}, 'project_id': 'p',
            'user_id': 'u', 'consumer_generation': gen}


run = side_by_side.agree


def error(answer):
    status, body = answer
    err = body['errors'][0]
    return status, err.get('code'), err['detail']


def provider(total=4):
    return [('POST', '/resource_providers', '1.20', {'name': 'cn', 'uuid': CN}),
            ('PUT', INV, '1.20', {'resource_provider_generation': 0,
                                  'inventories': {'VCPU': {'total': total},
                                                  'DISK_GB': {'total': 10}}})]


def test_aggregates_stale_generation_says_update_and_try_again(api, upstream_placement):
    answers = run(api, upstream_placement, provider() + [
        ('PUT', '/resource_providers/%s/aggregates' % CN, '1.19',
         {'aggregates': [], 'resource_provider_generation': 99999})])
    assert error(answers[-1]) == (409, None, CONFLICT % (
        "Resource provider's generation already changed. Please update the "
        "generation and try again."))


def test_error_texts_start_with_the_status_sentence(api, upstream_placement):
    answers = run(api, upstream_placement, [
        ('GET', '/resource_providers/' + MISSING, '1.23', None),
        ('GET', '/nothing/here', '1.23', None),
        ('POST', '/resource_providers', '1.23', '{"name": '),
        ('DELETE', '/traits/HW_CPU_X86_AVX', '1.23', None),
        ('PATCH', '/resource_providers', '1.23', None),
    ])
    assert [error(a) for a in answers] == [
        (404, 'placement.undefined_code',
         NOT_FOUND % ('No resource provider with uuid %s found' % MISSING)),
        (404, 'placement.undefined_code', 'The resource could not be found.\n\n   '),
        (400, 'placement.undefined_code', BAD % (
            'Malformed JSON: Expecting value: line 1 column 10 (char 9)')),
        (400, 'placement.undefined_code', BAD % 'Cannot delete standard trait HW_CPU_X86_AVX.'),
        (405, 'placement.undefined_code', 'The method PATCH is not allowed for this resource. '
         '\n\n The method specified is not allowed for this resource.'),
    ]


def test_inventory_in_use_is_worded_and_coded_per_call(api, upstream_placement):
    in_use = "Inventory for 'VCPU' on resource provider '%s' in use." % CN
    answers = run(api, upstream_placement, provider() + [
        ('PUT', '/allocations/' + C1, '1.28', alloc({'VCPU': 1, 'DISK_GB': 1})),
        ('PUT', INV, '1.39', {'resource_provider_generation': 2,
                              'inventories': {'DISK_GB': {'total': 10}}}),
        ('DELETE', INV + '/VCPU', '1.39', None),
        ('DELETE', INV + '/VCPU', '1.10', None),
        ('DELETE', INV, '1.39', None),
    ])
    assert [error(a) for a in answers[3:]] == [
        (409, 'placement.inventory.inuse', CONFLICT % ('update conflict: ' + in_use)),
        (409, 'placement.concurrent_update',
         CONFLICT % ('Unable to delete inventory of class VCPU: ' + in_use)),
        (409, None, CONFLICT % ('Unable to delete inventory of class VCPU: ' + in_use)),
        (409, 'placement.inventory.inuse', CONFLICT % (
            "Inventory for 'VCPU, DISK_GB' on resource provider '%s' in use." % CN)),
    ]


def test_duplicate_resource_class_has_no_specific_code(api, upstream_placement):
    # (upstream's rows are wiped between tests, its classes are not)
    name = 'CUSTOM_DIFF_%s' % uuid.uuid4().hex.upper()
    answers = run(api, upstream_placement, [
        ('POST', '/resource_classes', '1.23', {'name': name}),
        ('POST', '/resource_classes', '1.23', {'name': name})])
    assert error(answers[1]) == (409, 'placement.undefined_code', CONFLICT % (
        'Conflicting resource class already exists: %s' % name))


@pytest.mark.parametrize('method, path, body', [
    ('PUT', '/resource_providers/%s/aggregates' % MISSING,
     {'aggregates': [], 'resource_provider_generation': 2 ** 33}),
    ('PUT', '/resource_providers/%s/traits' % MISSING,
     {'traits': [], 'resource_provider_generation': 2 ** 33}),
    ('PUT', '/resource_providers/%s/inventories' % MISSING,
     {'inventories': {}, 'resource_provider_generation': 2 ** 33}),
    ('PUT', '/resource_providers/%s/inventories' % MISSING,
     {'inventories': {'VCPU': 1}, 'resource_provider_generation': 0}),
    ('POST', '/resource_providers/%s/inventories' % MISSING, {'totl': 1}),
    ('PUT', '/resource_providers/%s/inventories/VCPU' % MISSING,
     {'resource_provider_generation': 0, 'totl': 1}),
    ('PUT', '/resource_providers/%s' % MISSING, {'nme': 'x'}),
])
def test_missing_provider_is_404_before_body_and_generation(api, upstream_placement,
                                                             method, path, body):
    answers = run(api, upstream_placement, [(method, path, '1.23', body)])
    assert error(answers[0]) == (404, 'placement.undefined_code', NOT_FOUND % (
        'No resource provider with uuid %s found' % MISSING))


def test_generation_out_of_range_is_an_ordinary_conflict(api, upstream_placement):
    answers = run(api, upstream_placement, provider() + [
        ('PUT', '/resource_providers/%s/traits' % CN, '1.23',
         {'traits': [], 'resource_provider_generation': 2 ** 33}),
        ('PUT', INV + '/VCPU', '1.23', {'resource_provider_generation': 2 ** 33, 'total': 1}),
        ('PUT', INV, '1.23', {'resource_provider_generation': 2 ** 33, 'inventories': {}}),
    ])
    changed = ("Resource provider's generation already changed. Please update the "
               "generation and try again.")
    assert [error(a) for a in answers[2:]] == [
        (409, 'placement.concurrent_update', CONFLICT % changed),
        (409, 'placement.concurrent_update', CONFLICT % 'resource provider generation conflict'),
        (409, 'placement.concurrent_update', CONFLICT % 'resource provider generation conflict'),
    ]


def test_one_inventory_of_an_unknown_or_absent_class(api, upstream_placement):
    answers = run(api, upstream_placement, provider() + [
        ('PUT', INV + '/CUSTOM_DIFF_NOPE', '1.23', {'resource_provider_generation': 1,
                                                     'total': 1}),
        ('PUT', INV + '/MEMORY_MB', '1.23', {'resource_provider_generation': 1, 'total': 1}),
        ('DELETE', INV + '/MEMORY_MB', '1.23', None),
    ])
    assert [error(a) for a in answers[2:]] == [
        (404, 'placement.undefined_code', NOT_FOUND % 'No such resource class CUSTOM_DIFF_NOPE.'),
        (400, 'placement.undefined_code', BAD % (
            'No inventory record with resource class for resource provider %s: '
            'No inventory of class MEMORY_MB found.' % CN)),
        (404, 'placement.undefined_code', NOT_FOUND % (
            'No inventory of class MEMORY_MB found for delete: '
            'No inventory of class MEMORY_MB found for delete')),
    ]


def test_consumer_generation_is_judged_before_provider_and_class(api, upstream_placement):
    answers = run(api, upstream_placement, provider() + [
        ('PUT', '/allocations/' + C1, '1.28', alloc({'VCPU': 1})),
        ('PUT', '/allocations/' + C1, '1.28', alloc({'CUSTOM_DIFF_NOPE': 1}, gen=5)),
        ('POST', '/allocations', '1.28', {C1: alloc({'CUSTOM_DIFF_NOPE': 1}, gen=5)}),
        ('PUT', '/allocations/' + C1, '1.28', {
            'allocations': {MISSING: {'resources': {'CUSTOM_DIFF_NOPE': 1}}},
            'project_id': 'p', 'user_id': 'u', 'consumer_generation': 1}),
    ])
    stale = CONFLICT % 'consumer generation conflict - expected 1 but got 5'
    assert [error(a) for a in answers[3:]] == [
        (409, 'placement.concurrent_update', stale),
        (409, 'placement.concurrent_update', stale),
        (400, 'placement.undefined_code', BAD % (
            "Allocation for resource provider '%s' that does not exist." % MISSING)),
    ]


def test_over_capacity_replacement_may_keep_but_not_grow_usage(api, upstream_placement):
    answers = run(api, upstream_placement, provider() + [
        ('PUT', '/allocations/' + C1, '1.28', alloc({'VCPU': 3, 'DISK_GB': 1})),
        ('PUT', '/allocations/' + C2, '1.28', alloc({'VCPU': 1})),
        # The operator halves the total: usage 4 of 2.
        ('PUT', INV, '1.28', {'resource_provider_generation': 3, 'inventories': {
            'VCPU': {'total': 2}, 'DISK_GB': {'total': 10}}}),
        ('PUT', '/allocations/' + C1, '1.28', alloc({'VCPU': 3, 'DISK_GB': 2}, gen=1)),
        ('PUT', '/allocations/' + C2, '1.28', alloc({'VCPU': 2}, gen=1)),
        ('POST', '/allocations', '1.28', {C1: alloc({'VCPU': 2, 'DISK_GB': 2}, gen=2),
                                          C2: alloc({'VCPU': 2}, gen=1)}),
        ('PUT', '/allocations/' + C1, '1.28', alloc({'VCPU': 1, 'DISK_GB': 2}, gen=3)),
        ('PUT', '/allocations/' + C1, '1.28', alloc({'VCPU': 2, 'DISK_GB': 2}, gen=4)),
        ('GET', '/resource_providers/%s/usages' % CN, '1.28', None),
    ])
    assert [status for status, _ in answers[5:]] == [204, 409, 204, 204, 409, 200]
    assert answers[-1][1]['usages'] == {'VCPU': 3, 'DISK_GB': 2}


def test_reshaper_may_keep_an_over_capacity_provider_as_it_is(api, upstream_placement):
    answers = run(api, upstream_placement, provider() + [
        ('PUT', '/allocations/' + C1, '1.28', alloc({'VCPU': 4})),
        ('PUT', INV, '1.28', {'resource_provider_generation': 2, 'inventories': {
            'VCPU': {'total': 2}, 'DISK_GB': {'total': 10}}}),
        ('POST', '/reshaper', '1.30', {
            'inventories': {CN: {'resource_provider_generation': 3, 'inventories': {
                'VCPU': {'total': 2}, 'DISK_GB': {'total': 20}}}},
            'allocations': {C1: dict(alloc({'VCPU': 4, 'DISK_GB': 1}, gen=1))}}),
        ('POST', '/reshaper', '1.30', {
            'inventories': {CN: {'resource_provider_generation': 6, 'inventories': {
                'VCPU': {'total': 2}, 'DISK_GB': {'total': 20}}}},
            'allocations': {C1: dict(alloc({'VCPU': 5, 'DISK_GB': 1}, gen=2))}}),
    ])
    assert [status for status, _ in answers[4:]] == [204, 409]
