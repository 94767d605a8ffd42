"""The agent against a real libvirtd driving real QEMU (TCG) guests.

Four small guests with no OS (they sit in SeaBIOS, which is enough for
their vCPUs, memory and disks to be real): a running one with a qcow2
root and a raw swap file under instances_path, a running one booted from
a network (NBD) volume with a local ephemeral disk, a running one pinned to
a dedicated CPU, and a shut-off one with a sparse 5 GiB qcow2 root. What
the agent allocates for each must be what libvirt itself says of it; after
the guests change, the next cycle converges and the audit agrees.
"""
import math
import os
import subprocess
import uuid as uuidlib

import libvirt
import pytest

from tests.integration import agent_env as env
from tests.integration.libvirtd import NbdServer
from tests.integration.libvirtd import hypervisor  # noqa: F401 (fixture)
from tests.upstream import free_port

HOST = 'lv-host'
ROOT = env.root_uuid(HOST)
GiB = 1024 ** 3
PROJECT = '6c1b7e2a4f9d4a7e8b3c2d1e0f9a8b7c'
USER = '0a1b2c3d4e5f40718293a4b5c6d7e8f9'


@pytest.fixture
def server(placement_servers, tmp_path):
    """Our placement on SQLite. The agent's noauth2 token is the admin's;
    deployed, its keystone user has the service role placement's default
    policy asks of a reshape: here the policy gives the reshape to admin."""
    policy = tmp_path / 'policy.yaml'
    policy.write_text('"placement:reshaper:reshape": "role:admin"\n')
    conf = tmp_path / 'placement.conf'
    conf.write_text('[oslo_policy]\npolicy_file = %s\n' % policy)
    return placement_servers('sqlite:///%s' % (tmp_path / 'placement.sqlite'),
                             config_file=str(conf))[0]


@pytest.fixture
def instances(tmp_path):
    path = tmp_path / 'instances'
    path.mkdir()
    return path


@pytest.fixture
def nbd(tmp_path):
    volume = tmp_path / 'volume.raw'
    with open(volume, 'wb') as f:
        f.truncate(2 * GiB)
    server = NbdServer(volume, free_port()).start()
    yield server
    server.stop()


def guest_uuid(name):
    return str(uuidlib.uuid5(uuidlib.NAMESPACE_DNS, 'lv-test-' + name))


def qcow2(path, size):
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', str(path),
                    size], check=True)
    return str(path)


def raw(path, size):
    with open(path, 'wb') as f:
        f.truncate(size)
    return str(path)


def file_disk(path, target, fmt):
    return ("<disk type='file' device='disk'><driver name='qemu' type='%s'/>"
            "<source file='%s'/><target dev='%s' bus='virtio'/></disk>"
            % (fmt, path, target))


def nbd_disk(port, target):
    return ("<disk type='network' device='disk'><driver name='qemu' "
            "type='raw'/><source protocol='nbd' name='volume'><host "
            "name='127.0.0.1' port='%d'/></source><target dev='%s' "
            "bus='virtio'/></disk>" % (port, target))


def domain_xml(name, memory_mib, vcpus, disks, cputune='', nova=False,
               cpu_policy=None):
    """A TCG guest; ``nova``: with nova's instance metadata (owner, and
    the flavor's hw:cpu_policy when given)."""
    metadata = ''
    if nova:
        flavor = ('<nova:flavor name="f"><nova:extraSpecs><nova:extraSpec '
                  'name="hw:cpu_policy">%s</nova:extraSpec></nova:extraSpecs>'
                  '</nova:flavor>' % cpu_policy if cpu_policy else '')
        metadata = (
            '<metadata><nova:instance xmlns:nova="http://openstack.org/'
            'xmlns/libvirt/nova/1.1">%s<nova:owner><nova:user uuid="%s">u'
            '</nova:user><nova:project uuid="%s">p</nova:project>'
            '</nova:owner></nova:instance></metadata>'
            % (flavor, USER, PROJECT))
    return (
        "<domain type='qemu'><name>%s</name><uuid>%s</uuid>%s"
        "<memory unit='MiB'>%d</memory><vcpu>%d</vcpu>%s"
        "<os><type arch='x86_64' machine='pc'>hvm</type></os>"
        "<devices><emulator>/usr/bin/qemu-system-x86_64</emulator>%s"
        "</devices></domain>" % (name, guest_uuid(name), metadata,
                                 memory_mib, vcpus, cputune, ''.join(disks)))


def what_libvirt_says(conn, instances_path, dedicated):
    """{uuid: {rc: n}} for every guest, from libvirt's own answers: vCPUs
    and maximum memory (dom.info), each local disk's capacity (blockInfo)
    rounded up to GiB, and pinned vCPUs (vcpuPinInfo) as PCPU."""
    result = {}
    for dom in conn.listAllDomains(0):
        _state, max_kib, _mem, vcpus, _time = dom.info()
        pinned = 0
        if dedicated:
            for cpumap in dom.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_CONFIG):
                cpus = {i for i, on in enumerate(cpumap) if on}
                pinned += bool(cpus) and cpus <= dedicated
        disk = 0
        for target, source in _local_disks(dom.XMLDesc(0), instances_path):
            disk += math.ceil(dom.blockInfo(target)[0] / GiB)
        usage = {'VCPU': vcpus - pinned, 'PCPU': pinned,
                 'MEMORY_MB': max_kib // 1024, 'DISK_GB': disk}
        result[dom.UUIDString()] = {rc: n for rc, n in usage.items() if n}
    return result


def _local_disks(xml, instances_path):
    import xml.etree.ElementTree as ET
    for disk in ET.fromstring(xml).findall("devices/disk[@type='file']"):
        source = disk.find('source').get('file')
        if source.startswith(str(instances_path) + os.sep):
            yield disk.find('target').get('dev'), source


def write_conf(path, server, hypervisor, instances, **compute):
    path.write_text('\n'.join([
        '[DEFAULT]', 'host = %s' % HOST, 'instances_path = %s' % instances,
        '[tracker]', 'state_path = %s' % path.parent,
        'driver = libvirt', 'rpc = false',
        'notifications = false', 'hardware_events = false',
        '[libvirt]', 'connection_uri = %s' % hypervisor.uri,
        '[compute]'] + ['%s = %s' % item for item in compute.items()] + [
        '[placement]', 'auth_type = admin_token', 'token = admin',
        'endpoint = %s' % server.url, 'connect_retries = 0']) + '\n')
    return str(path)


def allocations_in_placement(placement):
    return {consumer: by_provider[HOST] for consumer, by_provider in
            placement.allocations(HOST).items()}


def test_allocations_are_what_libvirt_says_of_each_guest(
        hypervisor, server, instances, nbd, tmp_path):
    conn = hypervisor.connect()
    cpus = conn.getInfo()[2]
    assert cpus >= 2, 'pinning a guest to a dedicated CPU needs 2 CPUs'
    dedicated = cpus - 1
    outside = tmp_path / 'elsewhere'
    outside.mkdir()
    guests = {
        'web': domain_xml('web', 64, 1, [
            file_disk(qcow2(instances / 'web.qcow2', '2G'), 'vda', 'qcow2'),
            file_disk(raw(instances / 'web.swap', 512 * 1024 ** 2), 'vdb',
                      'raw')], nova=True),
        'bfv': domain_xml('bfv', 48, 1, [
            nbd_disk(nbd.port, 'vda'),
            file_disk(raw(instances / 'bfv.eph', GiB), 'vdb', 'raw')]),
        'pinned': domain_xml('pinned', 32, 1, [
            file_disk(raw(outside / 'attached.raw', GiB), 'vda', 'raw')],
            cputune="<cputune><vcpupin vcpu='0' cpuset='%d'/></cputune>"
                    % dedicated),
        'stopped': domain_xml('stopped', 128, 2, [
            file_disk(qcow2(instances / 'stopped.qcow2', '5G'), 'vda',
                      'qcow2')]),
    }
    domains = {name: conn.defineXML(xml) for name, xml in guests.items()}
    for name in ('web', 'bfv', 'pinned'):
        domains[name].create()
    placement = env.Placement(server.url)

    # 1. No CPU sets: every vCPU is a VCPU
    conf = write_conf(tmp_path / 'nova.conf', server, hypervisor, instances)
    env.cycle_then_audit(conf)
    held = allocations_in_placement(placement)
    assert held == what_libvirt_says(conn, instances, set())
    # the shut-off guest's sparse qcow2 root counts at its virtual size
    assert held[guest_uuid('stopped')] == {
        'VCPU': 2, 'MEMORY_MB': 128, 'DISK_GB': 5}
    assert held[guest_uuid('web')] == {'VCPU': 1, 'MEMORY_MB': 64,
                                       'DISK_GB': 3}   # 2 GiB + 0.5 GiB swap
    assert held[guest_uuid('bfv')] == {'VCPU': 1, 'MEMORY_MB': 48,
                                       'DISK_GB': 1}   # the volume takes 0
    assert held[guest_uuid('pinned')] == {'VCPU': 1, 'MEMORY_MB': 32}
    consumer = placement.get('/allocations/%s' % guest_uuid('web'))
    assert (consumer['project_id'], consumer['user_id']) == (PROJECT, USER)

    # 2. Dedicated CPUs: PCPU appears and the pinned guest moves to it
    conf = write_conf(tmp_path / 'nova.conf', server, hypervisor, instances,
                      cpu_shared_set='0-%d' % (dedicated - 1),
                      cpu_dedicated_set=str(dedicated))
    env.cycle_then_audit(conf)
    inventories = placement.tree(HOST)[HOST]['inventories']
    assert (inventories['VCPU'], inventories['PCPU']) == (cpus - 1, 1)
    held = allocations_in_placement(placement)
    assert held == what_libvirt_says(conn, instances, {dedicated})
    assert held[guest_uuid('pinned')] == {'PCPU': 1, 'MEMORY_MB': 32}

    # 3. The guests change: the next cycle follows
    domains['bfv'].destroy()                  # shut off: still holds all
    domains['bfv'].setMaxMemory(96 * 1024)    # its next boot gets more
    domains['stopped'].undefine()             # gone
    running = domains['web']
    try:                                      # a balloon: max stays held
        running.setMemoryFlags(32 * 1024, libvirt.VIR_DOMAIN_AFFECT_LIVE)
    except libvirt.libvirtError as exc:
        assert exc.get_error_code() in (libvirt.VIR_ERR_OPERATION_INVALID,
                                        libvirt.VIR_ERR_NO_SUPPORT), exc
    env.cycle_then_audit(conf)
    held = allocations_in_placement(placement)
    assert held == what_libvirt_says(conn, instances, {dedicated})
    assert guest_uuid('stopped') not in held
    assert held[guest_uuid('bfv')] == {'VCPU': 1, 'MEMORY_MB': 96,
                                       'DISK_GB': 1}
    assert held[guest_uuid('web')]['MEMORY_MB'] == 64
    conn.close()
