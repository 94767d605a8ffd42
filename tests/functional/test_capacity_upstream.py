"""Flavor counts beside upstream placement 16.0.0: a fleet of the agent's
trees (flat hosts, NUMA children under a root with only traits and disk,
hosts whose disk is a sharing pool, an ironic node) is built through the
API of both servers; each flavor is placed on upstream (a real process)
one instance at a time as a scheduler places it; our capacity series'
counts, before, must equal what upstream took, summed and per host."""
import pytest
import requests

from placement_server.capacity import flavors
from placement_server.capacity import metrics
from tests import upstream
from tests.functional import client as client_mod
from tests.functional import placing
from tests.functional.test_allocation_candidates_upstream import Both
from tests.functional.test_allocation_candidates_upstream import U
from tests.functional.test_allocation_candidates_upstream import inv
from tests.functional.test_allocation_candidates_upstream import provider
from tests.upstream import _upstream_server  # noqa: F401 (fixture)

POOL_AGG, OTHER_AGG = U(911), U(912)
FLAVORS = {
    'small': ({'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}, ()),
    'avx': ({'VCPU': 2, 'MEMORY_MB': 1024}, ('HW_CPU_X86_AVX2',)),
    'disk': ({'DISK_GB': 100}, ()),
    'big': ({'VCPU': 4, 'MEMORY_MB': 4096, 'DISK_GB': 40}, ()),
    'metal': ({'CUSTOM_BAREMETAL': 1}, ()),
}


class Upstream:
    """placing's client calls, over HTTP to upstream."""

    class Answer:
        def __init__(self, resp):
            self.status_int = resp.status_code
            self.json = resp.json() if resp.content else None
            self.body = resp.content

    def __init__(self, url):
        self.url = url
        self.session = requests.Session()

    def request(self, method, path, body=None, version=None):
        headers = {'X-Auth-Token': 'admin', 'OpenStack-API-Version': 'placement %s' % version}
        return self.Answer(self.session.request(method, self.url + path, headers=headers,
                                                json=body, timeout=60))

    def get(self, path, version=None):
        return self.request('GET', path, version=version)

    def put(self, path, body=None, version=None):
        return self.request('PUT', path, body, version=version)


def fleet(both):
    both.setup('PUT', '/resource_classes/CUSTOM_BAREMETAL')
    provider(both, U(1), 'flat1', inventories={
        'VCPU': inv(8, allocation_ratio=2.0), 'MEMORY_MB': inv(8192, reserved=512),
        'DISK_GB': inv(200)}, traits=['HW_CPU_X86_AVX2'])
    # NUMA: the root holds traits and disk, the cells VCPU and memory
    provider(both, U(2), 'numa1', inventories={'DISK_GB': inv(100)},
             traits=['HW_CPU_X86_AVX2'], aggregates=[OTHER_AGG])
    for i, cell in enumerate((U(3), U(4))):
        provider(both, cell, 'numa1-cell%d' % i, parent=U(2), inventories={
            'VCPU': inv(4), 'MEMORY_MB': inv(4096, step_size=256)})
    # Pooled hosts and their pool
    provider(both, U(5), 'pooled1', inventories={'VCPU': inv(6), 'MEMORY_MB': inv(6144)},
             aggregates=[POOL_AGG])
    provider(both, U(6), 'pooled2', inventories={'VCPU': inv(16), 'MEMORY_MB': inv(16384)},
             aggregates=[POOL_AGG])
    provider(both, U(7), 'pool', inventories={'DISK_GB': inv(300, allocation_ratio=0.9)},
             traits=['MISC_SHARES_VIA_AGGREGATE'], aggregates=[POOL_AGG])
    provider(both, U(8), 'ironic1', inventories={'CUSTOM_BAREMETAL': inv(1)})
    both.setup('PUT', '/allocations/%s' % U(500), {
        'allocations': {U(6): {'resources': {'VCPU': 3}}, U(7): {'resources': {'DISK_GB': 30}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None}, version='1.28')


@pytest.mark.parametrize('flavor', sorted(FLAVORS))
def test_flavor_counts_equal_upstream_placing(flavor, _databases, _upstream_server):  # noqa: F811
    test_db = _databases('sqlite')
    test_db.reset()
    upstream.wipe(_upstream_server.db_url)
    ours = client_mod.Client(client_mod.make_app(test_db.db))
    fleet(Both(ours, _upstream_server.url))
    resources, required = FLAVORS[flavor]
    text = '%s: %s' % (flavor, ', '.join(['%s=%d' % rc for rc in sorted(resources.items())]
                                         + ['trait:%s=required' % t for t in required]))
    exporter = metrics.Exporter(test_db.db, flavors.parse_all([text]))
    total, per_host = placing.fits(exporter, flavor)
    placed = placing.place(Upstream(_upstream_server.url), resources, required)
    names = {U(i): name for i, name in ((1, 'flat1'), (2, 'numa1'), (5, 'pooled1'),
                                        (6, 'pooled2'), (7, 'pool'), (8, 'ironic1'))}
    assert per_host == {name: placed.get(u, 0) for u, name in names.items()}
    assert total == sum(placed.values()) > 0
