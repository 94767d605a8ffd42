"""Memory-encryption contexts from what libvirt and the kernel say (nova
34's rules: SEV, SEV-ES, SEV-SNP, TDX).

libvirt's test driver answers no domain capabilities, so the connection
here answers the domain capabilities a libvirt 10.5 / QEMU 8.2 AMD EPYC
host prints (written down below); the kernel's kvm_amd parameters and
the misc cgroup are files in a sysfs tree the test writes.
"""
import pytest

from tests.unit.drivers.test_libvirt_capabilities import CAPS
from tracker.drivers.host import sysfs
from tracker.drivers.libvirt import capabilities
from tracker.drivers.libvirt import mem_encryption
from tracker.drivers.libvirt import parse

SEV = """<sev supported='yes'><cbitpos>51</cbitpos>
<reducedPhysBits>1</reducedPhysBits><maxGuests>410</maxGuests>
<maxESGuests>99</maxESGuests></sev>"""
SNP = """<launchSecurity supported='yes'><enum name='sectype'>
<value>sev</value><value>sev-snp</value></enum></launchSecurity>"""
TDX = "<tdx supported='yes'/>"


def domcaps(machine, features):
    return """<domainCapabilities><path>/usr/bin/qemu-system-x86_64</path>
<domain>kvm</domain><machine>%s</machine><arch>x86_64</arch>
<features><gic supported='no'/><vmcoreinfo supported='yes'/>
<genid supported='yes'/>%s<sgx supported='no'/></features>
</domainCapabilities>""" % (machine, features)


class Libvirt:
    """libvirt's answers: ``features`` in every machine type's domain
    capabilities (``q35_only``: in q35's alone, pc's saying none)."""

    def __init__(self, features='', qemu=8002000, q35_only=''):
        self.features, self.qemu, self.q35_only = features, qemu, q35_only

    def getLibVersion(self):
        return 10005000

    def getVersion(self):
        return self.qemu

    def getDomainCapabilities(self, emulator, arch, machine, virt_type, flags):
        extra = self.q35_only if machine == 'q35' else ''
        return domcaps(machine, self.features + extra)


@pytest.fixture
def kernel(tmp_path):
    """kernel(sev=..., sev_es=..., sev_snp=..., misc=...): the sysfs tree."""
    def write(misc=None, **parameters):
        params = tmp_path / 'module' / 'kvm_amd' / 'parameters'
        params.mkdir(parents=True, exist_ok=True)
        for name, on in parameters.items():
            (params / name).write_text('Y\n' if on else 'N\n')
        if misc is not None:
            cgroup = tmp_path / 'fs' / 'cgroup'
            cgroup.mkdir(parents=True, exist_ok=True)
            (cgroup / 'misc.capacity').write_text(misc)
        return sysfs.HostPaths(str(tmp_path))
    return write


def contexts(conf, paths, conn=None, caps=CAPS, asked=True):
    conn = conn or Libvirt()
    host = capabilities.Host(conn, caps, conf.libvirt.virt_type,
                             conn if asked else None)
    return mem_encryption.contexts(
        [m.encryption for m in host.host_machines()], host.arch, host.qemu,
        paths, conf)


def test_sev_and_sev_es(conf, kernel):
    paths = kernel(sev=True, sev_es=True, sev_snp=False)
    assert contexts(conf, paths, Libvirt(SEV)) == {'amd_sev': 410, 'amd_sev_es': 99}


def test_sev_es_needs_qemu_8(conf, kernel):
    paths = kernel(sev=True, sev_es=True, sev_snp=False)
    assert contexts(conf, paths, Libvirt(SEV, qemu=7002000)) == {'amd_sev': 410}


def test_sev_snp_takes_sev_es_slots_and_sev_es_is_not_offered(conf, kernel):
    """nova: with SNP in the kernel SEV-ES is ignored; SNP needs a machine
    type (here q35) whose launchSecurity lists sev-snp."""
    paths = kernel(sev=True, sev_es=True, sev_snp=True)
    assert contexts(conf, paths, Libvirt(SEV, q35_only=SNP)) == {
        'amd_sev': 410, 'amd_sev_snp': 99}
    # libvirt before 10.5 says no launchSecurity: SEV alone
    assert contexts(conf, paths, Libvirt(SEV)) == {'amd_sev': 410}


@pytest.mark.parametrize('features,parameters', [
    (SEV, {'sev': False, 'sev_es': True}),        # kernel: SEV off
    (SEV, {}),                                    # no kvm_amd (an Intel host)
    ("<sev supported='no'/>", {'sev': True}),     # libvirt or QEMU: no SEV
    ("<sev supported='yes'><maxGuests>0</maxGuests></sev>", {'sev': True}),
])
def test_no_sev(conf, kernel, features, parameters):
    assert contexts(conf, kernel(**parameters), Libvirt(features)) == {}


def test_sev_es_without_es_slots(conf, kernel):
    """maxESGuests 0 (the BIOS gave every ASID to plain SEV): no child."""
    paths = kernel(sev=True, sev_es=True)
    features = SEV.replace('<maxESGuests>99', '<maxESGuests>0')
    assert contexts(conf, paths, Libvirt(features)) == {'amd_sev': 410}


def test_not_on_other_architectures(conf, kernel):
    paths = kernel(sev=True)
    aarch64 = CAPS.replace('<arch>x86_64</arch>', '<arch>aarch64</arch>', 1)
    assert contexts(conf, paths, Libvirt(SEV), caps=aarch64) == {}


def test_not_asked_on_a_read_only_connection(conf, kernel):
    assert contexts(conf, kernel(sev=True), Libvirt(SEV), asked=False) == {}


def test_tdx_from_the_misc_cgroup(conf, kernel):
    conf.set_override('cpu_mode', 'host-passthrough', 'libvirt')
    paths = kernel(misc='sev 0\nsev_es 0\ntdx 31\n')
    assert contexts(conf, paths, Libvirt(TDX)) == {'intel_tdx': 31}
    # nova: the option, when set, is the count (even above the cgroup's)
    conf.set_override('num_intel_tdx_guests', 40, 'libvirt')
    assert contexts(conf, paths, Libvirt(TDX)) == {'intel_tdx': 40}


def test_tdx_needs_host_passthrough_and_a_count(conf, kernel):
    paths = kernel(misc='tdx 31\n')
    assert contexts(conf, paths, Libvirt(TDX)) == {}          # cpu_mode unset
    conf.set_override('cpu_mode', 'host-passthrough', 'libvirt')
    assert contexts(conf, kernel(misc='res_a 4\n'), Libvirt(TDX)) == {}
    assert contexts(conf, paths, Libvirt("<tdx supported='no'/>")) == {}


def domain(launch_security):
    return parse.Domain("""<domain type='kvm'><name>vm</name>
<uuid>a1b2c3d4-0000-4000-8000-000000000001</uuid><memory>524288</memory>
<vcpu>1</vcpu>%s</domain>""" % launch_security)


@pytest.mark.parametrize('launch_security,model', [
    ('', None),
    ("<launchSecurity type='sev'><cbitpos>51</cbitpos><reducedPhysBits>1"
     "</reducedPhysBits><policy>0x0033</policy></launchSecurity>", 'amd_sev'),
    # nova's SEV-ES policy adds the encrypted-state bit (0x4)
    ("<launchSecurity type='sev'><cbitpos>51</cbitpos><reducedPhysBits>1"
     "</reducedPhysBits><policy>0x0037</policy></launchSecurity>", 'amd_sev_es'),
    ("<launchSecurity type='sev-snp'><policy>0x00030000</policy>"
     "</launchSecurity>", 'amd_sev_snp'),
    ("<launchSecurity type='tdx'/>", 'intel_tdx'),
    ("<launchSecurity type='s390-pv'/>", None),
])
def test_a_domains_model(launch_security, model):
    assert domain(launch_security).mem_encryption == model
