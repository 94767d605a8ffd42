"""uuid spellings and integers past the database's bounds, sent to
upstream placement 16.0.0 and to ours (real processes, tests/differential/
runner.py) on every engine: status, code and error text must be the same.
Each test also says what the answer is, so that it fails without upstream.

Upstream compares a uuid as the client spelt it with the one it stored
(lower case, dashed): what finds a row is the database's collation, which
on MariaDB ignores case (``FOLDS``) and elsewhere does not. It stores a
new provider's uuid and PUT /allocations/{uuid}'s consumer in canonical
form, other consumers and aggregates as spelt. Its allocation schemas bound
no amount and no generation: the claim's checks answer first (409).
"""
import pytest

from tests import databases
from tests.differential import runner
from tests.differential.generator import Call

pytestmark = pytest.mark.integration

RP = 'd236fc18-5847-4c90-b053-bbf94b701dd3'
UPPER = RP.upper()
BARE = RP.replace('-', '')
CHILD = 'f0010000-5847-4c90-b053-bbf94b701dd4'
C = 'c0a80101-0000-4000-8000-0000000004c1'
AGG = 'a0a80101-0000-4000-8000-0000000004a1'
OWNER = {'project_id': 'p', 'user_id': 'u'}
INVENTORY = {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 2048}}
BAD = ('The server could not comply with the request since it is either malformed or '
       'otherwise incorrect.\n\n %s  ')
CONFLICT = 'There was a conflict when trying to complete your request.\n\n %s  '
INT32 = 2 ** 31
INT64 = 2 ** 63
# After SETUP: RP at generation 3 (inventory, aggregate, a claim), C at 1.
SETUP = [
    Call('POST', '/resource_providers', '1.20', {'name': 'rp', 'uuid': RP}),
    Call('PUT', '/resource_providers/%s/inventories' % RP, '1.20',
         {'resource_provider_generation': 0, 'inventories': INVENTORY}),
    Call('PUT', '/resource_providers/%s/aggregates' % RP, '1.19',
         {'aggregates': [AGG], 'resource_provider_generation': 1}),
    Call('PUT', '/allocations/' + C, '1.28',
         dict(OWNER, consumer_generation=None, allocations={RP: {'resources': {'VCPU': 1}}})),
]


@pytest.fixture(scope='module', params=databases.BACKENDS)
def pair(request, tmp_path_factory):
    with runner.Pair(request.param, str(tmp_path_factory.mktemp('pair')),
                     instances=1, workers=1, texts=True) as started:
        yield started


def answers(pair, calls):
    """Ours's (status, body) after SETUP, each the same as upstream's."""
    result = pair.run(SETUP + calls, stop=False)
    for ex in result.exchanges:
        assert ex.want == ex.got, '%s\n upstream: %s\n ours:     %s' % (ex.sent, ex.want, ex.got)
    return [ex.got for ex in result.exchanges[len(SETUP):]]


def folds(pair):
    return pair.engine == 'mysql'


def detail(answer):
    return answer[1]['errors'][0]['detail']


def uuids(answer):
    return [rp['uuid'] for rp in answer[1]['resource_providers']]


def test_list_filters_find_a_provider_as_the_database_compares(pair):
    by_uuid, bare_uuid, in_tree, bare_tree = answers(pair, [
        Call('GET', '/resource_providers?uuid=' + UPPER, '1.20'),
        Call('GET', '/resource_providers?uuid=' + BARE, '1.20'),
        Call('GET', '/resource_providers?in_tree=' + UPPER, '1.20'),
        Call('GET', '/resource_providers?in_tree=' + BARE, '1.20')])
    found = [RP] if folds(pair) else []
    assert (by_uuid[0], uuids(by_uuid)) == (200, found)
    assert (in_tree[0], uuids(in_tree)) == (200, found)
    # a query string's uuid needs its dashes
    assert bare_uuid[0] == bare_tree[0] == 400
    assert "'%s' is not a 'uuid'" % BARE in detail(bare_uuid)


def test_candidates_find_in_tree_as_the_database_compares_and_aggregates_as_spelt(pair):
    upper_tree, bare_tree, upper_agg = answers(pair, [
        Call('GET', '/allocation_candidates?resources=VCPU:1&in_tree=' + UPPER, '1.31'),
        Call('GET', '/allocation_candidates?resources=VCPU:1&in_tree=' + BARE, '1.31'),
        Call('GET', '/allocation_candidates?resources=VCPU:1&member_of=' + AGG.upper(), '1.31')])
    assert len(upper_tree[1]['allocation_requests']) == (1 if folds(pair) else 0)
    assert bare_tree == upper_agg == (200, {'allocation_requests': [],
                                            'provider_summaries': {}})


def test_aggregates_are_stored_as_spelt(pair):
    other = 'b0a80101-0000-4000-8000-0000000004a2'
    put, got, by_spelling, by_canonical = answers(pair, [
        Call('PUT', '/resource_providers/%s/aggregates' % RP, '1.19',
             {'aggregates': [other.upper(), AGG.replace('-', '')],
              'resource_provider_generation': 3}),
        Call('GET', '/resource_providers/%s/aggregates' % RP, '1.19'),
        Call('GET', '/resource_providers?member_of=' + other.upper(), '1.20'),
        Call('GET', '/resource_providers?member_of=' + other, '1.20')])
    assert put[1]['aggregates'] == [other.upper(), AGG.replace('-', '')]
    assert sorted(got[1]['aggregates']) == sorted(put[1]['aggregates'])
    assert uuids(by_spelling) == [RP]
    assert uuids(by_canonical) == []


def test_an_allocations_providers_are_found_as_the_database_compares(pair):
    upper, bare_1_11 = answers(pair, [
        Call('PUT', '/allocations/' + C, '1.28', dict(
            OWNER, consumer_generation=1, allocations={UPPER: {'resources': {'VCPU': 1}}})),
        Call('PUT', '/allocations/' + C, '1.11', dict(OWNER, allocations=[
            {'resource_provider': {'uuid': BARE}, 'resources': {'VCPU': 1}}]))])
    missing = "Allocation for resource provider '%s' that does not exist."
    if folds(pair):
        assert upper == (204, None)
    else:
        assert upper[0] == 400 and detail(upper) == BAD % (missing % UPPER)
    assert bare_1_11[0] == 400 and detail(bare_1_11) == BAD % (missing % BARE)


def test_a_bodys_consumers_are_stored_as_spelt_and_puts_path_canonical(pair):
    post, read_upper, of_provider, put_bare, read = answers(pair, [
        Call('POST', '/allocations', '1.28', {C.upper(): dict(
            OWNER, consumer_generation=None, allocations={RP: {'resources': {'VCPU': 1}}})}),
        Call('GET', '/allocations/' + C.upper(), '1.28'),
        Call('GET', '/resource_providers/%s/allocations' % RP, '1.28'),
        Call('PUT', '/allocations/' + C.replace('-', ''), '1.28', dict(
            OWNER, consumer_generation=1, allocations={RP: {'resources': {'VCPU': 2}}})),
        Call('GET', '/allocations/' + C, '1.28')])
    if folds(pair):
        # the same consumer: a null generation is stale
        assert post[0] == 409 and detail(post) == CONFLICT % (
            'consumer generation conflict - expected 1 but got None')
        assert sorted(of_provider[1]['allocations']) == [C]
    else:
        assert post == (204, None)
        assert read_upper[1]['consumer_generation'] == 1
        assert sorted(of_provider[1]['allocations']) == [C.upper(), C]
    assert put_bare == (204, None)
    assert read[1]['consumer_generation'] == 2


def test_the_reshapers_uuids_are_found_as_the_database_compares(pair):
    inventories = {'resource_provider_generation': 3, 'inventories': INVENTORY}
    keyed, claimed, new_consumer = answers(pair, [
        Call('POST', '/reshaper', '1.30', {'inventories': {UPPER: inventories},
                                           'allocations': {}}),
        Call('POST', '/reshaper', '1.30', {'inventories': {RP: inventories}, 'allocations': {
            C: dict(OWNER, consumer_generation=1,
                    allocations={UPPER: {'resources': {'VCPU': 1}}})}}),
        Call('POST', '/reshaper', '1.30', {'inventories': {RP: inventories}, 'allocations': {
            C.upper(): dict(OWNER, consumer_generation=None,
                            allocations={RP: {'resources': {'VCPU': 1}}})}})])
    if folds(pair):
        assert keyed == (204, None)
        # the reshape moved RP's generation on: the next one is stale
        assert claimed[0] == 409
        assert new_consumer[0] == 409
    else:
        assert keyed[0] == 400 and detail(keyed) == BAD % (
            'Resource provider %s in inventories not found: No resource provider with '
            'uuid %s found' % (UPPER, UPPER))
        assert claimed[0] == 400 and detail(claimed) == BAD % (
            "Allocation for resource provider '%s' that does not exist." % UPPER)
        assert new_consumer == (204, None)


def test_a_parent_is_found_as_the_database_compares(pair):
    other = CHILD.replace('f001', 'f002')
    created, _, updated, read = answers(pair, [
        Call('POST', '/resource_providers', '1.20',
             {'name': 'child', 'uuid': CHILD, 'parent_provider_uuid': UPPER}),
        Call('POST', '/resource_providers', '1.20', {'name': 'other', 'uuid': other}),
        Call('PUT', '/resource_providers/' + other, '1.20',
             {'name': 'other', 'parent_provider_uuid': UPPER}),
        Call('GET', '/resource_providers/' + other, '1.20')])
    if folds(pair):
        # the answer names the parent as spelt, what is stored is its uuid
        assert created[0] == updated[0] == 200
        assert created[1]['parent_provider_uuid'] == updated[1]['parent_provider_uuid'] == UPPER
        assert read[1]['parent_provider_uuid'] == RP
    else:
        for answer in (created, updated):
            assert answer[0] == 400 and detail(answer).endswith(
                'parent provider UUID does not exist.  ')


def test_a_provider_is_never_its_own_parent(pair):
    """Deliberately unlike upstream on MariaDB, which makes a provider
    its own parent when the body spells its uuid otherwise
    (docs/compat.md); elsewhere both refuse it."""
    pair.reset()
    ours = pair.ours[0].url
    pair.send(ours, 'POST', '/resource_providers', '1.20', {'name': 'rp', 'uuid': RP})
    status, body = pair.send(ours, 'PUT', '/resource_providers/' + RP, '1.20',
                             {'name': 'rp', 'parent_provider_uuid': UPPER})
    assert status == 400
    assert pair.send(ours, 'GET', '/resource_providers/' + RP, '1.20')[1][
        'parent_provider_uuid'] is None


def test_errors_name_a_provider_found_by_another_spelling_as_upstream(pair):
    """On MariaDB: a claim's and an inventory's conflicts name the
    provider as stored, the reshaper's stale generation as spelt."""
    no_inventory, in_use, stale = answers(pair, [
        Call('PUT', '/allocations/' + C, '1.28', dict(
            OWNER, consumer_generation='$cgen:' + C,
            allocations={UPPER: {'resources': {'DISK_GB': 1}}})),
        Call('PUT', '/resource_providers/%s/inventories' % UPPER, '1.20', {
            'resource_provider_generation': '$gen:' + RP,
            'inventories': {'MEMORY_MB': {'total': 2048}}}),
        Call('POST', '/reshaper', '1.30', {'allocations': {}, 'inventories': {
            UPPER: {'resource_provider_generation': 99, 'inventories': INVENTORY}}})])
    if folds(pair):
        assert detail(no_inventory) == CONFLICT % (
            "Unable to allocate inventory: Inventory for 'DISK_GB' on resource provider "
            "'%s' invalid." % RP)
        assert detail(in_use) == CONFLICT % (
            "update conflict: Inventory for 'VCPU' on resource provider '%s' in use." % RP)
        assert detail(stale) == CONFLICT % (
            'resource provider generation conflict for provider %s: actual: 3, given: 99'
            % UPPER)
    else:
        assert [no_inventory[0], in_use[0], stale[0]] == [400, 404, 400]


def test_mappings_hold_uuids_under_group_names(pair):
    def claim(mappings):
        return Call('PUT', '/allocations/' + C, '1.34', dict(
            OWNER, consumer_generation=1, mappings=mappings,
            allocations={RP: {'resources': {'VCPU': 1}}}))
    not_uuid, other_key = answers(pair, [claim({'a': ['nope']}), claim({'!': ['nope']})])
    assert not_uuid[0] == 400 and "'nope' is not a 'uuid'" in detail(not_uuid)
    assert other_key == (204, None)


def test_amounts_past_the_database_integers_meet_the_claims_checks(pair):
    def calls(amount):
        return [
            Call('PUT', '/allocations/' + C, '1.28', dict(
                OWNER, consumer_generation=1,
                allocations={RP: {'resources': {'VCPU': amount}}})),
            Call('PUT', '/allocations/' + C, '1.28', dict(
                OWNER, consumer_generation=2,
                allocations={RP: {'resources': {'VCPU': amount}}})),
            Call('PUT', '/allocations/' + C, '1.28', dict(
                OWNER, consumer_generation=1,
                allocations={RP: {'resources': {'DISK_GB': amount}}})),
            Call('POST', '/allocations', '1.28', {C: dict(
                OWNER, consumer_generation=1,
                allocations={RP: {'resources': {'VCPU': amount}}})}),
            Call('PUT', '/allocations/' + C, '1.11', dict(OWNER, allocations=[
                {'resource_provider': {'uuid': RP}, 'resources': {'VCPU': amount}}])),
            Call('POST', '/reshaper', '1.30', {
                'inventories': {RP: {'resource_provider_generation': 3,
                                     'inventories': INVENTORY}},
                'allocations': {C: dict(OWNER, consumer_generation=1,
                                        allocations={RP: {'resources': {'VCPU': amount}}})}})]
    amounts = [INT32, INT64 - 1, INT64, 2 ** 64]
    # (each call fails: nothing moves, so one replay takes them all)
    got = answers(pair, [call for amount in amounts for call in calls(amount)])
    constraints = CONFLICT % (
        "Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource "
        "provider '%s'. The requested amount would violate inventory constraints." % RP)
    for n in range(len(amounts)):
        put, stale, no_inventory, post, old_form, reshaped = got[6 * n:6 * n + 6]
        for answer in (put, post, old_form, reshaped):
            assert answer[0] == 409 and detail(answer) == constraints
        assert detail(stale) == CONFLICT % 'consumer generation conflict - expected 1 but got 2'
        assert detail(no_inventory) == CONFLICT % (
            "Unable to allocate inventory: Inventory for 'DISK_GB' on resource provider '%s' "
            "invalid." % RP)


@pytest.mark.parametrize('generation', [INT32, INT64, 2 ** 64, -INT64 - 1])
def test_generations_past_the_database_integers_are_stale(pair, generation):
    inventories = {'resource_provider_generation': generation, 'inventories': INVENTORY}
    got = answers(pair, [
        Call('POST', '/reshaper', '1.30', {'inventories': {RP: inventories},
                                           'allocations': {}}),
        Call('PUT', '/resource_providers/%s/inventories' % RP, '1.20', inventories),
        Call('PUT', '/resource_providers/%s/traits' % RP, '1.20',
             {'traits': [], 'resource_provider_generation': generation}),
        Call('PUT', '/resource_providers/%s/aggregates' % RP, '1.20',
             {'aggregates': [], 'resource_provider_generation': generation}),
        Call('PUT', '/allocations/' + C, '1.28', dict(
            OWNER, consumer_generation=generation,
            allocations={RP: {'resources': {'VCPU': 1}}})),
        Call('PUT', '/allocations/' + C, '1.28', dict(
            OWNER, consumer_generation=1,
            allocations={RP: {'generation': generation, 'resources': {'VCPU': 1}}}))])
    assert [status for status, _ in got] == [409, 409, 409, 409, 409, 204]
    assert detail(got[0]) == CONFLICT % (
        'resource provider generation conflict for provider %s: actual: 3, given: %d'
        % (RP, generation))
