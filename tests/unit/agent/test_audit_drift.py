"""The drift between a host and placement, kind by kind."""
import json

from tracker import audit
from tracker.drivers.base import HostSnapshot
from tracker.drivers.base import Instance
from tracker.placement.http import Write
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory

ROOT = '11111111-1111-4111-8111-111111111111'
GPU = '22222222-2222-4222-8222-222222222222'
VM1 = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa'
VM2 = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb'
AGG = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc'


def host():
    root = Provider(ROOT, 'compute1', inventories={
        'VCPU': inventory(16, allocation_ratio=4.0),
        'MEMORY_MB': inventory(65536, reserved=512)},
        traits={'HW_CPU_X86_AVX2'}, aggregates={AGG})
    gpu = Provider(GPU, 'compute1_gpu0', parent_uuid=ROOT,
                   inventories={'VGPU': inventory(4)})
    vm = Instance(VM1, 'vm1', 'p', 'u', {ROOT: {'VCPU': 2, 'MEMORY_MB': 2048},
                                         GPU: {'VGPU': 1}})
    return HostSnapshot('compute1', [root, gpu], [vm])


def placement_copy(snapshot):
    providers = [p.copy() for p in snapshot.providers]
    allocations = {
        i.uuid: {'allocations': {rp: {'resources': dict(r)}
                                 for rp, r in i.allocations.items()}}
        for i in snapshot.instances}
    return providers, allocations


def kinds(drift):
    return sorted(d.kind for d in drift)


def test_identical_is_in_sync():
    snapshot = host()
    assert audit.compute_drift(snapshot, *placement_copy(snapshot)) == []


def test_missing_and_extra_providers():
    snapshot = host()
    providers, allocations = placement_copy(snapshot)
    providers = [p for p in providers if p.uuid != GPU]
    providers.append(Provider('33333333-3333-4333-8333-333333333333',
                              'compute1_vf0', parent_uuid=ROOT))
    drift = audit.compute_drift(snapshot, providers, allocations)
    assert kinds(drift) == ['provider_extra', 'provider_missing']
    missing = next(d for d in drift if d.kind == 'provider_missing')
    assert (missing.uuid, missing.name) == (GPU, 'compute1_gpu0')


def test_inventory_differences():
    snapshot = host()
    providers, allocations = placement_copy(snapshot)
    root = providers[0]
    root.inventories['MEMORY_MB']['reserved'] = 0
    del root.inventories['VCPU']
    root.inventories['DISK_GB'] = inventory(100)
    drift = audit.compute_drift(snapshot, providers, allocations)
    assert kinds(drift) == ['inventory_differs', 'inventory_extra',
                            'inventory_missing']
    differs = next(d for d in drift if d.kind == 'inventory_differs')
    assert differs.detail == {'resource_class': 'MEMORY_MB', 'fields': {
        'reserved': {'host': 512, 'placement': 0}}}


def test_allocation_ratio_compared_as_a_number():
    snapshot = host()
    providers, allocations = placement_copy(snapshot)
    providers[0].inventories['VCPU']['allocation_ratio'] = 4
    assert audit.compute_drift(snapshot, providers, allocations) == []


def test_trait_and_aggregate_differences():
    snapshot = host()
    providers, allocations = placement_copy(snapshot)
    providers[0].traits = {'CUSTOM_OLD'}
    providers[0].aggregates = set()
    drift = audit.compute_drift(snapshot, providers, allocations)
    assert [(d.kind, d.detail) for d in drift] == [
        ('traits_missing', {'traits': ['HW_CPU_X86_AVX2']}),
        ('traits_extra', {'traits': ['CUSTOM_OLD']}),
        ('aggregates_missing', {'aggregates': [AGG]})]


def test_parent_and_name_differences():
    snapshot = host()
    providers, allocations = placement_copy(snapshot)
    providers[1].parent_uuid = None
    providers[1].name = 'old-name'
    assert kinds(audit.compute_drift(snapshot, providers, allocations)) == [
        'provider_name_differs', 'provider_parent_differs']


def test_allocation_differences():
    snapshot = host()
    snapshot.instances.append(Instance(VM2, 'vm2', 'p', 'u',
                                       {ROOT: {'VCPU': 1}}))
    providers, _ = placement_copy(snapshot)
    allocations = {
        VM1: {'allocations': {ROOT: {'resources': {'VCPU': 4, 'MEMORY_MB': 2048}},
                              GPU: {'resources': {'VGPU': 1}}}},
        'dddddddd-dddd-4ddd-8ddd-dddddddddddd': {
            'allocations': {ROOT: {'resources': {'VCPU': 1}}}},
    }
    drift = audit.compute_drift(snapshot, providers, allocations)
    assert kinds(drift) == ['allocation_differs', 'allocation_missing',
                            'allocation_orphan']
    differs = next(d for d in drift if d.kind == 'allocation_differs')
    assert differs.detail['placement'][ROOT] == {'VCPU': 4, 'MEMORY_MB': 2048}


def test_allocation_shapes_are_equivalent():
    assert (audit.normalize_allocations({ROOT: {'VCPU': 1}})
            == audit.normalize_allocations({ROOT: {'resources': {'VCPU': 1}}})
            == audit.normalize_allocations(
                {'allocations': {ROOT: {'resources': {'VCPU': 1}}},
                 'consumer_generation': 3}))


def test_writes_are_listed_by_what_they_write():
    # what the writes are comes from the sync itself (the dry run records
    # them: tests/functional/test_audit_dry_run.py); the list names them
    written = [Write('PUT', '/traits/CUSTOM_TRACKER'),
               Write('POST', '/resource_providers', {'uuid': GPU, 'name': 'compute1_gpu0'}),
               Write('PUT', '/resource_providers/%s/inventories' % ROOT, {}),
               Write('POST', '/reshaper', {}),
               Write('DELETE', '/allocations/%s' % VM2)]
    writes = audit.listed(written, {ROOT: 'compute1', GPU: 'compute1_gpu0'})
    assert [(w['method'], w['subject'], w['name']) for w in writes] == [
        ('PUT', 'CUSTOM_TRACKER', ''), ('POST', GPU, 'compute1_gpu0'),
        ('PUT', ROOT, 'compute1'), ('POST', '', ''), ('DELETE', VM2, '')]
    report = audit.AuditReport('compute1', [], writes=writes)
    assert report.as_text().splitlines()[-5:] == [
        '  PUT /traits/CUSTOM_TRACKER  (CUSTOM_TRACKER)',
        '  POST /resource_providers  (compute1_gpu0)',
        '  PUT /resource_providers/%s/inventories  (compute1)' % ROOT,
        '  POST /reshaper',
        '  DELETE /allocations/%s  (%s)' % (VM2, VM2)]
    assert 'written' not in report.as_dict()


def test_report_text_json_and_exit_codes():
    snapshot = host()
    providers, allocations = placement_copy(snapshot)
    in_sync = audit.AuditReport('compute1', [])
    assert in_sync.exit_code == audit.EXIT_IN_SYNC
    assert in_sync.as_text() == 'host compute1: in sync with placement'

    providers[0].traits = set()
    drift = audit.compute_drift(snapshot, providers, allocations)
    report = audit.AuditReport('compute1', drift)
    assert report.exit_code == audit.EXIT_DRIFT
    text = report.as_text()
    assert text.splitlines()[0] == 'host compute1: 1 difference(s) with placement'
    assert 'traits_missing' in text and 'HW_CPU_X86_AVX2' in text
    body = json.loads(json.dumps(report.as_dict()))
    assert body['in_sync'] is False
    assert body['drift'][0]['kind'] == 'traits_missing'

    report.fixed = True
    assert report.exit_code == audit.EXIT_IN_SYNC
    report.remaining = drift
    assert report.exit_code == audit.EXIT_DRIFT
