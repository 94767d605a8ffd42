"""providers.diff: the one "has this changed?" rule, which the sync and the
audit share."""
import pytest

from tracker import audit
from tracker.providers import diff
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory

ROOT = '11111111-1111-4111-8111-111111111111'


def pair(desired_vcpu, known_vcpu):
    return (Provider(ROOT, 'cn', inventories={'VCPU': desired_vcpu}),
            Provider(ROOT, 'cn', inventories={'VCPU': known_vcpu}))


@pytest.mark.parametrize('desired,known', [
    # a ratio read back from a database with float noise
    (inventory(16, allocation_ratio=16.0), inventory(16, allocation_ratio=16.000000000001)),
    # an integer ratio as placement may render it
    (inventory(16, allocation_ratio=2.0), dict(inventory(16), allocation_ratio=2)),
    # a record without the fields placement fills in with their defaults
    ({'total': 16, 'max_unit': 16}, inventory(16)),
])
def test_the_same_record_is_unchanged_for_the_sync_and_the_audit(desired, known):
    want, have = pair(desired, known)
    assert diff.inventory_changes(want, have) == {}
    assert diff.changed_fields(want, have) == ()
    assert audit.provider_drift([want], [have]) == []


@pytest.mark.parametrize('desired,known,field', [
    (inventory(16, allocation_ratio=4.0), inventory(16, allocation_ratio=2.0),
     'allocation_ratio'),
    (inventory(16, reserved=2), inventory(16), 'reserved'),
    (inventory(32), inventory(32, max_unit=16), 'max_unit'),
])
def test_a_changed_record_is_changed_for_both(desired, known, field):
    want, have = pair(desired, known)
    assert list(diff.inventory_changes(want, have)['VCPU']) == [field]
    assert diff.changed_fields(want, have) == ('inventories',)
    [drift] = audit.provider_drift([want], [have])
    assert drift.kind == 'inventory_differs'
    assert list(drift.detail['fields']) == [field]
