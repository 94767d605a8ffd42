"""The report client keeps two of nova's rules against a real placement:
pinned guests move from VCPU to PCPU in the reshape that brings PCPU, and
an allocation ratio nova.conf leaves unset is placement's to keep."""
from tests.functional.report_client_fixtures import ROOT  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import VM1  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import VM2  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import allocations  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import get  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import placement  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import put  # noqa: F401 (placement: fixture)
from tracker.drivers.base import Instance
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory


def compute_node(**inventories):
    return [Provider(ROOT, 'test-host', inventories=inventories)]


def vm(uuid, **resources):
    return Instance(uuid, project_id='p', user_id='u',
                    allocations={ROOT: resources})


def test_pinned_guests_move_to_pcpu_in_one_reshape(placement):
    client = placement.client()
    client.sync(compute_node(VCPU=inventory(8, allocation_ratio=4.0),
                             MEMORY_MB=inventory(8192)))
    before = [vm(VM1, VCPU=4, MEMORY_MB=1024), vm(VM2, VCPU=2, MEMORY_MB=512)]
    assert client.sync_allocations(ROOT, before).errors == []

    # cpu_dedicated_set = 4-7 now: VM1 is pinned there, VM2 floats
    after = [vm(VM1, PCPU=4, MEMORY_MB=1024), vm(VM2, VCPU=2, MEMORY_MB=512)]
    marker = placement.count()
    result = client.sync(compute_node(VCPU=inventory(4, allocation_ratio=4.0),
                                      PCPU=inventory(4),
                                      MEMORY_MB=inventory(8192)),
                         instances=after)

    assert result.errors == [] and result.reshaped
    writes = [s for s in placement.since(marker) if s[0] != 'GET']
    assert writes == [('POST', '/reshaper')]
    assert allocations(placement, VM1) == {ROOT: {'PCPU': 4, 'MEMORY_MB': 1024}}
    assert allocations(placement, VM2) == {ROOT: {'VCPU': 2, 'MEMORY_MB': 512}}
    usages = get(placement, '/resource_providers/%s/usages' % ROOT)['usages']
    assert usages == {'VCPU': 2, 'PCPU': 4, 'MEMORY_MB': 1536}
    # the allocations are already what the host sees: nothing more to write
    marker = placement.count()
    assert client.sync_allocations(ROOT, after).errors == []
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []


def test_only_dedicated_cpus_left_still_moves_the_pinned_guest(placement):
    """cpu_dedicated_set without cpu_shared_set: no VCPU at all any more;
    removing VCPU while a guest holds it is refused unless the guest moves
    in the same request."""
    client = placement.client()
    client.sync(compute_node(VCPU=inventory(4), MEMORY_MB=inventory(4096)))
    assert client.sync_allocations(ROOT, [vm(VM1, VCPU=2, MEMORY_MB=512)]) \
        .errors == []

    result = client.sync(compute_node(PCPU=inventory(4),
                                      MEMORY_MB=inventory(4096)),
                         instances=[vm(VM1, PCPU=2, MEMORY_MB=512)])

    assert result.errors == [] and result.reshaped
    assert set(get(placement, '/resource_providers/%s/inventories'
                   % ROOT)['inventories']) == {'PCPU', 'MEMORY_MB'}
    assert allocations(placement, VM1) == {ROOT: {'PCPU': 2, 'MEMORY_MB': 512}}


def test_a_ratio_left_unset_keeps_the_one_placement_has(placement):
    """nova: without *_allocation_ratio the ratio an operator set through
    the API stays; a new inventory gets the initial ratio."""
    def desired(memory_total=8192):
        root = compute_node(VCPU=inventory(8, allocation_ratio=4.0),
                            MEMORY_MB=inventory(memory_total,
                                                allocation_ratio=1.0))[0]
        root.placement_ratios = {'VCPU': False, 'MEMORY_MB': True}
        return [root]

    client = placement.client()
    client.sync(desired())
    inventories = get(placement, '/resource_providers/%s/inventories' % ROOT)
    assert inventories['inventories']['VCPU']['allocation_ratio'] == 4.0
    resp = put(placement, '/resource_providers/%s/inventories/MEMORY_MB' % ROOT,
               {'resource_provider_generation':
                inventories['resource_provider_generation'],
                'total': 8192, 'allocation_ratio': 1.5, 'max_unit': 8192})
    assert resp.status_code == 200, resp.text

    later = placement.client()           # a restarted agent
    later.sync(desired())
    memory = get(placement, '/resource_providers/%s/inventories/MEMORY_MB'
                 % ROOT)
    # the ratio stays; one guest may still take the whole overcommitted room
    assert (memory['allocation_ratio'], memory['max_unit']) == (1.5, 12288)
    assert later.sync(desired()).updated == {}
    # the host grows: the total is the host's, the ratio stays placement's
    later.sync(desired(memory_total=16384))
    memory = get(placement, '/resource_providers/%s/inventories/MEMORY_MB'
                 % ROOT)
    assert (memory['total'], memory['allocation_ratio'], memory['max_unit']) \
        == (16384, 1.5, 24576)
