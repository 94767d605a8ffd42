"""Memory-encryption contexts leave the root for their children in one
reshape, allocations with them (nova 34's move of its pre-2025.2 shape).

Placement holds the old shape: MEM_ENCRYPTION_CONTEXT (and the trait
HW_CPU_X86_AMD_SEV) on the compute node, encrypted guests' contexts
allocated there. The agent's next cycle, its host facts through the
layout and the report client into our placement (every database
backend), moves inventory and allocations in one POST /reshaper: each
guest's context to its model's child (SEV's when the host does not say,
as nova moves them), nothing else of any allocation changed, and the
cycle after writes nothing.
"""
from oslo_config import cfg
import pytest

from tests.functional.report_client_fixtures import allocations
from tests.functional.report_client_fixtures import get
from tests.functional.report_client_fixtures import placement  # noqa: F401 (fixture)
from tracker.drivers import facts
from tracker.drivers import layout
from tracker.drivers import options
from tracker.providers.provider import inventory

ROOT = layout.root_uuid('node1')
SEV = layout.mem_encryption_uuid('node1', 'amd_sev')
SEV_ES = layout.mem_encryption_uuid('node1', 'amd_sev_es')
VM_SEV, VM_ES, VM_PLAIN = ('a1b2c3d4-0000-4000-8000-00000000000%d' % n
                           for n in (1, 2, 3))
MEC = 'MEM_ENCRYPTION_CONTEXT'


@pytest.fixture
def conf():
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    conf.set_override('host', 'node1')
    yield conf
    conf.reset()


def guest(uuid, model):
    return facts.InstanceFacts(uuid=uuid, project_id='p', user_id='u',
                               vcpus=2, memory_mb=1024, disk_gb=10,
                               mem_encryption=model)


GUESTS = [guest(VM_SEV, 'amd_sev'), guest(VM_ES, 'amd_sev_es'),
          guest(VM_PLAIN, None)]


def discover(conf, contexts):
    host = facts.HostFacts(hostname='node1', cpus=list(range(8)),
                           memory_mb=16384, disk_gb=100,
                           mem_encryption=contexts)
    return layout.Layout(host, conf).snapshot(GUESTS)


def old_shape(placement, conf):  # noqa: F811 (fixture)
    """The pre-2025.2 tree and its allocations, as placement holds them."""
    snapshot = discover(conf, {})
    root = snapshot.providers[0]
    root.inventories[MEC] = inventory(100, max_unit=1)
    root.traits.add('HW_CPU_X86_AMD_SEV')
    client = placement.client()
    assert client.sync([root]).errors == []
    for instance in snapshot.instances:
        if instance.uuid != VM_PLAIN:
            instance.allocations[ROOT][MEC] = 1
    assert client.sync_allocations(ROOT, snapshot.instances).errors == []
    return {i.uuid: allocations(placement, i.uuid) for i in snapshot.instances}


def test_contexts_and_their_allocations_move_in_one_reshape(placement, conf):  # noqa: F811
    before = old_shape(placement, conf)
    client = placement.client()
    snapshot = discover(conf, {'amd_sev': 100, 'amd_sev_es': 15})
    marker = placement.count()

    result = client.sync(snapshot.providers, snapshot.instances)

    assert result.errors == [] and result.reshaped
    writes = [s for s in placement.since(marker) if s[0] != 'GET']
    assert writes.count(('POST', '/reshaper')) == 1
    assert ('PUT', '/resource_providers/%s/inventories' % ROOT) not in writes
    root = get(placement, '/resource_providers/%s/inventories' % ROOT)
    assert MEC not in root['inventories']
    assert 'HW_CPU_X86_AMD_SEV' not in get(
        placement, '/resource_providers/%s/traits' % ROOT)['traits']
    for uuid, total, trait in ((SEV, 100, 'HW_CPU_X86_AMD_SEV'),
                               (SEV_ES, 15, 'HW_CPU_X86_AMD_SEV_ES')):
        assert get(placement, '/resource_providers/%s/inventories'
                   % uuid)['inventories'][MEC]['total'] == total
        assert set(get(placement, '/resource_providers/%s/traits'
                       % uuid)['traits']) == {'OWNER_NOVA', trait}
    # each context moved to its model's child, nothing else changed
    rest = {rp: {rc: n for rc, n in res.items() if rc != MEC}
            for rp, res in before[VM_SEV].items()}
    assert allocations(placement, VM_SEV) == dict(rest, **{SEV: {MEC: 1}})
    assert allocations(placement, VM_ES) == dict(rest, **{SEV_ES: {MEC: 1}})
    assert allocations(placement, VM_PLAIN) == before[VM_PLAIN]
    assert get(placement, '/resource_providers/%s/usages' % SEV)['usages'] == {MEC: 1}

    # placement now holds what the host says: the next cycle writes nothing
    marker = placement.count()
    assert client.sync(snapshot.providers, snapshot.instances).requests == 0
    assert client.sync_allocations(ROOT, snapshot.instances).errors == []
    assert [s for s in placement.since(marker) if s[0] != 'GET'] == []


def test_contexts_whose_model_the_host_does_not_say_go_to_sevs_child(
        placement, conf):  # noqa: F811
    before = old_shape(placement, conf)
    snapshot = discover(conf, {'amd_sev': 100, 'amd_sev_es': 15})

    result = placement.client().sync(snapshot.providers)

    assert result.errors == [] and result.reshaped
    for vm in (VM_SEV, VM_ES):
        moved = allocations(placement, vm)
        assert moved.pop(SEV) == {MEC: 1}
        assert moved == {ROOT: {rc: n for rc, n in before[vm][ROOT].items()
                                if rc != MEC}}
    assert get(placement, '/resource_providers/%s/usages' % SEV)['usages'] == {MEC: 2}
