"""Operator actions on one device's provider (``tracker-manage device``).

A one-time-use device (HW_PCI_ONE_TIME_USE) stays reserved after its
instance goes, as nova leaves it: the agent never lowers it. Once the
operator has cleaned the device, ``clean`` lowers it, so the scheduler
can hand it out again; the agent keeps it lowered until an instance uses
it anew.
"""
from tracker.placement import errors
from tracker.placement import http as http_mod
from tracker.placement import resources


class DeviceError(errors.PlacementError):
    """The device's provider cannot be cleaned (absent, still in use)."""


def clean(http: http_mod.Transport, uuid: str, name: str) -> list[str]:
    """Lower to 0 each reserved class of the provider held at total; the
    classes lowered (none: it was not reserved). Refused while in use."""
    provider = resources.fetch_provider(http, uuid)
    if provider is None:
        raise DeviceError('no provider %s (%s) in placement' % (name, uuid))
    used = resources.usages(http, uuid)
    if used:
        raise DeviceError('%s is still in use (%s): clean it once its '
                          'instance is gone' % (name, ', '.join(
                              '%s=%d' % kv for kv in sorted(used.items()))))
    lowered = [rc for rc, record in sorted(provider.inventories.items())
               if record['total'] and record['reserved'] == record['total']]
    if not lowered:
        return []
    inventories = {rc: dict(record, reserved=0 if rc in lowered else record['reserved'])
                   for rc, record in provider.inventories.items()}
    resp = resources.put_inventories(http, uuid, provider.generation, inventories)
    if not resp.ok:
        raise resources.unexpected(resp, 'lowering the reserved inventory of', uuid)
    return lowered
