"""libvirt XML documents (capabilities, node devices, domains) as facts.

Pure functions of the XML text: no connection here, so every rule about
what a domain consumes is readable in one place.
"""
from typing import NamedTuple
from typing import TypeVar
import xml.etree.ElementTree as ET

from tracker.drivers import facts
from tracker.drivers.errors import DiscoveryError
from tracker.nova_opts import parse_cpu_set

_UNITS = {'b': 1, 'bytes': 1, 'k': 1024, 'kib': 1024, 'kb': 1000,
          'm': 1024 ** 2, 'mib': 1024 ** 2, 'mb': 1000 ** 2,
          'g': 1024 ** 3, 'gib': 1024 ** 3, 'gb': 1000 ** 3,
          't': 1024 ** 4, 'tib': 1024 ** 4, 'tb': 1000 ** 4}
NOVA_NS_PREFIX = '{http://openstack.org/xmlns/libvirt/nova/'

_T = TypeVar('_T')


class Disk(NamedTuple):
    """One <disk device='disk'>: kind is its type (file, block, volume,
    network); source the file or device path, (pool, volume), or a network
    disk's name; protocol only for network disks (rbd, nbd, iscsi...)."""
    kind: str
    source: str | tuple[str | None, str | None] | None
    target: str | None
    protocol: str | None


def _required(value: _T | None, what: str) -> _T:
    """``value``, which a libvirt document always has (else it is
    malformed: a DiscoveryError)."""
    if value is None:
        raise DiscoveryError('libvirt returned XML without %s' % what)
    return value


def _attr(element: ET.Element | None, name: str, what: str) -> str:
    """An attribute a libvirt element always has."""
    return _required(element.get(name) if element is not None else None, what)


def _xml(text: str, what: str) -> ET.Element:
    try:
        return ET.fromstring(text)
    except ET.ParseError as exc:
        raise DiscoveryError('libvirt returned malformed %s XML: %s'
                             % (what, exc)) from None


def to_bytes(element: ET.Element, default_unit: str = 'KiB') -> int:
    """The size an element holds, honouring its unit attribute."""
    unit = (element.get('unit') or default_unit).lower()
    return int(_required(element.text, 'a <%s> size' % element.tag).strip()) * _UNITS[unit]


def _hex(text: str) -> int:
    return int(text, 16) if text.lower().startswith('0x') else int(text)


def address_of(element: ET.Element) -> str:
    """'0000:81:10.1' from an <address domain= bus= slot= function=/>."""
    return facts.pci_address(*(_hex(element.get(k, '0')) for k in
                               ('domain', 'bus', 'slot', 'function')))


# -- host ------------------------------------------------------------------

class Capabilities:
    """What getCapabilities() says of the host."""

    def __init__(self, text: str) -> None:
        root = _xml(text, 'capabilities')
        cpu = root.find('host/cpu')
        self.arch = (cpu.findtext('arch', 'x86_64') if cpu is not None
                     else 'x86_64')
        # With a named model, libvirt lists only the features beyond it;
        # ``cpu_xml`` is what to expand (baselineCPU) for the full list.
        self.cpu_xml = (ET.tostring(cpu, encoding='unicode')
                        if cpu is not None and cpu.find('model') is not None
                        else None)
        self.cpu_features: set[str] = _features(cpu) if cpu is not None else set()
        self.numa_nodes = _numa_nodes(root)


def cpu_features(text: str) -> set[str]:
    """Feature names a <cpu> document has (not those it disables)."""
    return _features(_xml(text, 'cpu'))


def _features(cpu: ET.Element) -> set[str]:
    return {_attr(f, 'name', 'a CPU feature name') for f in cpu.findall('feature')
            if f.get('policy', 'require') in ('require', 'force')}


def _numa_nodes(root: ET.Element) -> list[facts.NumaNode]:
    nodes: list[facts.NumaNode] = []
    for cell in root.findall('host/topology/cells/cell'):
        memory = cell.find('memory')
        # (size KiB, count); the smallest size is the base page, not huge.
        pages = sorted((int(_attr(p, 'size', 'a page size')), int(p.text or 0))
                       for p in cell.findall('pages'))
        huge_kib = sum(size * count for size, count in pages[1:])
        nodes.append(facts.NumaNode(
            id=int(_attr(cell, 'id', 'a NUMA cell id')),
            cpus=[int(_attr(c, 'id', 'a CPU id')) for c in cell.findall('cpus/cpu')],
            memory_mb=(to_bytes(memory) // facts.MiB
                       if memory is not None else 0),
            huge_pages_mb=huge_kib // 1024))
    return nodes


def pci_device(text: str) -> facts.PciDevice | None:
    """A PciDevice from a node device's XML (capability type='pci')."""
    root = _xml(text, 'node device')
    cap = root.find("capability[@type='pci']")
    if cap is None:
        return None
    physfn = cap.find("capability[@type='phys_function']/address")
    numa = cap.find('numa')
    return facts.PciDevice(
        address=facts.pci_address(*(int(_required(cap.findtext(k), 'a PCI ' + k))
                                    for k in ('domain', 'bus', 'slot', 'function'))),
        vendor_id='%04x' % _hex(_attr(cap.find('vendor'), 'id', 'a PCI vendor id')),
        product_id='%04x' % _hex(_attr(cap.find('product'), 'id', 'a PCI product id')),
        class_id=(cap.findtext('class') or '').lower().removeprefix('0x'),
        numa_node=int(_attr(numa, 'node', 'a NUMA node')) if numa is not None else None,
        physfn=address_of(physfn) if physfn is not None else None,
        virtfns=[address_of(a) for a in
                 cap.findall("capability[@type='virt_functions']/address")],
        mdev_types={_attr(t, 'id', 'an mdev type id'):
                    int(t.findtext('availableInstances', '0'))
                    for t in cap.findall("capability[@type='mdev_types']/type")},
        # libvirt shows the bound kernel driver; none when unbound
        driver=(root.findtext('driver/name') or '').strip())


def mdev(text: str, parents: dict[str, str]) -> facts.Mdev:
    """A Mdev from a node device's XML; ``parents`` maps node device names
    to PCI addresses."""
    root = _xml(text, 'node device')
    cap = _required(root.find("capability[@type='mdev']"), 'an mdev capability')
    uuid = (cap.findtext('uuid')
            or _required(root.findtext('name'), 'a node device name')[len('mdev_'):])
    parent = root.findtext('parent')
    return facts.Mdev(uuid=uuid.replace('_', '-').lower(),
                      parent=parents.get(parent, '') if parent is not None else '',
                      type=_attr(cap.find('type'), 'id', 'an mdev type id'))


# -- domains ---------------------------------------------------------------

class Domain:
    """What a domain's XML says it consumes."""

    def __init__(self, text: str) -> None:
        root = _xml(text, 'domain')
        self.uuid = _required(root.findtext('uuid'), 'a domain uuid')
        self.name = _required(root.findtext('name'), 'a domain name')
        self.vcpus = int(root.findtext('vcpu', '0'))
        self.vcpu_pins = _vcpu_pins(root, self.vcpus)
        memory = root.find('memory')
        self.memory_mb = (facts.ceil_div(to_bytes(memory), facts.MiB)
                          if memory is not None else 0)
        nova = _nova_metadata(root)
        self.project_id, self.user_id = _owner(nova)
        self.cpu_policy = _extra_spec(nova, 'hw:cpu_policy')
        self.disks = [_disk(d) for d in root.findall('devices/disk')
                      if d.get('device', 'disk') == 'disk']
        self.pci_addresses = [
            address_of(a) for a in
            root.findall("devices/hostdev[@type='pci']/source/address")
            + root.findall("devices/interface[@type='hostdev']/source/"
                           "address[@type='pci']")]
        self.mdev_uuids = [
            _attr(a, 'uuid', 'an mdev uuid').lower() for a in
            root.findall("devices/hostdev[@type='mdev']/source/address")]
        nodeset = root.find('numatune/memory')
        cells = (facts.parse_cpu_list(nodeset.get('nodeset', ''))
                 if nodeset is not None else [])
        self.numa_node = cells[0] if len(cells) == 1 else None
        self.mem_encryption = _mem_encryption(root.find('launchSecurity'))


# SEV's policy bit for encrypted state (SEV-ES)
_SEV_POLICY_ES = 0x4


def _mem_encryption(launch: ET.Element | None) -> str | None:
    """The memory-encryption model of a domain's <launchSecurity>."""
    kind = launch.get('type') if launch is not None else None
    if launch is None or kind is None:
        return None
    if kind == 'sev':
        try:
            policy = int(launch.findtext('policy') or '0', 16)
        except ValueError:
            policy = 0
        return 'amd_sev_es' if policy & _SEV_POLICY_ES else 'amd_sev'
    return {'sev-snp': 'amd_sev_snp', 'tdx': 'intel_tdx'}.get(kind)


def _vcpu_pins(root: ET.Element, count: int) -> list[list[int]]:
    """The host CPUs each vCPU may run on: its <vcpupin>, else the <vcpu
    cpuset>, else none (floating)."""
    vcpu = root.find('vcpu')
    default = vcpu.get('cpuset') if vcpu is not None else None
    pins: dict[int, str | None] = {}
    for pin in root.findall('cputune/vcpupin'):
        pins[int(_attr(pin, 'vcpu', 'a vcpupin vcpu'))] = pin.get('cpuset')
    result: list[list[int]] = []
    for index in range(count):
        cpuset = pins.get(index, default)
        try:
            result.append(sorted(parse_cpu_set(cpuset, 'vcpupin'))
                          if cpuset else [])
        except DiscoveryError:
            result.append([])
    return result


def _nova_metadata(root: ET.Element) -> tuple[str, ET.Element] | None:
    """(namespace prefix, <nova:instance>) of nova's metadata, or None."""
    for element in root.iterfind('metadata/*'):
        if element.tag.startswith(NOVA_NS_PREFIX):
            return element.tag[:element.tag.index('}') + 1], element
    return None


def _owner(nova: tuple[str, ET.Element] | None) -> tuple[str | None, str | None]:
    """(project uuid, user uuid) from nova's instance metadata, if any."""
    if nova is None:
        return None, None
    ns, element = nova
    project = element.find('%sowner/%sproject' % (ns, ns))
    user = element.find('%sowner/%suser' % (ns, ns))
    return (project.get('uuid') if project is not None else None,
            user.get('uuid') if user is not None else None)


def _extra_spec(nova: tuple[str, ET.Element] | None, name: str) -> str | None:
    """A flavor extra spec from nova's metadata (namespace 1.1 and later)."""
    if nova is None:
        return None
    ns, element = nova
    for spec in element.iterfind('%sflavor/%sextraSpecs/%sextraSpec'
                                 % (ns, ns, ns)):
        if spec.get('name') == name:
            return (spec.text or '').strip() or None
    return None


def _disk(disk: ET.Element) -> Disk:
    """The Disk of one <disk> element."""
    kind = disk.get('type', 'file')
    source = disk.find('source')
    target_element = disk.find('target')
    target = target_element.get('dev') if target_element is not None else None
    if source is None:
        return Disk(kind, None, target, None)
    if kind == 'network':
        return Disk(kind, source.get('name'), target, source.get('protocol'))
    if kind == 'volume':
        return Disk(kind, (source.get('pool'), source.get('volume')), target,
                    None)
    return Disk(kind, source.get('file') or source.get('dev'), target, None)
