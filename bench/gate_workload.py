"""The gate's workload, as data: placeload's flat providers, the nested
trees, and the two allocation-candidates queries sent to them.

Imports nothing of the server: bench/cpu_cells.py loads it before it puts
a compared tree's ``placement_server`` first on sys.path, and older trees
have no such module.
"""

# placeload's: every flat provider is in one to three of these aggregates,
# has one to three of these traits (cycling), and this inventory.
AGGREGATES = ['14a5c8a3-5a99-4e8f-88be-00d85fcb1c17', '66d98e7c-3c25-485d-a0dc-1cea651884de',
              'a59dbb28-fd98-4c6e-9ec5-ae5f3d04b0aa']
TRAITS = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2', 'STORAGE_DISK_SSD']
INVENTORY = {'VCPU': dict(total=32, min_unit=1, max_unit=16),
             'MEMORY_MB': dict(total=8192, min_unit=128, max_unit=8192),
             'DISK_GB': dict(total=8192, min_unit=5, max_unit=8192)}
FLAT_QUERY = ('resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=%s'
              '&required=HW_CPU_X86_AVX2' % AGGREGATES[0])

# The gate's nested topology (bench/allocation_candidates.py builds it over
# HTTP): (name, parent index, inventories, traits); 7 providers per tree.
TREE = [
    ('cn', None, {'DISK_GB': dict(total=20480)}, ['COMPUTE_VOLUME_MULTI_ATTACH']),
    ('numa0', 0, {'VCPU': dict(total=4, reserved=2),
                  'MEMORY_MB': dict(total=2048, min_unit=512, step_size=256)}, ['HW_NUMA_ROOT']),
    ('fpga0', 1, {'FPGA': dict(total=1)}, []),
    ('pgpu0', 1, {'VGPU': dict(total=8)}, []),
    ('numa1', 0, {'VCPU': dict(total=4), 'MEMORY_MB': dict(total=2048, max_unit=1024)},
     ['HW_NUMA_ROOT', 'CUSTOM_FOO']),
    ('fpga1_0', 4, {'FPGA': dict(total=1)}, []),
    ('fpga1_1', 4, {'FPGA': dict(total=1)}, []),
]
NESTED_QUERY = ('resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH'
                '&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO'
                '&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA')
