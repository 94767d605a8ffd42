"""tracker-agent given a compute node's nova.conf, as it is.

Placement sits behind a real keystone (the agent authenticates with the
[placement] password credentials nova uses and finds placement in the
catalog). First the least a nova.conf can say, [DEFAULT] host and the
[placement] credentials; then etc/nova.conf.example, a full compute
node's file, against a real libvirtd, with only what belongs to this
machine (paths, CPU numbers, endpoints, passwords) in a second file
after it, the way oslo.config layers files.
"""
import os
import shutil

import psutil

from tests.integration import agent_env as env
from tests.integration import keystone as keystone_mod
from tests.integration.libvirtd import hypervisor  # noqa: F401 (fixture)
from tests.integration.test_keystone import _placement
from tests.integration.test_keystone import deployment  # noqa: F401 (fixture)
from tests.integration.test_libvirt_real import domain_xml
from tests.integration.test_libvirt_real import file_disk
from tests.integration.test_libvirt_real import guest_uuid
from tests.integration.test_libvirt_real import qcow2
from tests.upstream import TOP
from tracker.drivers.layout import root_uuid

EXAMPLE = os.path.join(TOP, 'etc', 'nova.conf.example')
GiB = 1024 ** 3


def placement_credentials(keystone, username, password):
    """The [placement] group of a nova.conf (keystoneauth options)."""
    return ('[placement]\nauth_type = password\nauth_url = %s\n'
            'username = %s\npassword = %s\nproject_name = service\n'
            'user_domain_name = Default\nproject_domain_name = Default\n'
            'region_name = %s\n' % (keystone.auth_url, username, password,
                                    keystone_mod.REGION))


def reader(keystone):
    """The test's own eyes on placement: a keystone user of its own."""
    api = _placement(keystone, 'placement', 'placement-secret', 'service')

    def get(path):
        resp = api.get(path)
        assert resp.status_code == 200, resp.text
        return resp.json()
    return get


def as_placement_has_it(get, hostname):
    """{rc: (total, reserved, allocation_ratio)} of the host's root."""
    inventories = get('/resource_providers/%s/inventories'
                      % root_uuid(hostname))['inventories']
    return {rc: (i['total'], i['reserved'], i['allocation_ratio'])
            for rc, i in inventories.items()}


def allocations(get, hostname):
    """{consumer: {rc: n}} held against the host's root."""
    return {consumer: held['resources'] for consumer, held in
            get('/resource_providers/%s/allocations'
                % root_uuid(hostname))['allocations'].items()}


def test_only_host_and_placement_credentials(deployment, tmp_path):
    """nova.conf with [DEFAULT] host and [placement] only: the root provider
    is that host with nova's inventory (nova's defaults: 512 MB reserved,
    initial ratios 4.0 / 1.0 / 1.0, DISK_GB of $state_path/instances)."""
    keystone, _ = deployment
    conf = tmp_path / 'nova.conf'
    conf.write_text('[DEFAULT]\nhost = only-host-x\n'
                    + placement_credentials(keystone, 'nova', 'nova-secret'))
    # the agent keeps its ownership file in [tracker] state_path's default
    state_path = '/var/lib/tracker'
    existed = os.path.isdir(state_path)
    try:
        env.cycle_then_audit(str(conf))
    finally:
        if existed:
            for leftover in ('ownership-only-host-x.json',
                             'ownership-only-host-x.json.tmp'):
                if os.path.exists(os.path.join(state_path, leftover)):
                    os.remove(os.path.join(state_path, leftover))
        else:
            shutil.rmtree(state_path, ignore_errors=True)

    get = reader(keystone)
    listed = get('/resource_providers?name=only-host-x')['resource_providers']
    assert [p['uuid'] for p in listed] == [root_uuid('only-host-x')]
    probe = '/var/lib/nova/instances'
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    assert as_placement_has_it(get, 'only-host-x') == {
        'VCPU': (len(_online_cpus()), 0, 4.0),
        'MEMORY_MB': (psutil.virtual_memory().total // 1024 ** 2, 512, 1.0),
        'DISK_GB': (psutil.disk_usage(probe).total // GiB, 0, 1.0)}


def _online_cpus():
    with open('/sys/devices/system/cpu/online') as f:
        text = f.read().strip()
    cpus = []
    for part in text.split(','):
        first, _, last = part.partition('-')
        cpus += range(int(first), int(last or first) + 1)
    return cpus


def test_a_full_compute_node_nova_conf(deployment, hypervisor, tmp_path):
    keystone, _ = deployment
    conn = hypervisor.connect()
    cpus = conn.getInfo()[2]
    assert cpus >= 2, 'a dedicated CPU and a shared one need 2 CPUs'
    instances = tmp_path / 'instances'      # $state_path/instances
    instances.mkdir()
    # nova's flavor said hw:cpu_policy=dedicated; nova pinned the vCPU
    pinned = conn.defineXML(domain_xml(
        'nova-pinned', 32, 1,
        [file_disk(qcow2(instances / 'pinned.qcow2', '1G'), 'vda', 'qcow2')],
        cputune="<cputune><vcpupin vcpu='0' cpuset='%d'/></cputune>"
                % (cpus - 1), nova=True, cpu_policy='dedicated'))
    pinned.create()
    conn.defineXML(domain_xml(
        'nova-stopped', 64, 1,
        [file_disk(qcow2(instances / 'stopped.qcow2', '3G'), 'vda', 'qcow2')]))
    site = tmp_path / 'site.conf'
    site.write_text(
        '[DEFAULT]\nstate_path = %s\nlog_dir = %s\n'
        'transport_url = rabbit://guest:guest@127.0.0.1:5672/\n'
        '[tracker]\nstate_path = %s\n'
        '[compute]\ncpu_shared_set = 0-%d\ncpu_dedicated_set = %d\n'
        'provider_config_location = %s\n'
        '[libvirt]\nconnection_uri = %s\n'
        '[placement]\nauth_url = %s\npassword = placement-secret\n'
        % (tmp_path, tmp_path, tmp_path, cpus - 2, cpus - 1,
           tmp_path / 'provider_config',
           hypervisor.uri, keystone.auth_url))

    env.cycle_then_audit(EXAMPLE, str(site))

    get = reader(keystone)
    inventory = as_placement_has_it(get, 'compute-01')
    assert {rc: inventory[rc] for rc in ('VCPU', 'PCPU')} == {
        'VCPU': (cpus - 1, 0, 4.0), 'PCPU': (1, 0, 1.0)}
    assert inventory['MEMORY_MB'][1:] == (4096, 1.0)
    assert inventory['DISK_GB'][1:] == (20, 1.0)     # 20480 MB reserved
    assert allocations(get, 'compute-01') == {
        guest_uuid('nova-pinned'): {'PCPU': 1, 'MEMORY_MB': 32, 'DISK_GB': 1},
        guest_uuid('nova-stopped'): {'VCPU': 1, 'MEMORY_MB': 64,
                                     'DISK_GB': 3}}
    pinned.destroy()
    for dom in conn.listAllDomains(0):
        dom.undefine()
    conn.close()
