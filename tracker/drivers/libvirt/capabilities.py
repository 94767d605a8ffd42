"""The capability traits nova 34's libvirt driver puts on the compute node.

nova's scheduler asks for them (the image-type and other prefilters, and
flavors' and images' required traits), so a host the agent reports alone
must carry the same set nova-compute would, from the same sources:

- what the libvirt driver always can (interfaces and volumes attached with
  tags, volume extend and multi-attach, trusted certificates, accelerators,
  boot-from-volume rescue, socket PCI NUMA affinity, packed virtqueues,
  the sound models) and the image types its image backend takes
  (``[libvirt] images_type``, ``[DEFAULT] force_raw_images``, minus
  ``[compute] image_type_exclude_list``);
- libvirt's domain capabilities, asked per guest architecture for its
  default and canonical machine types: disk buses, video models, UEFI
  Secure Boot, TPM models and versions (with ``[libvirt] swtpm_enabled``),
  the emulated architectures (``COMPUTE_ARCH_*``) and vIOMMU models;
- libvirt's and QEMU's versions, with nova's minimums: IGB VIFs,
  virtio-fs, guest address-space sizes, stateless firmware, virtio sound,
  the virtio vIOMMU, remote-managed ports (with such a device chosen);
- the host: ``HW_ARCH_<arch>``, ``HW_CPU_HYPERTHREADING``.

Only what holds is reported (placement keeps traits, not their absence);
``COMPUTE_STATUS_DISABLED`` never: the agent that reports a host is
enabling it. Names os-traits does not know are dropped, as nova drops them.
"""
from collections.abc import Iterable
import logging
from typing import NamedTuple
import xml.etree.ElementTree as ET

import libvirt
import os_traits
from oslo_config import cfg

from tracker.drivers.libvirt import mem_encryption

LOG = logging.getLogger(__name__)

# What the libvirt driver supports whatever the host (nova 34's
# LibvirtDriver.capabilities, mapped by nova/virt/driver.py).
ALWAYS = frozenset({
    'COMPUTE_NET_ATTACH_INTERFACE', 'COMPUTE_DEVICE_TAGGING',
    'COMPUTE_NET_ATTACH_INTERFACE_WITH_TAG', 'COMPUTE_VOLUME_ATTACH_WITH_TAG',
    'COMPUTE_VOLUME_EXTEND', 'COMPUTE_VOLUME_MULTI_ATTACH',
    'COMPUTE_TRUSTED_CERTS', 'COMPUTE_ACCELERATORS', 'COMPUTE_RESCUE_BFV',
    'COMPUTE_SOCKET_PCI_NUMA_AFFINITY', 'COMPUTE_NET_VIRTIO_PACKED',
    'COMPUTE_SOUND_MODEL_SB16', 'COMPUTE_SOUND_MODEL_ES1370',
    'COMPUTE_SOUND_MODEL_PCSPK', 'COMPUTE_SOUND_MODEL_AC97',
    'COMPUTE_SOUND_MODEL_ICH6', 'COMPUTE_SOUND_MODEL_ICH9',
    'COMPUTE_SOUND_MODEL_USB',
})
IMAGE_TYPES = ('aki', 'ari', 'ami', 'raw', 'iso')

VIF_MODELS = {
    'qemu': ('virtio', 'ne2k_pci', 'pcnet', 'rtl8139', 'e1000', 'e1000e',
             'lan9118', 'spapr-vlan', 'vmxnet3', 'igb'),
    'kvm': ('virtio', 'ne2k_pci', 'pcnet', 'rtl8139', 'e1000', 'e1000e',
            'spapr-vlan', 'vmxnet3', 'igb'),
    'lxc': (),
    'parallels': ('virtio', 'rtl8139', 'e1000'),
}
# disk buses nova knows, and those it assumes where libvirt is not asked
DISK_BUSES = frozenset({'virtio', 'scsi', 'ide', 'usb', 'fdc', 'sata', 'xen',
                        'lxc', 'uml'})
STATIC_DISK_BUSES = {'lxc': ('lxc',), 'parallels': ('ide', 'scsi')}
VIDEO_MODELS = frozenset({'cirrus', 'qxl', 'vga', 'vmvga', 'xen', 'virtio',
                          'gop', 'none', 'bochs'})
DEFAULT_MACHINE = {'armv7l': 'virt', 'aarch64': 'virt', 'ppc64le': 'pseries',
                   's390': 's390-ccw-virtio', 's390x': 's390-ccw-virtio',
                   'i686': 'pc', 'x86_64': 'pc'}

# nova 34's minimum versions: (libvirt, QEMU); None: not asked
MIN_VERSIONS = {
    'COMPUTE_NET_VIF_MODEL_IGB': ((9, 3, 0), (8, 0, 0)),
    'COMPUTE_STORAGE_VIRTIO_FS': ((8, 0, 0), (6, 2, 0)),
    'COMPUTE_ADDRESS_SPACE_PASSTHROUGH': ((8, 7, 0), None),
    'COMPUTE_ADDRESS_SPACE_EMULATED': ((8, 7, 0), None),
    'COMPUTE_SECURITY_STATELESS_FIRMWARE': ((8, 6, 0), None),
    'COMPUTE_SOUND_MODEL_VIRTIO': ((10, 4, 0), (8, 2, 0)),
    'COMPUTE_VIOMMU_MODEL_VIRTIO': ((8, 3, 0), None),
    'COMPUTE_REMOTE_MANAGED_PORTS': ((7, 9, 0), None),
}
Version = tuple[int, int, int]


class Machine(NamedTuple):
    """What one getDomainCapabilities answer offers."""
    disk_buses: frozenset[str]
    video_models: frozenset[str]
    secure_boot: bool
    tpm_models: tuple[str, ...]
    tpm_versions: tuple[str, ...] | None     # None: libvirt does not say
    encryption: mem_encryption.Features = mem_encryption.Features()


def _values(element: ET.Element | None, enum: str) -> list[str]:
    if element is None:
        return []
    return [v.text or '' for v in element.findall("enum[@name='%s']/value" % enum)]


def parse_machine(text: str) -> Machine:
    root = ET.fromstring(text)
    tpm = root.find('devices/tpm')
    versions = tpm.find("enum[@name='backendVersion']") if tpm is not None else None
    return Machine(
        disk_buses=frozenset(_values(root.find('devices/disk'), 'bus')),
        video_models=frozenset(_values(root.find('devices/video'), 'modelType')),
        secure_boot='yes' in _values(root.find('os/loader'), 'secure'),
        tpm_models=tuple(_values(tpm, 'model')),
        tpm_versions=(tuple(v.text or '' for v in versions.findall('value'))
                      if versions is not None else None),
        encryption=mem_encryption.parse_features(root))


def _version(number: int) -> Version:
    return (number // 1000000, number // 1000 % 1000, number % 1000)


class Host:
    """libvirt's versions and domain capabilities, asked once a cycle."""

    def __init__(self, conn: libvirt.virConnect, capabilities: str,
                 virt_type: str, domain_conn: libvirt.virConnect | None = None) -> None:
        """``domain_conn`` asks the domain capabilities, which libvirt
        refuses on a read-only connection (None: not asked)."""
        root = ET.fromstring(capabilities)
        self.arch = root.findtext('host/cpu/arch') or 'x86_64'
        self.hyperthreading = any(
            len((cpu.get('siblings') or '').replace('-', ',').split(',')) > 1
            for cpu in root.findall('host/topology/cells/cell/cpus/cpu'))
        self.libvirt = _version(conn.getLibVersion())
        self.qemu = _version(conn.getVersion())
        self.virt_type = virt_type
        # arch -> the machines asked (an arch any of whose answers failed
        # is left out whole, as nova leaves it out)
        self.machines: dict[str, list[Machine]] = {}
        for guest in root.findall('guest') if domain_conn is not None else []:
            arch_el = guest.find('arch')
            if arch_el is None or not arch_el.get('name'):
                continue
            self._ask(domain_conn, arch_el)

    def _ask(self, conn: libvirt.virConnect, arch_el: ET.Element) -> None:
        arch = arch_el.get('name') or ''
        # a <domain> with children has its own emulator and machines; a
        # childless one (and any type not listed) the <arch>'s
        domain = arch_el.find("domain[@type='%s']" % self.virt_type)
        source = domain if domain is not None and len(domain) else arch_el
        emulator = source.findtext('emulator')
        types = {DEFAULT_MACHINE.get(arch)} | {
            m.text for m in source.findall('machine') if m.get('canonical')}
        found: list[Machine] = []
        for machine_type in sorted(types, key=lambda t: t or ''):
            try:
                found.append(parse_machine(conn.getDomainCapabilities(
                    emulator, arch, machine_type, self.virt_type, 0)))
            except libvirt.libvirtError as exc:
                LOG.debug('no domain capabilities for %s %s: %s',
                          arch, machine_type, exc)
                return
        self.machines[arch] = found

    def at_least(self, trait: str) -> bool:
        libvirt_min, qemu_min = MIN_VERSIONS[trait]
        return self.libvirt >= libvirt_min and (
            qemu_min is None or self.qemu >= qemu_min)

    def host_machines(self) -> list[Machine]:
        return self.machines.get(self.arch, [])


def image_types(conf: cfg.ConfigOpts) -> set[str]:
    types = set(IMAGE_TYPES)
    if not (conf.libvirt.images_type in ('rbd', 'lvm')
            and not conf.force_raw_images):
        types.add('qcow2')
    if conf.libvirt.virt_type == 'parallels':
        types.add('ploop')
    return {'COMPUTE_IMAGE_TYPE_' + t.upper() for t in types
            if t not in conf.compute.image_type_exclude_list}


def _model_traits(prefix: str, models: Iterable[str]) -> set[str]:
    return {prefix + m.replace('-', '_').upper() for m in models}


def _domain_traits(host: Host, virt_type: str) -> set[str]:
    traits: set[str] = set()
    machines = [m for ms in host.machines.values() for m in ms]
    if virt_type in ('qemu', 'kvm'):
        buses: set[str] = set().union(*(m.disk_buses for m in machines))
    else:
        buses = set(STATIC_DISK_BUSES.get(virt_type, ()))
    traits |= _model_traits('COMPUTE_STORAGE_BUS_', buses & DISK_BUSES)
    videos: set[str] = set().union(*(m.video_models for m in machines))
    traits |= _model_traits('COMPUTE_GRAPHICS_MODEL_', videos & VIDEO_MODELS)
    traits |= _model_traits('COMPUTE_ARCH_', host.machines)
    viommu = {'auto'}
    if 'aarch64' in host.machines:
        viommu.add('smmuv3')
    if 'x86_64' in host.machines:
        viommu.add('intel')
    if host.at_least('COMPUTE_VIOMMU_MODEL_VIRTIO'):
        viommu.add('virtio')
    traits |= _model_traits('COMPUTE_VIOMMU_MODEL_', viommu)
    if any(m.secure_boot for m in host.host_machines()):
        traits.add('COMPUTE_SECURITY_UEFI_SECURE_BOOT')
    return traits


def _tpm_traits(host: Host, conf: cfg.ConfigOpts) -> set[str]:
    if not conf.libvirt.swtpm_enabled:
        return set()
    first = host.host_machines()[:1]
    models = first[0].tpm_models if first else ()
    versions = first[0].tpm_versions if first else ()
    traits = {trait for trait, model in (('COMPUTE_SECURITY_TPM_TIS', 'tpm-tis'),
                                         ('COMPUTE_SECURITY_TPM_CRB', 'tpm-crb'))
              if model in models}
    for trait, version in (('COMPUTE_SECURITY_TPM_2_0', '2.0'),
                           ('COMPUTE_SECURITY_TPM_1_2', '1.2')):
        if versions is None or version in versions:
            traits.add(trait)
    traits |= _model_traits('COMPUTE_SECURITY_TPM_SECRET_SECURITY_',
                            conf.libvirt.supported_tpm_secret_security)
    return traits


def traits(host: Host, conf: cfg.ConfigOpts, remote_managed: bool) -> set[str]:
    """Every capability trait that holds for ``host`` under ``conf``;
    ``remote_managed``: a chosen device is a remote-managed port's VF."""
    virt_type = conf.libvirt.virt_type
    found = set(ALWAYS) | image_types(conf)
    found |= _domain_traits(host, virt_type)
    found |= _tpm_traits(host, conf)
    found |= _model_traits('COMPUTE_NET_VIF_MODEL_', [
        m for m in VIF_MODELS.get(virt_type, ())
        if m != 'igb' or host.at_least('COMPUTE_NET_VIF_MODEL_IGB')])
    found |= {t for t in ('COMPUTE_STORAGE_VIRTIO_FS',
                          'COMPUTE_ADDRESS_SPACE_PASSTHROUGH',
                          'COMPUTE_ADDRESS_SPACE_EMULATED',
                          'COMPUTE_SECURITY_STATELESS_FIRMWARE',
                          'COMPUTE_SOUND_MODEL_VIRTIO') if host.at_least(t)}
    if remote_managed and host.at_least('COMPUTE_REMOTE_MANAGED_PORTS'):
        found.add('COMPUTE_REMOTE_MANAGED_PORTS')
    if conf.libvirt.file_backed_memory > 0:
        found.add('COMPUTE_MEM_BACKING_FILE')
    found.add('HW_ARCH_' + host.arch.upper())
    if host.hyperthreading:
        found.add('HW_CPU_HYPERTHREADING')
    known = set(os_traits.get_traits())
    return found & known
