"""The tree the agent reports standalone is the tree nova-compute 34
reports for the same host.

tests/integration/nova_parity/trees.py runs in nova 34's functional
virtualenv: for each host shape nova's own compute service (its
LibvirtDriver, resource tracker and report client, on nova's fakelibvirt
connection, upstream placement behind nova's fixture) reports its tree,
and the agent's libvirt driver and layout read the same fake connection;
nova_parity/real_host.py does the same on the real libvirtd and QEMU
the tests start (tests/integration/libvirtd.py).
Here the two are compared provider by provider: names, parents,
inventories (total, reserved, min/max unit, step, ratio) and traits,
OWNER_NOVA and the COMPUTE_* set included. Root uuids differ by design
(docs/agent.md); nothing else may.
"""
import json
import os
import subprocess

import libvirt
import libvirtmod
import pytest

from tests import upstream
from tests.integration import fixture_suites
from tests.integration.libvirtd import hypervisor  # noqa: F401 (fixture)

pytestmark = pytest.mark.integration

TREES = os.path.join('tests', 'integration', 'nova_parity', 'trees.py')
REAL_HOST = os.path.join('tests', 'integration', 'nova_parity', 'real_host.py')


@pytest.fixture(scope='module')
def trees(tmp_path_factory):
    """Every shape beside upstream placement, and the scheduler's request
    again with our server behind nova's fixture."""
    venv = fixture_suites.prepare(fixture_suites.NOVA)
    work = tmp_path_factory.mktemp('parity')
    out = work / 'trees.json'
    for args, extra in (([], {}), (['-k', 'scheduler'], {
            'PYTHONPATH': fixture_suites.BEHIND_FIXTURE,
            'PLACEMENT_FIXTURE_APP': 'ours',
            'PLACEMENT_FIXTURE_DBDIR': str(work),
            'PLACEMENT_FIXTURE_LOG': str(work / 'apps.log')})):
        proc = subprocess.run(
            [os.path.join(venv, 'bin', 'python'), '-m', 'unittest'] + args
            + [TREES], cwd=upstream.TOP,
            env=upstream.clean_env(PARITY_OUT=str(out), **extra),
            capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-6000:]
    with open(out) as f:
        found: dict = json.load(f)
    return found


@pytest.fixture(scope='module')
def real_host(tmp_path_factory, hypervisor):  # noqa: F811 (fixture)
    """nova's tree and the agent's of the real libvirtd. nova's venv has
    no libvirt-python: it borrows this interpreter's (the same Python)."""
    venv = fixture_suites.prepare(fixture_suites.NOVA)
    work = tmp_path_factory.mktemp('parity-real')
    lent = work / 'libvirt-python'
    lent.mkdir()
    for module in (libvirt, libvirtmod):
        os.symlink(module.__file__, lent / os.path.basename(module.__file__))
    out = work / 'trees.json'
    proc = subprocess.run(
        [os.path.join(venv, 'bin', 'python'), '-m', 'unittest', REAL_HOST],
        cwd=upstream.TOP, env=upstream.clean_env(
            PARITY_OUT=str(out), PARITY_LIBVIRT_URI=hypervisor.uri,
            PYTHONPATH=str(lent)),
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    with open(out) as f:
        found: dict = json.load(f)['real']
    return found


def differences(nova, agent):
    """Every way the agent's tree differs from nova's, in words."""
    found = []
    for name in sorted(set(nova) | set(agent)):
        ours, theirs = agent.get(name), nova.get(name)
        if ours is None or theirs is None:
            found.append('%s: only %s reports it'
                         % (name, 'nova' if ours is None else 'the agent'))
            continue
        for key in ('parent', 'inventories'):
            if ours[key] != theirs[key]:
                found.append('%s %s: nova %s, agent %s'
                             % (name, key, theirs[key], ours[key]))
        for side, extra in (('nova', set(theirs['traits']) - set(ours['traits'])),
                            ('agent', set(ours['traits']) - set(theirs['traits']))):
            if extra:
                found.append('%s traits only %s has: %s'
                             % (name, side, sorted(extra)))
    return found


def test_plain_host(trees):
    """Two NUMA nodes, hyperthreads, 16 GiB: CPUs, memory, disk and the
    root's traits exactly as nova's."""
    plain = trees['plain']
    assert 'OWNER_NOVA' in plain['nova']['compute1']['traits']
    assert len(plain['nova']['compute1']['traits']) > 40
    assert differences(plain['nova'], plain['agent']) == []


def test_real_libvirtd_and_qemu(real_host):
    """nova-compute 34 on the real libvirtd (TCG) the tests start: its
    CPUs, memory, instances_path's disk, the domain capabilities' and CPU
    model's traits; the agent's tree is the same."""
    [(name, root)] = real_host['nova'].items()
    assert {'VCPU', 'MEMORY_MB', 'DISK_GB'} == set(root['inventories'])
    assert {'OWNER_NOVA', 'COMPUTE_NODE', 'COMPUTE_ARCH_X86_64',
            'COMPUTE_STORAGE_BUS_VIRTIO'} <= set(root['traits'])
    assert differences(real_host['nova'], real_host['agent']) == []


def test_pci_in_placement(trees):
    """nova's own PCI-in-placement host: plain devices, a one-time-use PF,
    live-migratable VFs counted on their PF, a physnet spec left to
    neutron: every device provider as nova's, CUSTOM_PCI_<V>_<P> classes,
    COMPUTE_MANAGED_PCI_DEVICE, HW_PCI_* and OWNER_NOVA included."""
    pci = trees['pci']
    assert len(pci['nova']) == 5
    assert 'HW_PCI_ONE_TIME_USE' in pci['nova']['compute1_0000:81:02.0']['traits']
    assert 'HW_PCI_LIVE_MIGRATABLE' in pci['nova']['compute1_0000:81:03.0']['traits']
    assert differences(pci['nova'], pci['agent']) == []


def test_vgpu(trees):
    """Two GPUs offering one mdev type: nova's '<root>_pci_<address>'
    providers and VGPU inventories; the agent adds only its documented
    CUSTOM_MDEV_<TYPE> trait."""
    vgpu = trees['vgpu']
    assert len(vgpu['nova']) == 3
    assert differences(vgpu['nova'], vgpu['agent']) == [
        '%s traits only agent has: %s' % (name, ['CUSTOM_MDEV_NVIDIA_11'])
        for name in ('compute1_pci_0000_81_00_0', 'compute1_pci_0000_81_01_0')]


# shape -> {child provider: (MEM_ENCRYPTION_CONTEXT total, its trait)}
MEM_ENCRYPTION = {
    'amd_sev': {'amd_sev': (100, 'HW_CPU_X86_AMD_SEV')},
    'amd_sev_es': {'amd_sev': (100, 'HW_CPU_X86_AMD_SEV'),
                   'amd_sev_es': (15, 'HW_CPU_X86_AMD_SEV_ES')},
    'amd_sev_snp': {'amd_sev': (100, 'HW_CPU_X86_AMD_SEV'),
                    'amd_sev_snp': (15, 'HW_CPU_X86_AMD_SEV_SNP')},
    'amd_sev_es_old_qemu': {'amd_sev': (100, 'HW_CPU_X86_AMD_SEV')},
    'intel_tdx': {'intel_tdx': (63, 'HW_CPU_X86_INTEL_TDX')},
    'intel_tdx_configured': {'intel_tdx': (7, 'HW_CPU_X86_INTEL_TDX')},
}


@pytest.mark.parametrize('shape', sorted(MEM_ENCRYPTION))
def test_memory_encryption(trees, shape):
    """nova 34's memory-encryption children '<root>_<model>' (SEV from
    <sev>'s maxGuests, SEV-ES from maxESGuests with QEMU 8.0, SEV-SNP from
    launchSecurity's sectypes on maxESGuests, TDX from the misc cgroup or
    [libvirt] num_intel_tdx_guests), one MEM_ENCRYPTION_CONTEXT slot at a
    time, the model's trait and OWNER_NOVA: the agent's are the same."""
    found = trees[shape]
    children = {name[len('compute1_'):]: p for name, p in found['nova'].items()
                if name != 'compute1'}
    assert {model: (p['inventories']['MEM_ENCRYPTION_CONTEXT']['total'],
                    sorted(set(p['traits']) - {'OWNER_NOVA'})[0])
            for model, p in children.items()} == MEM_ENCRYPTION[shape]
    assert all(p['inventories']['MEM_ENCRYPTION_CONTEXT']['max_unit'] == 1
               for p in children.values())
    assert differences(found['nova'], found['agent']) == []


@pytest.mark.parametrize('server', ['upstream', 'ours'])
def test_nova_scheduler_finds_the_agents_host(trees, server):
    """nova 34's request for a qcow2 image asking virtio disk, NIC and
    video, built by its own request filters (OWNER_NOVA and the image
    traits required on the root, COMPUTE_STATUS_DISABLED forbidden):
    placement offers the agent's host, beside nova's own."""
    found = trees['scheduler-' + server]
    assert found['root_required'] == [
        'COMPUTE_GRAPHICS_MODEL_VIRTIO', 'COMPUTE_IMAGE_TYPE_QCOW2',
        'COMPUTE_NET_VIF_MODEL_VIRTIO', 'COMPUTE_STORAGE_BUS_VIRTIO',
        'OWNER_NOVA']
    assert found['root_forbidden'] == ['COMPUTE_STATUS_DISABLED']
    assert found['agent_root'] in found['providers']
    assert len(found['providers']) == 2       # nova's compute1 too


@pytest.mark.parametrize('server', ['upstream', 'ours'])
def test_nova_scheduler_finds_the_agents_sev_es_context(trees, server):
    """nova 34's request for an SEV-ES image (MEM_ENCRYPTION_CONTEXT with
    HW_CPU_X86_AMD_SEV_ES required): placement offers the agent's host
    with its SEV-ES child's context, as nova's own."""
    found = trees['scheduler-sev-es-' + server]
    assert 'required=HW_CPU_X86_AMD_SEV_ES' in found['query']
    assert found['candidates'] == [
        [[root, ['DISK_GB', 'MEMORY_MB', 'VCPU']],
         [root + '_amd_sev_es', ['MEM_ENCRYPTION_CONTEXT']]]
        for root in ('agent1', 'compute1')]
