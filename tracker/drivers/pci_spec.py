"""The operator's choice of PCI devices to report: [pci] device_spec.

Each option value is a JSON object, or a list of them, in the spirit of
nova's [pci] device_spec::

    {"vendor_id": "8086", "product_id": "10ed",
     "address": "0000:81:*.*", "resource_class": "SRIOV_NET_VF",
     "traits": "CUSTOM_X,HW_NIC_SRIOV", "physical_network": "physnet1"}

A device is reported when a spec matches it; the first matching spec
decides its resource class and traits, as nova 34 reads them. A spec with
physical_network selects devices for neutron's SR-IOV ports, which nova
keeps out of placement: so does the agent. Names that are not standard
become CUSTOM_ ones.
"""
from collections.abc import Iterable
import fnmatch
import json
import re
from typing import Any

import os_resource_classes
import os_traits

from tracker.drivers.errors import DiscoveryError
from tracker.drivers.facts import PciDevice

_MATCH_KEYS = ('vendor_id', 'product_id', 'address')
# managed says how nova attaches a device: accepted so a nova device_spec
# can be reused as is, but nothing to report. remote_managed VFs make the
# host COMPUTE_REMOTE_MANAGED_PORTS.
_KNOWN_KEYS = set(_MATCH_KEYS) | {'resource_class', 'traits',
                                  'physical_network', 'managed',
                                  'remote_managed', 'one_time_use',
                                  'live_migratable'}


def _flag(entry: dict[str, Any], key: str) -> bool:
    """A yes/no key, as nova reads it ('true', 'yes', true...)."""
    value = entry.get(key, False)
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('true', 'yes', '1', 'on'):
        return True
    if text in ('false', 'no', '0', 'off'):
        return False
    raise DiscoveryError('[pci] device_spec %s must be true or false, not %r'
                         % (key, value))
_HEX4 = re.compile(r'^(\*|[0-9a-f]{1,4})$')


_ADDRESS = re.compile(r'^(?:([0-9a-f]{1,4}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$')


def canonical_address(text: str) -> str | None:
    """'81:0.1' or '0000:81:00.1' -> '0000:81:00.1'; None if not one."""
    match = _ADDRESS.match(text.strip().lower())
    if match is None:
        return None
    domain, bus, slot, function = match.groups()
    return '%04x:%02x:%02x.%x' % (int(domain or '0', 16), int(bus, 16),
                                  int(slot, 16), int(function, 16))


def custom_name(name: object) -> str:
    """``name`` as a CUSTOM_ name placement accepts (upper, [A-Z0-9_])."""
    norm = re.sub(r'[^A-Z0-9_]', '_', str(name).strip().upper())
    return norm if norm.startswith('CUSTOM_') else 'CUSTOM_' + norm


def resource_class(name: str) -> str:
    if name.upper() in os_resource_classes.STANDARDS:
        return name.upper()
    return custom_name(name)


def trait(name: str) -> str:
    if name.upper() in os_traits.get_traits():
        return name.upper()
    return custom_name(name)


def _address_pattern(value: object) -> str:
    """An address glob from a string or a {domain,bus,slot,function} dict."""
    if isinstance(value, str):
        pattern = value.strip().lower()
        if pattern.count(':') == 1:        # bus:slot.func, any domain
            pattern = '*:' + pattern
        return pattern
    if isinstance(value, dict):
        unknown = set(value) - {'domain', 'bus', 'slot', 'function'}
        if unknown:
            raise DiscoveryError('[pci] device_spec address has unknown keys '
                                 '%s' % ', '.join(sorted(unknown)))
        parts: list[str] = []
        for key, width in (('domain', 4), ('bus', 2), ('slot', 2),
                           ('function', 1)):
            part = str(value.get(key, '*')).lower()
            if part.startswith('0x'):
                part = part[2:]
            parts.append(part if part == '*' else part.zfill(width))
        return '%s:%s:%s.%s' % tuple(parts)
    raise DiscoveryError('[pci] device_spec address must be a string or an '
                         'object, not %r' % (value,))


class DeviceSpec:
    """One parsed spec entry."""

    def __init__(self, entry: object) -> None:
        if not isinstance(entry, dict):
            raise DiscoveryError('[pci] device_spec entries must be JSON '
                                 'objects, not %r' % (entry,))
        unknown = set(entry) - _KNOWN_KEYS
        if unknown:
            raise DiscoveryError('[pci] device_spec has unknown keys %s'
                                 % ', '.join(sorted(unknown)))
        self.vendor_id = self._hex_id(entry, 'vendor_id')
        self.product_id = self._hex_id(entry, 'product_id')
        self.address = (_address_pattern(entry['address'])
                        if 'address' in entry else '*')
        rc = entry.get('resource_class')
        self.resource_class: str | None = resource_class(rc) if rc else None
        traits = entry.get('traits', '')
        if isinstance(traits, str):
            traits = [t for t in traits.split(',') if t.strip()]
        self.traits = {trait(t) for t in traits}
        self.remote_managed = _flag(entry, 'remote_managed')
        if _flag(entry, 'live_migratable'):
            self.traits.add('HW_PCI_LIVE_MIGRATABLE')
        # a whole device only: nova marks its provider HW_PCI_ONE_TIME_USE
        self.one_time_use = _flag(entry, 'one_time_use')
        self.physical_network: str | None = entry.get('physical_network') or None

    @staticmethod
    def _hex_id(entry: dict[str, Any], key: str) -> str:
        value = str(entry.get(key, '*')).strip().lower()
        if value.startswith('0x'):
            value = value[2:]
        if not _HEX4.match(value):
            raise DiscoveryError('[pci] device_spec %s must be up to 4 hex '
                                 'digits or "*", not %r' % (key, entry[key]))
        return value if value == '*' else value.zfill(4)

    def matches(self, device: PciDevice) -> bool:
        return ((self.vendor_id in ('*', device.vendor_id))
                and (self.product_id in ('*', device.product_id))
                and fnmatch.fnmatchcase(device.address, self.address))


class DeviceSpecList:
    """Every [pci] device_spec entry, in order."""

    def __init__(self, values: Iterable[str]) -> None:
        self.specs: list[DeviceSpec] = []
        for value in values:
            try:
                parsed = json.loads(value)
            except ValueError as exc:
                raise DiscoveryError('[pci] device_spec is not valid JSON: '
                                     '%s' % exc) from None
            for entry in parsed if isinstance(parsed, list) else [parsed]:
                self.specs.append(DeviceSpec(entry))

    def match(self, device: PciDevice) -> DeviceSpec | None:
        """The first spec matching ``device``, or None."""
        return next((s for s in self.specs if s.matches(device)), None)
