"""Beside nova-compute 34, an encrypted guest's context is claimed on
nova's memory-encryption child ('<nodename>_amd_sev_es'), not its root."""
import uuid as uuidlib

from oslo_config import cfg
import pytest

from tracker import nova_compute
from tracker.drivers import facts
from tracker.drivers import layout
from tracker.drivers import options
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.tree import ProviderTree

NOVA_ROOT, NOVA_SEV_ES = str(uuidlib.uuid4()), str(uuidlib.uuid4())
VM = 'a1b2c3d4-0000-4000-8000-000000000001'
MEC = 'MEM_ENCRYPTION_CONTEXT'


@pytest.fixture
def snapshot():
    conf = cfg.ConfigOpts()
    options.register(conf)
    conf([], default_config_files=[])
    host = facts.HostFacts(hostname='node1', cpus=[0, 1], memory_mb=4096,
                           disk_gb=50, mem_encryption={'amd_sev': 100,
                                                       'amd_sev_es': 15})
    guest = facts.InstanceFacts(uuid=VM, vcpus=1, memory_mb=512,
                                mem_encryption='amd_sev_es')
    yield layout.Layout(host, conf).snapshot([guest])
    conf.reset()


def nova_tree(*children):
    return ProviderTree([Provider(NOVA_ROOT, 'node1.example', inventories={
        'VCPU': inventory(2), 'MEMORY_MB': inventory(4096)})] + list(children))


def test_the_context_goes_to_novas_child_of_the_model(snapshot):
    tree = nova_tree(Provider(NOVA_SEV_ES, 'node1.example_amd_sev_es', NOVA_ROOT,
                              inventories={MEC: inventory(15, max_unit=1)}))
    adopted = nova_compute.adopt(snapshot, tree, NOVA_ROOT)
    [guest] = adopted.instances
    assert guest.allocations == {NOVA_ROOT: {'VCPU': 1, 'MEMORY_MB': 512},
                                 NOVA_SEV_ES: {MEC: 1}}
    assert adopted.unplaced == {}


def test_a_model_nova_does_not_report_is_unplaced(snapshot):
    adopted = nova_compute.adopt(snapshot, nova_tree(), NOVA_ROOT)
    assert adopted.unplaced == {VM: ['node1_amd_sev_es']}
