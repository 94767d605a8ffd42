"""What one resource provider looks like, to the tracker.

A ``Provider`` is a plain value: the drivers build them, the ProviderTree
holds them, the report client compares and writes them. It knows nothing of
HTTP or of hardware.
"""
import dataclasses
import uuid as uuidlib

# Every uuid the tracker derives (compute nodes, NUMA cells, devices) lives
# under this namespace, so the same host and device always get the same uuid
# across reruns and restarts: no duplicate providers, ever.
TRACKER_NAMESPACE = uuidlib.UUID('6f2c7d4e-1b55-4d59-9c8e-3f0a2b7c9e10')

# The inventory fields placement knows, with placement's defaults.
INVENTORY_DEFAULTS = {
    'total': 0,
    'reserved': 0,
    'min_unit': 1,
    'max_unit': None,      # None: defaults to total
    'step_size': 1,
    'allocation_ratio': 1.0,
}


def stable_uuid(*parts):
    """A deterministic uuid for a provider named by ``parts``."""
    return str(uuidlib.uuid5(TRACKER_NAMESPACE, '/'.join(str(p) for p in parts)))


def inventory(total, reserved=0, min_unit=1, max_unit=None, step_size=1,
              allocation_ratio=1.0):
    """One inventory record, complete, in placement's wire form."""
    return {
        'total': int(total),
        'reserved': int(reserved),
        'min_unit': int(min_unit),
        'max_unit': int(total if max_unit is None else max_unit),
        'step_size': int(step_size),
        'allocation_ratio': float(allocation_ratio),
    }


@dataclasses.dataclass
class Provider:
    """A resource provider as the host wants it (or as placement has it).

    ``inventories`` maps a resource class to a complete inventory record
    (see ``inventory()``); ``traits`` and ``aggregates`` are sets of names
    and uuids. ``generation`` is None until placement has told us one.
    """
    uuid: str
    name: str
    parent_uuid: str | None = None
    inventories: dict = dataclasses.field(default_factory=dict)
    traits: set = dataclasses.field(default_factory=set)
    aggregates: set = dataclasses.field(default_factory=set)
    generation: int | None = None

    def copy(self):
        return dataclasses.replace(
            self,
            inventories={rc: dict(rec) for rc, rec in self.inventories.items()},
            traits=set(self.traits),
            aggregates=set(self.aggregates))
