from tracker import usage
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory

ROOT = '11111111-1111-4111-8111-111111111111'
GPU = '22222222-2222-4222-8222-222222222222'


def test_tree_with_usage():
    providers = [
        Provider(ROOT, 'compute1', inventories={
            'VCPU': inventory(8, allocation_ratio=2.0),
            'MEMORY_MB': inventory(4096, reserved=1024)}, traits={'HW_CPU_X86_AVX2'}),
        Provider(GPU, 'compute1_gpu0', parent_uuid=ROOT,
                 inventories={'VGPU': inventory(4)}),
    ]
    allocations = {
        'a': {'allocations': {ROOT: {'resources': {'VCPU': 2}},
                              GPU: {'resources': {'VGPU': 1}}}},
        'b': {ROOT: {'VCPU': 3, 'MEMORY_MB': 512}},
    }
    assert usage.format_tree(providers, allocations).splitlines() == [
        'compute1 (%s)' % ROOT,
        '  traits: HW_CPU_X86_AVX2',
        '  MEMORY_MB               512 / 3072 used  (total 4096, reserved 1024, ratio 1)',
        '  VCPU                      5 / 16 used  (total 8, reserved 0, ratio 2)',
        '  compute1_gpu0 (%s)' % GPU,
        '    VGPU                      1 / 4 used  (total 4, reserved 0, ratio 1)',
    ]
