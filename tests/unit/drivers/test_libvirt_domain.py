"""What a domain's XML says it consumes: pinned vCPUs, nova's flavor
metadata, its disks; and the virtual size an image file gives its guest."""
import subprocess

from tracker.drivers import image
from tracker.drivers.libvirt import parse

PINNED = """
<domain type='kvm'>
  <name>pinned</name><uuid>6a3c1f0e-0000-4000-8000-000000000001</uuid>
  <memory unit='MiB'>1024</memory>
  <vcpu placement='static'>3</vcpu>
  <cputune>
    <vcpupin vcpu='0' cpuset='4'/>
    <vcpupin vcpu='1' cpuset='5'/>
    <vcpupin vcpu='2' cpuset='0-1,^1'/>
  </cputune>
  <devices>
    <disk type='file' device='disk'>
      <source file='/var/lib/nova/instances/x/disk'/><target dev='vda'/>
    </disk>
    <disk type='network' device='disk'>
      <source protocol='rbd' name='vms/x_disk.eph0'/><target dev='vdb'/>
    </disk>
    <disk type='file' device='cdrom'><target dev='hda'/></disk>
  </devices>
</domain>
"""

NOVA = """
<domain type='kvm'>
  <name>instance-1</name><uuid>6a3c1f0e-0000-4000-8000-000000000002</uuid>
  <metadata>
    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
      <nova:flavor name="pinned.small">
        <nova:memory>512</nova:memory><nova:vcpus>2</nova:vcpus>
        <nova:extraSpecs>
          <nova:extraSpec name="hw:mem_page_size">large</nova:extraSpec>
          <nova:extraSpec name="hw:cpu_policy">dedicated</nova:extraSpec>
        </nova:extraSpecs>
      </nova:flavor>
      <nova:owner><nova:user uuid="u1">u</nova:user>
        <nova:project uuid="p1">p</nova:project></nova:owner>
    </nova:instance>
  </metadata>
  <memory unit='KiB'>524288</memory>
  <vcpu cpuset='2-3'>2</vcpu>
</domain>
"""


def test_each_vcpu_knows_the_host_cpus_it_is_pinned_to():
    domain = parse.Domain(PINNED)
    assert domain.vcpus == 3
    assert domain.vcpu_pins == [[4], [5], [0]]
    assert domain.cpu_policy is None


def test_nova_flavor_metadata_gives_the_cpu_policy_and_owner():
    domain = parse.Domain(NOVA)
    assert domain.cpu_policy == 'dedicated'
    assert (domain.project_id, domain.user_id) == ('p1', 'u1')
    # without <vcpupin>, every vCPU runs where <vcpu cpuset> says
    assert domain.vcpu_pins == [[2, 3], [2, 3]]


def test_disks_with_their_target_and_network_source():
    assert parse.Domain(PINNED).disks == [
        parse.Disk('file', '/var/lib/nova/instances/x/disk', 'vda', None),
        parse.Disk('network', 'vms/x_disk.eph0', 'vdb', 'rbd')]


def test_a_sparse_qcow2_has_its_virtual_size(tmp_path):
    path = tmp_path / 'disk'
    subprocess.run(['qemu-img', 'create', '-q', '-f', 'qcow2', str(path),
                    '5G'], check=True)
    assert path.stat().st_size < 1024 ** 2          # sparse: a header
    assert image.virtual_size(str(path)) == 5 * 1024 ** 3


def test_a_raw_file_is_its_size(tmp_path):
    path = tmp_path / 'disk.swap'
    with open(path, 'wb') as f:
        f.truncate(512 * 1024 ** 2)
    assert image.virtual_size(str(path)) == 512 * 1024 ** 2
