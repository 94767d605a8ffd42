"""Differences from upstream placement 16.0.0 the differential test
(tests/differential/) found, each sent to upstream (a real process) and to
ours on every engine: status, code and the whole error text must be the
same, and each test also says what the answer is, so that it fails
without upstream too.
"""
import pytest

from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401  (fixture)
from tests.upstream import upstream_placement  # noqa: F401

CN = 'c0a80101-0000-4000-8000-0000000004a1'
MISSING = 'c0a80101-0000-4000-8000-0000000004ff'
BAD = 'The server could not comply with the request since it is either malformed or ' \
      'otherwise incorrect.\n\n %s  '
NOT_FOUND = 'The resource could not be found.\n\n %s  '
CONFLICT = 'There was a conflict when trying to complete your request.\n\n %s  '
NO_RP = 'No resource provider with uuid %s found' % MISSING


def run(api, base, script):
    """Ours's answers as (status, code, detail), after checking upstream's
    are the same."""
    answers = []
    for status, got in side_by_side.agree(api, base, script):
        err = (got or {}).get('errors', [{}])[0]
        answers.append((status, err.get('code'), err.get('detail')))
    return answers


@pytest.mark.parametrize('part, lead', [
    ('usages', NO_RP + ': '),
    ('traits', NO_RP + ': '),
    ('inventories', NO_RP + ' : '),
    ('inventories/VCPU', NO_RP + ' : '),
    ('allocations', "Resource provider '%s' not found: " % MISSING),
])
def test_reading_a_missing_providers_part_says_what_was_looked_for(
        api, upstream_placement, part, lead):
    [answer] = run(api, upstream_placement, [
        ('GET', '/resource_providers/%s/%s' % (MISSING, part), '1.39', None)])
    assert answer == (404, 'placement.undefined_code', NOT_FOUND % (lead + NO_RP))


def test_reshaper_names_the_missing_provider_twice(api, upstream_placement):
    [answer] = run(api, upstream_placement, [('POST', '/reshaper', '1.39', {
        'inventories': {MISSING: {'resource_provider_generation': 0,
                                  'inventories': {'VCPU': {'total': 4}}}},
        'allocations': {}})])
    assert answer == (400, 'placement.resource_provider.not_found', BAD % (
        'Resource provider %s in inventories not found: %s' % (MISSING, NO_RP)))


def test_deleting_a_standard_class_is_an_error_in_delete(api, upstream_placement):
    [answer] = run(api, upstream_placement, [('DELETE', '/resource_classes/VCPU', '1.7', None)])
    assert answer == (400, None, BAD % (
        'Error in delete resource class: Cannot delete standard resource class VCPU.'))


def test_deleting_inventory_of_an_unknown_class_names_the_class(api, upstream_placement):
    answers = run(api, upstream_placement, [
        ('POST', '/resource_providers', '1.20', {'name': 'cn', 'uuid': CN}),
        ('DELETE', '/resource_providers/%s/inventories/CUSTOM_NOPE' % CN, '1.39', None)])
    assert answers[-1] == (404, 'placement.undefined_code', NOT_FOUND % (
        'No inventory of class CUSTOM_NOPE found for delete: '
        'No such resource class CUSTOM_NOPE.'))


def test_delete_all_inventories_before_1_5_is_a_bare_405(api, upstream_placement):
    answers = run(api, upstream_placement, [
        ('POST', '/resource_providers', '1.20', {'name': 'cn', 'uuid': CN}),
        ('DELETE', '/resource_providers/%s/inventories' % CN, '1.4', None)])
    assert answers[-1] == (405, None, 'The method DELETE is not allowed for this resource. \n\n ')


def test_reshaper_judges_providers_in_the_order_given(api, upstream_placement):
    """Each provider in the body's order: missing (400), then stale (409)."""
    stale = {'resource_provider_generation': 1, 'inventories': {'MEMORY_MB': {'total': 14}}}
    missing = {'resource_provider_generation': 0, 'inventories': {'VCPU': {'total': 8}}}
    answers = run(api, upstream_placement, [
        ('POST', '/resource_providers', '1.29', {'name': 'cn', 'uuid': CN}),
        ('POST', '/reshaper', '1.30', {'allocations': {},
                                       'inventories': {MISSING: missing, CN: stale}}),
        ('POST', '/reshaper', '1.30', {'allocations': {},
                                       'inventories': {CN: stale, MISSING: missing}})])
    assert answers[-2] == (400, 'placement.resource_provider.not_found', BAD % (
        'Resource provider %s in inventories not found: %s' % (MISSING, NO_RP)))
    assert answers[-1][:2] == (409, 'placement.concurrent_update')


CONSUMER = 'c0a80101-0000-4000-8000-0000000004c1'
OTHER_MISSING = 'c0a80101-0000-4000-8000-0000000004fe'
OWNER = {'project_id': 'c0a80101-0000-4000-8000-0000000004d1',
         'user_id': 'c0a80101-0000-4000-8000-0000000004d2'}


def test_an_allocation_names_the_first_missing_provider_in_the_bodys_order(
        api, upstream_placement):
    answers = run(api, upstream_placement, [
        ('PUT', '/allocations/%s' % CONSUMER, '1.28', dict(OWNER, consumer_generation=None,
         allocations={MISSING: {'resources': {'VCPU': 1}},
                      OTHER_MISSING: {'resources': {'VCPU': 1}}}))])
    assert answers == [(400, 'placement.undefined_code', BAD % (
        "Allocation for resource provider '%s' that does not exist." % MISSING))]


def test_a_provider_without_inventory_of_any_class_claimed_names_every_class(
        api, upstream_placement):
    """In the order upstream's set of class ids gives: NUMA_MEMORY_MB's id
    (8) before MEMORY_MB's (1)."""
    answers = run(api, upstream_placement, [
        ('POST', '/resource_providers', '1.20', {'name': 'cn', 'uuid': CN}),
        ('PUT', '/allocations/%s' % CONSUMER, '1.28', dict(OWNER, consumer_generation=None,
         allocations={CN: {'resources': {'MEMORY_MB': 1, 'NUMA_MEMORY_MB': 1}}}))])
    assert answers[-1] == (409, 'placement.undefined_code', CONFLICT % (
        "Unable to allocate inventory: Inventory for 'NUMA_MEMORY_MB, MEMORY_MB' on "
        "resource provider '%s' invalid." % CN))


def test_reshaper_words_unknown_classes_and_inventory_in_use_as_upstream(
        api, upstream_placement):
    inventory = {'inventories': {'VCPU': {'total': 8}}}
    answers = run(api, upstream_placement, [
        ('POST', '/resource_providers', '1.20', {'name': 'cn', 'uuid': CN}),
        ('PUT', '/resource_providers/%s/inventories' % CN, '1.20',
         dict(inventory, resource_provider_generation=0)),
        ('PUT', '/allocations/%s' % CONSUMER, '1.28', dict(OWNER, consumer_generation=None,
         allocations={CN: {'resources': {'VCPU': 1}}})),
        ('POST', '/reshaper', '1.30', {'allocations': {}, 'inventories': {CN: {
            'resource_provider_generation': 2,
            'inventories': {'VCPU': {'total': 8}, 'CUSTOM_NOPE': {'total': 1}}}}}),
        ('POST', '/reshaper', '1.30', {'allocations': {}, 'inventories': {CN: {
            'resource_provider_generation': 2,
            'inventories': {'MEMORY_MB': {'total': 8}}}}})])
    assert answers[-2] == (400, 'placement.undefined_code', BAD % (
        'malformed reshaper data: No such resource class CUSTOM_NOPE.'))
    assert answers[-1] == (409, 'placement.inventory.inuse', CONFLICT % (
        "update conflict: Inventory for 'VCPU' on resource provider '%s' in use." % CN))



def test_an_allocation_write_names_the_first_failing_claim_in_the_bodys_order(
        api, upstream_placement):
    """The first consumer's claim is over capacity, the second's names a
    class its provider has no inventory of (it has of another the write
    claims): the first is named."""
    inventories = [('PUT', '/resource_providers/%s/inventories' % uuid, '1.20',
                    {'resource_provider_generation': 0, 'inventories': {rc: {'total': 4}}})
                   for uuid, rc in ((CN, 'MEMORY_MB'), (MISSING, 'VCPU'))]
    second = 'c0a80101-0000-4000-8000-0000000004c2'
    answers = run(api, upstream_placement, [
        ('POST', '/resource_providers', '1.20', {'name': 'cn', 'uuid': CN}),
        ('POST', '/resource_providers', '1.20', {'name': 'cn2', 'uuid': MISSING})]
        + inventories + [
        ('POST', '/allocations', '1.28', {
            CONSUMER: dict(OWNER, consumer_generation=None,
                           allocations={CN: {'resources': {'MEMORY_MB': 8}}}),
            second: dict(OWNER, consumer_generation=None,
                         allocations={MISSING: {'resources': {'VCPU': 1,
                                                               'MEMORY_MB': 1}}})})])
    assert answers[-1] == (409, 'placement.undefined_code', CONFLICT % (
        "Unable to allocate inventory: Unable to create allocation for 'MEMORY_MB' on "
        "resource provider '%s'. The requested amount would exceed the capacity." % CN))
