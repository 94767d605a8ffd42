"""Which memory-encryption models a host runs guests of, and how many.

nova 34's libvirt driver (since 2025.2) reports one child provider per
model the host supports, with as many MEM_ENCRYPTION_CONTEXT as it can run
such guests at once; ``layout`` makes them. The rules are nova's, from the
same sources, because its scheduler reads the result:

- AMD SEV: an x86_64 host whose kvm_amd module has ``sev`` on, and a
  domain capabilities answer for x86_64 (any machine type) with
  ``<sev supported='yes'>``: its ``<maxGuests>`` contexts;
- SEV-ES: SEV, plus ``sev_es`` on and QEMU 8.0 or later, but not when
  ``sev_snp`` is on (nova then offers SNP instead): ``<maxESGuests>``;
- SEV-SNP: SEV, plus ``sev_snp`` on and a machine type whose
  ``<launchSecurity supported='yes'>`` lists the ``sev-snp`` sectype:
  ``<maxESGuests>`` too (SNP guests take the same key slots);
- Intel TDX: an x86_64 host with ``[libvirt] cpu_mode =
  host-passthrough`` (TDX guests need the host's CPU) and ``<tdx
  supported='yes'>``: ``[libvirt] num_intel_tdx_guests`` when set, else
  the ``tdx`` line of the misc cgroup's ``misc.capacity``, else none.

The module parameters and the cgroup file are read under ``[tracker]
sysfs_root``.
"""
from collections.abc import Sequence
import logging
from typing import NamedTuple
import xml.etree.ElementTree as ET

from oslo_config import cfg
from oslo_utils import strutils

from tracker.drivers.host import sysfs

LOG = logging.getLogger(__name__)

MIN_QEMU_SEV_ES = (8, 0, 0)


class Features(NamedTuple):
    """The memory-encryption part of one domain capabilities answer."""
    sev: bool = False
    max_guests: int = 0
    max_es_guests: int = 0
    sectypes: tuple[str, ...] = ()     # launchSecurity's, when supported
    tdx: bool = False


def _supported(element: ET.Element | None) -> bool:
    return element is not None and element.get('supported') == 'yes'


def _count(element: ET.Element | None, tag: str) -> int:
    text = element.findtext(tag) if element is not None else None
    try:
        return int(text) if text else 0
    except ValueError:
        LOG.warning('libvirt reports <%s> %r: counted 0', tag, text)
        return 0


def parse_features(domain_caps: ET.Element) -> Features:
    """``<features>`` of a parsed ``<domainCapabilities>``."""
    sev = domain_caps.find('features/sev')
    launch = domain_caps.find('features/launchSecurity')
    return Features(
        sev=_supported(sev),
        max_guests=_count(sev, 'maxGuests') if _supported(sev) else 0,
        max_es_guests=_count(sev, 'maxESGuests') if _supported(sev) else 0,
        sectypes=(tuple(v.text or '' for v in launch.findall(
            "enum[@name='sectype']/value")) if launch is not None
            and _supported(launch) else ()),
        tdx=_supported(domain_caps.find('features/tdx')))


def kernel_allows(paths: sysfs.HostPaths, parameter: str) -> bool:
    """The kvm_amd module's ``parameter`` (sev, sev_es, sev_snp) is on."""
    text = sysfs.read(paths.sys('module', 'kvm_amd', 'parameters', parameter), '')
    return strutils.bool_from_string(text)


def cgroup_tdx_capacity(paths: sysfs.HostPaths) -> int | None:
    """The misc cgroup's TDX key count; None where it does not say."""
    text = sysfs.read(paths.sys('fs', 'cgroup', 'misc.capacity'), '')
    for line in text.splitlines():
        name, _, value = line.partition(' ')
        if name == 'tdx':
            try:
                return int(value.strip())
            except ValueError:
                LOG.warning('misc.capacity: tdx %r is not a number', value)
                return None
    return None


def contexts(machines: Sequence[Features], arch: str, qemu: tuple[int, int, int],
             paths: sysfs.HostPaths, conf: cfg.ConfigOpts) -> dict[str, int]:
    """{model: contexts} for the models the host supports, in nova's order
    (a model with no context is left out: nova reports no child for it).
    ``machines``: the host architecture's domain capabilities answers."""
    if arch != 'x86_64':
        return {}
    found: dict[str, int] = {}
    sev = next((m for m in machines if m.sev), None)
    if sev is not None and kernel_allows(paths, 'sev'):
        found['amd_sev'] = sev.max_guests
        snp_kernel = kernel_allows(paths, 'sev_snp')
        if (kernel_allows(paths, 'sev_es') and qemu >= MIN_QEMU_SEV_ES
                and not snp_kernel):
            found['amd_sev_es'] = sev.max_es_guests
        if snp_kernel and any('sev-snp' in m.sectypes for m in machines):
            found['amd_sev_snp'] = sev.max_es_guests
    if conf.libvirt.cpu_mode == 'host-passthrough' and any(m.tdx for m in machines):
        configured: int | None = conf.libvirt.num_intel_tdx_guests
        found['intel_tdx'] = (configured if configured is not None
                              else cgroup_tdx_capacity(paths) or 0)
    return {model: n for model, n in found.items() if n > 0}
