"""GET /allocation_candidates side by side with upstream placement.

The same provider trees (nested NUMA and SR-IOV children, a sharing
storage pool, aggregates, traits, usage) are built through the API of
both servers; then every query below must give the same status, error
code and, on success, the same candidates and provider summaries
(compared regardless of order).
"""
import json

import pytest
import requests

from tests import upstream
from tests.functional import client as client_mod
from tests.functional import side_by_side
from tests.upstream import _upstream_server  # noqa: F401 (fixture)


def U(n):
    return '00000000-0000-4000-8000-%012d' % n


AGG_A, AGG_B, AGG_NONE = U(901), U(902), U(903)
CN1, NUMA0, NUMA1, PF0, PF1, CN2, SS, CN3 = (U(i) for i in range(1, 9))


class Both:
    """Sends each request to our server (in process) and upstream (HTTP)."""

    def __init__(self, ours, upstream_url):
        self.ours = ours
        self.url = upstream_url
        self.session = requests.Session()

    def call(self, method, path, body=None, version='1.39'):
        ours = side_by_side.ours(self.ours, method, path, version, body)
        theirs = side_by_side.upstream(self.url, method, path, version, body,
                                       session=self.session)
        return (ours[0], ours[2]), (theirs[0], theirs[2])

    def setup(self, method, path, body=None, version='1.39'):
        ours, theirs = self.call(method, path, body, version)
        # Both succeed (upstream keeps custom traits between tests: 204 vs 201).
        assert ours[0] < 300 and theirs[0] < 300, (path, ours, theirs)


def provider(both, uuid, name, parent=None, inventories=None, traits=(), aggregates=()):
    body = {'name': name, 'uuid': uuid}
    if parent:
        body['parent_provider_uuid'] = parent
    both.setup('POST', '/resource_providers', body)
    gen = 0
    if inventories:
        both.setup('PUT', '/resource_providers/%s/inventories' % uuid,
                   {'resource_provider_generation': gen, 'inventories': inventories})
        gen += 1
    if traits:
        for t in traits:
            if t.startswith('CUSTOM_'):
                both.setup('PUT', '/traits/%s' % t)
        both.setup('PUT', '/resource_providers/%s/traits' % uuid,
                   {'resource_provider_generation': gen, 'traits': list(traits)})
        gen += 1
    if aggregates:
        both.setup('PUT', '/resource_providers/%s/aggregates' % uuid,
                   {'resource_provider_generation': gen, 'aggregates': list(aggregates)})


def inv(total, **kw):
    return dict({'total': total}, **kw)


@pytest.fixture(scope='module')
def both(_databases, _upstream_server):  # noqa: F811
    # Built once for the module: the queries only read.
    test_db = _databases('sqlite')
    test_db.reset()
    upstream.wipe(_upstream_server.db_url)
    both = Both(client_mod.Client(client_mod.make_app(test_db.db)), _upstream_server.url)
    provider(both, CN1, 'cn1', inventories={'DISK_GB': inv(100, reserved=10)},
             traits=['HW_CPU_X86_AVX2', 'COMPUTE_STATUS_DISABLED'], aggregates=[AGG_A])
    for numa, pf, net in ((NUMA0, PF0, 'CUSTOM_PHYSNET_A'), (NUMA1, PF1, 'CUSTOM_PHYSNET_B')):
        provider(both, numa, 'numa-%s' % numa[-1], parent=CN1,
                 inventories={'VCPU': inv(4), 'MEMORY_MB': inv(2048, step_size=256)},
                 traits=['HW_NUMA_ROOT'])
        provider(both, pf, 'pf-%s' % pf[-1], parent=numa,
                 inventories={'SRIOV_NET_VF': inv(8, max_unit=4)}, traits=[net])
    provider(both, CN2, 'cn2', inventories={'VCPU': inv(16, allocation_ratio=2.0),
                                            'MEMORY_MB': inv(8192)},
             traits=['HW_CPU_X86_AVX2'], aggregates=[AGG_A, AGG_B])
    provider(both, SS, 'shared-storage', inventories={'DISK_GB': inv(1000)},
             traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[AGG_A])
    provider(both, CN3, 'cn3', inventories={'VCPU': inv(2), 'MEMORY_MB': inv(1024),
                                            'DISK_GB': inv(50)}, aggregates=[AGG_B])
    both.setup('PUT', '/allocations/%s' % U(500), {
        'allocations': {CN2: {'resources': {'VCPU': 30}}, SS: {'resources': {'DISK_GB': 100}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}, version='1.28')
    return both


def normalized(body):
    if body is None or 'errors' in body:
        return None
    cands = []
    for c in body['allocation_requests']:
        c = dict(c)
        if 'mappings' in c:
            c['mappings'] = {k: sorted(v) for k, v in c['mappings'].items()}
        if isinstance(c['allocations'], list):
            c['allocations'] = sorted(c['allocations'],
                                      key=lambda a: a['resource_provider']['uuid'])
        cands.append(json.dumps(c, sort_keys=True))
    summaries = {u: dict(s, **({'traits': sorted(s['traits'])} if 'traits' in s else {}))
                 for u, s in body['provider_summaries'].items()}
    return sorted(cands), summaries


GATE = 'resources=VCPU:1,DISK_GB:10,MEMORY_MB:256'
QUERIES = [
    ('1.10', GATE),
    ('1.12', GATE),
    ('1.17', GATE + '&required=HW_CPU_X86_AVX2'),
    ('1.21', GATE + '&member_of=' + AGG_A),
    ('1.24', GATE + '&member_of=%s&member_of=%s' % (AGG_A, AGG_B)),
    ('1.26', 'resources=VCPU:2,MEMORY_MB:512'),
    ('1.27', 'resources=VCPU:2,MEMORY_MB:512'),
    ('1.28', GATE),
    ('1.29', GATE),
    ('1.29', GATE + '&required=HW_CPU_X86_AVX2'),
    ('1.29', GATE + '&required=!HW_CPU_X86_AVX2'),
    ('1.29', 'resources=VCPU:1,MEMORY_MB:256&resources1=SRIOV_NET_VF:1'),
    ('1.29', 'resources1=SRIOV_NET_VF:2&resources2=SRIOV_NET_VF:2&group_policy=isolate'),
    ('1.29', 'resources1=SRIOV_NET_VF:2&resources2=SRIOV_NET_VF:2&group_policy=none'),
    ('1.29', 'resources1=SRIOV_NET_VF:4&resources2=SRIOV_NET_VF:4&group_policy=none'),
    ('1.29', 'resources=VCPU:1&resources1=SRIOV_NET_VF:1&required1=CUSTOM_PHYSNET_B'),
    ('1.29', 'resources1=SRIOV_NET_VF:5'),
    ('1.29', 'resources=DISK_GB:900'),
    ('1.29', 'resources=DISK_GB:10&member_of=!' + AGG_A),
    ('1.31', 'resources=VCPU:1,DISK_GB:10&in_tree=' + NUMA1),
    ('1.31', 'resources=VCPU:1&in_tree=' + AGG_NONE),
    ('1.32', 'resources=VCPU:1&member_of=!' + AGG_B),
    ('1.32', 'resources=VCPU:1&member_of=!in:%s,%s' % (AGG_A, AGG_B)),
    ('1.33', 'resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1&group_policy=none'),
    ('1.34', 'resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1&group_policy=none'),
    ('1.34', GATE),
    ('1.35', 'resources=VCPU:1&root_required=!COMPUTE_STATUS_DISABLED'),
    ('1.35', 'resources=VCPU:1&root_required=HW_CPU_X86_AVX2,COMPUTE_STATUS_DISABLED'),
    ('1.36', 'resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1&required_NUMA=HW_NUMA_ROOT'
             '&same_subtree=_CPU,_NET,_NUMA&group_policy=none'),
    ('1.36', 'resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1'
             '&same_subtree=_CPU,_NET&group_policy=isolate'),
    ('1.39', 'resources=VCPU:1&required=in:CUSTOM_PHYSNET_A,HW_CPU_X86_AVX2'),
    ('1.39', 'resources=VCPU:1,SRIOV_NET_VF:1&required=in:CUSTOM_PHYSNET_A,CUSTOM_PHYSNET_B'
             '&required=HW_NUMA_ROOT'),
    # bad requests
    ('1.10', 'resources=VCPU:0'),
    ('1.10', 'resources=VCPU'),
    ('1.10', 'resources=CUSTOM_NOPE:1'),
    ('1.10', 'resources=VCPU:1&limit=1'),
    ('1.16', 'resources=VCPU:1&limit=0'),
    ('1.17', 'resources=VCPU:1&required=CUSTOM_NOPE'),
    ('1.21', 'resources=VCPU:1&member_of=%s,%s' % (AGG_A, AGG_B)),
    ('1.23', 'resources=VCPU:1&member_of=%s&member_of=%s' % (AGG_A, AGG_B)),
    ('1.25', 'resources1=VCPU:1&resources2=VCPU:1'),
    ('1.25', 'resources=VCPU:1&required1=HW_NUMA_ROOT'),
    ('1.31', 'resources=VCPU:1&in_tree=nope'),
    ('1.35', 'resources=VCPU:1&root_required=A&root_required=B'),
    ('1.35', 'resources=VCPU:1&root_required=CUSTOM_X,!CUSTOM_X'),
    ('1.36', 'required_X=HW_NUMA_ROOT&same_subtree=_X'),
    ('1.36', 'resources=VCPU:1&required_X=HW_NUMA_ROOT'),
    ('1.36', 'resources=VCPU:1&same_subtree=_X'),
    ('1.38', 'resources=VCPU:1&required=in:A,B'),
]


@pytest.mark.parametrize('version, query', QUERIES)
def test_same_answer_as_upstream(both, version, query):
    ours, theirs = both.call('GET', '/allocation_candidates?' + query, version=version)
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] >= 400 and tuple(map(int, version.split('.'))) >= (1, 23):
        assert ours[1]['errors'][0]['code'] == theirs[1]['errors'][0]['code']
    assert normalized(ours[1]) == normalized(theirs[1])
