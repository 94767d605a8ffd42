"""What the dry run answers a write (tracker.placement.http.accepted): what
placement answers one it accepts, as far as the report client reads it."""
from tracker.placement import http

RP = '11111111-1111-4111-8111-111111111111'


def test_a_new_provider_starts_at_generation_0_with_or_without_a_body():
    body = {'uuid': RP, 'name': 'compute1'}
    assert http.accepted('POST', '/resource_providers', body, (1, 20)).body['generation'] == 0
    old = http.accepted('POST', '/resource_providers', body, (1, 19))
    assert (old.status, old.body) == (201, None)


def test_a_part_written_moves_the_generation_by_one():
    for part, value in (('inventories', {'VCPU': {'total': 8}}), ('traits', ['HW_CPU_X86_AVX2']),
                        ('aggregates', [RP])):
        resp = http.accepted('PUT', '/resource_providers/%s/%s' % (RP, part),
                             {'resource_provider_generation': 4, part: value}, (1, 39))
        assert resp.ok and resp.body == {part: value, 'resource_provider_generation': 5}
    # aggregates before 1.19: a bare list, no generation
    resp = http.accepted('PUT', '/resource_providers/%s/aggregates' % RP, [RP], (1, 18))
    assert resp.body == {'aggregates': [RP]}


def test_a_rename_leaves_the_generation_to_what_the_client_knows():
    resp = http.accepted('PUT', '/resource_providers/%s' % RP, {'name': 'n'}, (1, 39))
    assert resp.ok and 'generation' not in resp.body


def test_deletes_allocations_names_and_reshapes_are_accepted_without_a_body():
    for method, path in (('DELETE', '/resource_providers/%s' % RP), ('DELETE', '/allocations/c'),
                         ('PUT', '/allocations/c'), ('POST', '/reshaper'),
                         ('PUT', '/traits/CUSTOM_X'), ('PUT', '/resource_classes/CUSTOM_X')):
        resp = http.accepted(method, path, None, (1, 39))
        assert resp.ok and resp.body is None, (method, path)
