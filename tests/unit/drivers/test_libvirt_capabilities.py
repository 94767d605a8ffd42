"""The COMPUTE_* traits from what libvirt says (nova 34's rules).

The connection is libvirt's own answers written down (a QEMU 8.2 /
libvirt 10.5 x86_64 host: its capabilities and domain capabilities), so
each rule can be seen to follow what libvirt said.
"""
import libvirt
import pytest

from tracker.drivers.libvirt import capabilities

CAPS = """<capabilities><host><cpu><arch>x86_64</arch></cpu>
<topology><cells num='1'><cell id='0'><cpus num='4'>
<cpu id='0' siblings='0,2'/><cpu id='1' siblings='1,3'/>
<cpu id='2' siblings='0,2'/><cpu id='3' siblings='1,3'/>
</cpus></cell></cells></topology></host>
<guest><os_type>hvm</os_type><arch name='x86_64'>
<emulator>/usr/bin/qemu-system-x86_64</emulator>
<machine canonical='pc-i440fx-8.2'>pc</machine>
<machine canonical='pc-q35-8.2'>q35</machine>
<domain type='qemu'/><domain type='kvm'/></arch></guest>
<guest><os_type>hvm</os_type><arch name='aarch64'>
<emulator>/usr/bin/qemu-system-aarch64</emulator>
<machine>virt</machine><domain type='qemu'/></arch></guest>
</capabilities>"""


def domcaps(machine, secure):
    return """<domainCapabilities><machine>%s</machine><os supported='yes'>
<loader supported='yes'><enum name='type'><value>rom</value><value>pflash</value></enum>
<enum name='secure'><value>no</value>%s</enum></loader></os>
<devices>
<disk supported='yes'><enum name='bus'><value>ide</value><value>fdc</value>
<value>scsi</value><value>virtio</value><value>usb</value><value>sata</value></enum></disk>
<video supported='yes'><enum name='modelType'><value>vga</value><value>cirrus</value>
<value>virtio</value><value>none</value><value>bochs</value><value>ramfb</value></enum></video>
<tpm supported='yes'><enum name='model'><value>tpm-tis</value><value>tpm-crb</value></enum>
<enum name='backendModel'><value>emulator</value></enum>
<enum name='backendVersion'><value>2.0</value></enum></tpm>
</devices></domainCapabilities>""" % (machine, '<value>yes</value>' if secure else '')


class Libvirt:
    """libvirt's answers for one host (what a virConnect gives)."""

    def __init__(self, version=10005000, qemu=8002000, refuse=()):
        self.version, self.qemu, self.refuse = version, qemu, refuse
        self.asked = []

    def getLibVersion(self):
        return self.version

    def getVersion(self):
        return self.qemu

    def getDomainCapabilities(self, emulator, arch, machine, virt_type, flags):
        self.asked.append((arch, machine, virt_type))
        if arch in self.refuse:
            raise libvirt.libvirtError('KVM is not supported on this arch')
        return domcaps(machine, secure=machine == 'q35')


def host_traits(conf, conn=None, remote_managed=False):
    conn = conn or Libvirt()
    host = capabilities.Host(conn, CAPS, conf.libvirt.virt_type, conn)
    return capabilities.traits(host, conf, remote_managed)


def test_a_kvm_host(conf):
    traits = host_traits(conf)
    assert {'COMPUTE_STORAGE_BUS_VIRTIO', 'COMPUTE_STORAGE_BUS_SATA',
            'COMPUTE_STORAGE_BUS_FDC', 'COMPUTE_GRAPHICS_MODEL_VGA',
            'COMPUTE_GRAPHICS_MODEL_BOCHS', 'COMPUTE_GRAPHICS_MODEL_NONE',
            'COMPUTE_SECURITY_UEFI_SECURE_BOOT', 'COMPUTE_ARCH_X86_64',
            'COMPUTE_ARCH_AARCH64', 'COMPUTE_VIOMMU_MODEL_INTEL',
            'COMPUTE_VIOMMU_MODEL_SMMUV3', 'COMPUTE_VIOMMU_MODEL_VIRTIO',
            'COMPUTE_NET_VIF_MODEL_IGB', 'COMPUTE_STORAGE_VIRTIO_FS',
            'COMPUTE_SOUND_MODEL_VIRTIO', 'COMPUTE_IMAGE_TYPE_QCOW2',
            'HW_ARCH_X86_64', 'HW_CPU_HYPERTHREADING'} <= traits
    # ramfb has no trait; kvm has no lan9118 NIC; no TPM unless enabled
    assert not {t for t in traits if 'RAMFB' in t or 'LAN9118' in t
                or t.startswith('COMPUTE_SECURITY_TPM')}
    assert 'COMPUTE_STATUS_DISABLED' not in traits
    assert 'COMPUTE_REMOTE_MANAGED_PORTS' not in traits
    assert 'COMPUTE_MEM_BACKING_FILE' not in traits


def test_machine_types_asked(conf):
    conn = Libvirt()
    host_traits(conf, conn)
    # the default (pc) and the canonical ones, per guest architecture
    assert sorted(conn.asked) == [('aarch64', 'virt', 'kvm'),
                                  ('x86_64', 'pc', 'kvm'),
                                  ('x86_64', 'q35', 'kvm')]


def test_an_architecture_libvirt_refuses_is_left_out(conf):
    traits = host_traits(conf, Libvirt(refuse=('aarch64',)))
    assert 'COMPUTE_ARCH_AARCH64' not in traits
    assert 'COMPUTE_VIOMMU_MODEL_SMMUV3' not in traits
    assert 'COMPUTE_ARCH_X86_64' in traits


def test_old_libvirt_and_qemu(conf):
    traits = host_traits(conf, Libvirt(version=8005000, qemu=7002000))
    for trait in ('COMPUTE_NET_VIF_MODEL_IGB', 'COMPUTE_SOUND_MODEL_VIRTIO',
                  'COMPUTE_ADDRESS_SPACE_EMULATED',
                  'COMPUTE_SECURITY_STATELESS_FIRMWARE'):
        assert trait not in traits
    assert {'COMPUTE_STORAGE_VIRTIO_FS', 'COMPUTE_VIOMMU_MODEL_VIRTIO'} <= traits


def test_tpm(conf):
    conf.set_override('swtpm_enabled', True, 'libvirt')
    conf.set_override('supported_tpm_secret_security', ['host'], 'libvirt')
    tpm = {t for t in host_traits(conf) if t.startswith('COMPUTE_SECURITY_TPM')}
    assert tpm == {'COMPUTE_SECURITY_TPM_TIS', 'COMPUTE_SECURITY_TPM_CRB',
                   'COMPUTE_SECURITY_TPM_2_0',
                   'COMPUTE_SECURITY_TPM_SECRET_SECURITY_HOST'}


@pytest.mark.parametrize('images_type,force_raw,qcow2', [
    ('rbd', False, False), ('rbd', True, True), ('lvm', False, False),
    ('qcow2', False, True)])
def test_image_types(conf, images_type, force_raw, qcow2):
    conf.set_override('images_type', images_type, 'libvirt')
    conf.set_override('force_raw_images', force_raw)
    assert ('COMPUTE_IMAGE_TYPE_QCOW2' in host_traits(conf)) is qcow2


def test_image_type_exclude_list(conf):
    conf.set_override('image_type_exclude_list', ['qcow2', 'iso'], 'compute')
    images = {t for t in host_traits(conf) if t.startswith('COMPUTE_IMAGE_TYPE')}
    assert images == {'COMPUTE_IMAGE_TYPE_AKI', 'COMPUTE_IMAGE_TYPE_ARI',
                      'COMPUTE_IMAGE_TYPE_AMI', 'COMPUTE_IMAGE_TYPE_RAW'}


def test_qemu_virt_type_and_file_backed_memory(conf):
    conf.set_override('virt_type', 'qemu', 'libvirt')
    conf.set_override('file_backed_memory', 1024, 'libvirt')
    traits = host_traits(conf, remote_managed=True)
    assert {'COMPUTE_NET_VIF_MODEL_LAN9118', 'COMPUTE_MEM_BACKING_FILE',
            'COMPUTE_REMOTE_MANAGED_PORTS'} <= traits


def test_without_domain_capabilities(conf):
    """A read-only connection: nothing libvirt would only tell a writer."""
    conn = Libvirt()
    host = capabilities.Host(conn, CAPS, 'kvm', None)
    traits = capabilities.traits(host, conf, False)
    assert conn.asked == []
    assert not {t for t in traits if t.startswith(
        ('COMPUTE_STORAGE_BUS', 'COMPUTE_GRAPHICS', 'COMPUTE_ARCH'))}
    assert 'COMPUTE_IMAGE_TYPE_RAW' in traits
