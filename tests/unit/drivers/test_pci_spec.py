"""[pci] device_spec: which devices match, with which class and traits."""
import json

import pytest

from tracker.drivers.errors import DiscoveryError
from tracker.drivers.facts import PciDevice
from tracker.drivers.pci_spec import DeviceSpecList
from tracker.drivers.pci_spec import canonical_address

VF = PciDevice('0000:82:01.3', '8086', '1515', '020000',
               physfn='0000:81:00.0')
NVME = PciDevice('0000:05:00.0', '144d', 'a808', '010802')


def specs(*entries):
    return DeviceSpecList([json.dumps(e) for e in entries])


@pytest.mark.parametrize('entry, matches_vf', [
    ({}, True),
    ({'vendor_id': '8086'}, True),
    ({'vendor_id': '0x8086', 'product_id': '1515'}, True),
    ({'vendor_id': '8086', 'product_id': '1528'}, False),
    ({'vendor_id': '*', 'product_id': '*'}, True),
    ({'address': '0000:82:*.*'}, True),
    ({'address': '82:01.3'}, True),            # any domain
    ({'address': '0000:82:00.*'}, False),
    ({'address': {'bus': '0x82', 'slot': '1'}}, True),
    ({'address': {'domain': '0', 'bus': '82', 'slot': '01',
                  'function': '2'}}, False),
])
def test_matching(entry, matches_vf):
    assert (specs(entry).match(VF) is not None) == matches_vf


def test_first_matching_spec_wins():
    spec_list = specs({'vendor_id': '144d', 'resource_class': 'nvme'},
                      {'vendor_id': '8086', 'resource_class': 'CUSTOM_VF'},
                      {'resource_class': 'PCI_DEVICE'})
    assert spec_list.match(NVME).resource_class == 'CUSTOM_NVME'
    assert spec_list.match(VF).resource_class == 'CUSTOM_VF'


def test_names_are_normalized():
    spec = specs({'resource_class': 'sriov_net_vf',
                  'traits': 'hw_nic_sriov, fast-lane ,CUSTOM_GOLD',
                  'physical_network': 'physnet-1'}).match(VF)
    assert spec.resource_class == 'SRIOV_NET_VF'
    assert spec.traits == {'HW_NIC_SRIOV', 'CUSTOM_FAST_LANE', 'CUSTOM_GOLD'}
    # neutron's device: nova (and the agent) keep it out of placement
    assert spec.physical_network == 'physnet-1'


def test_traits_as_a_list_and_nova_only_keys():
    spec = specs({'traits': ['gold'], 'managed': 'yes',
                  'remote_managed': 'false'}).match(VF)
    assert spec.traits == {'CUSTOM_GOLD'}
    assert spec.resource_class is None


@pytest.mark.parametrize('entry, traits, remote, one_time_use', [
    ({'one_time_use': 'true'}, set(), False, True),
    ({'live_migratable': 'yes'}, {'HW_PCI_LIVE_MIGRATABLE'}, False, False),
    ({'live_migratable': False, 'one_time_use': 'no'}, set(), False, False),
    ({'remote_managed': 'true'}, set(), True, False),
])
def test_device_life_flags(entry, traits, remote, one_time_use):
    spec = specs(entry).match(NVME)
    assert (spec.traits, spec.remote_managed, spec.one_time_use) == \
        (traits, remote, one_time_use)


def test_a_value_may_hold_a_list():
    spec_list = DeviceSpecList(['[{"vendor_id": "144d"}, '
                                '{"vendor_id": "8086"}]'])
    assert len(spec_list.specs) == 2
    assert spec_list.match(VF) is spec_list.specs[1]


@pytest.mark.parametrize('value, message', [
    ('{"devname": "eth0"}', 'unknown keys devname'),
    ('{"address": {"bus": "82", "port": 1}}', 'address has unknown keys port'),
    ('{"product_id": "12345"}', 'product_id must be up to 4 hex digits'),
    ('[1]', 'must be JSON objects'),
    ('{"one_time_use": "maybe"}', 'one_time_use must be true or false'),
])
def test_bad_specs(value, message):
    with pytest.raises(DiscoveryError, match=message):
        DeviceSpecList([value])


@pytest.mark.parametrize('text, address', [
    ('0000:81:00.1', '0000:81:00.1'), ('81:0.1', '0000:81:00.1'),
    (' 0000:AF:1F.7 ', '0000:af:1f.7'), ('81:00.8', None), ('eth0', None),
    ('0000:81:00', None)])
def test_canonical_address(text, address):
    assert canonical_address(text) == address
