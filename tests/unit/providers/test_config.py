"""Operator provider config files: load, validate, apply."""
import textwrap

import pytest

from tracker.providers import config
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.tree import ProviderTree

GOOD = """
meta:
  schema_version: '1.0'
providers:
  - identification:
      uuid: $COMPUTE_NODE
    inventories:
      additional:
        - CUSTOM_LICENSE: {total: 4, reserved: 1}
        - CUSTOM_PMEM_GB: {total: 32, allocation_ratio: 4.0}
    traits:
      additional: [CUSTOM_GOLD, COMPUTE_STATUS_DISABLED]
  - identification:
      name: cn1_gpu0
    traits:
      additional: [CUSTOM_FAST]
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def tree():
    return ProviderTree([
        Provider('r', 'cn1', inventories={'VCPU': inventory(8)}, traits={'HW_CPU_X86_AVX'}),
        Provider('g0', 'cn1_gpu0', 'r')])


def test_overlays_add_inventories_and_traits(tmp_path):
    write(tmp_path, 'a.yaml', GOOD)
    t = tree()
    unmatched = config.apply(config.load_directory(str(tmp_path)), t, 'r')
    assert unmatched == []
    root = t.get('r')
    assert root.inventories['CUSTOM_LICENSE'] == inventory(4, reserved=1)
    assert root.inventories['CUSTOM_PMEM_GB'] == inventory(32, allocation_ratio=4.0)
    assert root.traits == {'HW_CPU_X86_AVX', 'CUSTOM_GOLD', 'COMPUTE_STATUS_DISABLED'}
    assert t.get('g0').traits == {'CUSTOM_FAST'}


def test_unknown_provider_is_reported_not_fatal(tmp_path):
    write(tmp_path, 'a.yaml', GOOD.replace('cn1_gpu0', 'cn1_gpu9'))
    unmatched = config.apply(config.load_directory(str(tmp_path)), tree(), 'r')
    assert [o.name for o in unmatched] == ['cn1_gpu9']


@pytest.mark.parametrize('text, field, message', [
    (GOOD.replace('total: 4', 'total: -4'),
     'providers[0].inventories.additional[0].CUSTOM_LICENSE.total', 'minimum'),
    (GOOD.replace('CUSTOM_GOLD', 'gold'),
     'providers[0].traits.additional[0]', 'does not match'),
    (GOOD.replace("'1.0'", "'2.0'"), 'meta.schema_version', 'unsupported version'),
    (GOOD.replace('meta:', 'metadata:'), '', "'meta' is a required property"),
    (GOOD.replace('      name: cn1_gpu0', '      name: cn1_gpu0\n      uuid: x'),
     'providers[1].identification', 'too many properties'),
    ('providers: [unclosed', None, 'not valid YAML'),
    # what placement would refuse (nova refuses them too)
    (GOOD.replace('CUSTOM_LICENSE', 'FOO_BAR'),
     'providers[0].inventories.additional[0]', "'FOO_BAR' is not a custom resource class"),
    (GOOD.replace('CUSTOM_LICENSE', 'VCPU'),
     'providers[0].inventories.additional[0]', "'VCPU' is not a custom resource class"),
    (GOOD.replace('COMPUTE_STATUS_DISABLED', 'HW_NOT_A_TRAIT'),
     'providers[0].traits.additional[1]', "'HW_NOT_A_TRAIT' is neither a custom trait"),
])
def test_bad_file_names_file_and_field(tmp_path, text, field, message):
    path = write(tmp_path, 'bad.yaml', text)
    with pytest.raises(config.ProviderConfigError) as e:
        config.load_directory(str(tmp_path))
    assert e.value.path == path
    assert e.value.field == (field or None)
    assert message in str(e.value)
    assert str(e.value).startswith(path + ': ')


def test_same_provider_in_two_files_is_an_error(tmp_path):
    write(tmp_path, 'a.yaml', GOOD)
    write(tmp_path, 'b.yml', GOOD)
    with pytest.raises(config.ProviderConfigError, match='already configured in .*a.yaml'):
        config.load_directory(str(tmp_path))


def test_source_without_a_good_configuration_raises(tmp_path):
    """A fresh process has no last good configuration: applying none would
    remove what the operator configured, so it is an error for the caller."""
    write(tmp_path, 'a.yaml', GOOD + GOOD[GOOD.index('  - identification'):])
    source = config.ProviderConfigSource(str(tmp_path))
    with pytest.raises(config.ProviderConfigError, match='already configured'):
        source.load()
    assert source.error is not None


def test_source_keeps_last_good_configuration(tmp_path):
    source = config.ProviderConfigSource(str(tmp_path))
    assert source.load() == []          # no files yet: nothing to add
    write(tmp_path, 'a.yaml', GOOD)
    good = source.load()
    assert len(good) == 2 and source.error is None
    write(tmp_path, 'a.yaml', GOOD.replace('total: 4', 'total: lots'))
    assert source.load() == good
    assert 'a.yaml: providers[0].inventories' in str(source.error)
    write(tmp_path, 'a.yaml', GOOD.replace('total: 4', 'total: 5'))
    assert source.load()[0].inventories['CUSTOM_LICENSE']['total'] == 5
    assert source.error is None
