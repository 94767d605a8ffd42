"""What the PostgreSQL and the MariaDB write tests both check of a write's
round trips, given each engine's recording of what the driver is asked to
send (their ``sent`` fixtures)."""
from tests.functional import client as client_mod

INVENTORIES = {'VCPU': {'total': 8}, 'MEMORY_MB': {'total': 1024}}


def put_inventories(database, sent):
    """A provider given INVENTORIES (PUT, at generation 0), with ``sent``
    holding only what that write sent: (client, provider uuid)."""
    api = client_mod.Client(client_mod.make_app(database))
    rp = client_mod.make_provider(api, 'cn1')
    del sent[:]
    resp = api.put('/resource_providers/%s/inventories' % rp, {
        'resource_provider_generation': 0, 'inventories': INVENTORIES})
    assert resp.status_int == 200, resp.body
    return api, rp


def check_inventories(api, rp):
    """The provider holds INVENTORIES, at generation 1."""
    got = api.get('/resource_providers/%s/inventories' % rp).json
    assert set(got['inventories']) == set(INVENTORIES)
    assert got['resource_provider_generation'] == 1


def create_root(database):
    """A root provider created through the API (1.20): (client, uuid)."""
    api = client_mod.Client(client_mod.make_app(database))
    resp = api.post('/resource_providers', {'name': 'cn1'}, version='1.20')
    assert resp.status_int == 200, resp.body
    return api, resp.json['uuid']


def check_own_root(api, uuid):
    """The provider is its own root, at generation 0."""
    got = api.get('/resource_providers/%s' % uuid, version='1.20').json
    assert got['root_provider_uuid'] == uuid and got['generation'] == 0


def check_claims_go_with_the_record(database, sent):
    """A claim's allocation rows and generation bump ride with the record;
    a new consumer's claim is two round trips, its row with the record;
    an existing consumer's allocations are replaced."""
    api = client_mod.Client(client_mod.make_app(database), version='1.38')
    rp = client_mod.make_provider(api, 'cn1', {'VCPU': {'total': 8}})
    consumer = '0c0c0c0c-0000-4000-8000-000000000001'
    del sent[:]
    resp = api.put('/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': {'VCPU': 2}}}, 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'})
    assert resp.status_int == 204, resp.body
    pg = database.dialect == 'postgresql'
    # the providers are locked: the new consumer's row, the allocations
    # and the bump wait for the record
    last = sent[-1]
    assert last.startswith('INSERT INTO consumers') and ';INSERT INTO allocations' in last, last
    assert ('UPDATE resource_providers SET generation = generation + 1' in last
            and last.endswith(';COMMIT')), last
    assert not any('INSERT INTO allocations' in t for t in sent[:-1]), sent
    # a consumer this write created has no allocations to delete
    assert not any('DELETE FROM allocations' in t for t in sent), sent
    got = api.get('/resource_providers/%s' % rp).json
    assert got['generation'] == 2
    assert api.get('/allocations/%s' % consumer).json['allocations'][rp]['resources'] == {
        'VCPU': 2}
    # an existing consumer's allocations are replaced, not added to
    del sent[:]
    resp = api.put('/allocations/%s' % consumer, {
        'allocations': {rp: {'resources': {'VCPU': 3}}}, 'consumer_generation': 1,
        'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'})
    assert resp.status_int == 204, resp.body
    assert any('DELETE FROM allocations' in t for t in sent), sent
    assert api.get('/allocations/%s' % consumer).json['allocations'][rp]['resources'] == {
        'VCPU': 3}
    assert api.get('/resource_providers/%s/usages' % rp).json['usages'] == {'VCPU': 3}
    # a new consumer of known names: lock the consumer and the providers,
    # read the names and the capacity, in one; its row, the allocations,
    # the generations and the record in the other
    del sent[:]
    resp = api.put('/allocations/%s' % '0c0c0c0c-0000-4000-8000-000000000002', {
        'allocations': {rp: {'resources': {'VCPU': 1}}}, 'consumer_generation': None,
        'project_id': 'p', 'user_id': 'u', 'consumer_type': 'INSTANCE'})
    assert resp.status_int == 204, resp.body
    assert len(sent) == 2, sent
    # (PostgreSQL: planned by the first claim on this connection)
    assert (pg and sent[0].startswith('BEGIN;EXECUTE placement_')) or all(
        part in sent[0] for part in ('FOR UPDATE', 'resource_classes', 'inventories')), sent[0]
    assert 'INSERT INTO consumers' in sent[1] and sent[1].endswith('COMMIT'), sent[1]
