"""What one resource provider looks like, to the tracker.

A ``Provider`` is a plain value: the drivers build them, the ProviderTree
holds them, the report client compares and writes them. It knows nothing of
HTTP or of hardware.
"""
from collections.abc import Callable
import dataclasses
from typing import Any
import uuid as uuidlib

# One inventory record in placement's wire form: total, reserved, min_unit,
# max_unit, step_size (ints) and allocation_ratio (a float).
Inventory = dict[str, Any]

# Every uuid the tracker derives (compute nodes, NUMA cells, devices) lives
# under this namespace, so the same host and device always get the same uuid
# across reruns and restarts: no duplicate providers, ever.
TRACKER_NAMESPACE = uuidlib.UUID('6f2c7d4e-1b55-4d59-9c8e-3f0a2b7c9e10')

# The inventory fields placement knows, with placement's defaults.
INVENTORY_DEFAULTS: dict[str, Any] = {
    'total': 0,
    'reserved': 0,
    'min_unit': 1,
    'max_unit': None,      # None: defaults to total
    'step_size': 1,
    'allocation_ratio': 1.0,
}


def stable_uuid(*parts: object) -> str:
    """A deterministic uuid for a provider named by ``parts``."""
    return str(uuidlib.uuid5(TRACKER_NAMESPACE, '/'.join(str(p) for p in parts)))


def capacity(record: Inventory) -> int:
    """What placement lets allocations take from one inventory record
    (a field it lacks at placement's default): the one capacity rule of
    the agent (layout, reshape, the usage listing)."""
    def field(name: str) -> Any:
        return record.get(name, INVENTORY_DEFAULTS[name])
    return int((field('total') - field('reserved')) * field('allocation_ratio'))


def inventory(total: int, reserved: int = 0, min_unit: int = 1, max_unit: int | None = None,
              step_size: int = 1, allocation_ratio: float = 1.0) -> Inventory:
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

    ``placement_ratios`` names the classes whose allocation ratio is not
    the host's to say (nova's rule when no ratio is configured): placement's
    ratio is kept when it has the class, and the one in ``inventories`` is
    only for a new inventory. Its value says whether max_unit follows the
    capacity (see ``keep_placement_ratios``).

    ``one_time_use`` names the classes of a one-time-use device (nova's
    HW_PCI_ONE_TIME_USE): once placement holds their reserved at total the
    agent keeps it (only the operator's cleaning lowers it, see
    ``keep_one_time_use``).

    ``retired_traits`` must go from the provider whoever wrote them (traits
    others wrote are otherwise kept): nova's pre-2025.2 HW_CPU_X86_AMD_SEV
    on the compute node, which its 2025.2 reshape takes off.
    """
    uuid: str
    name: str
    parent_uuid: str | None = None
    inventories: dict[str, Inventory] = dataclasses.field(default_factory=dict)
    traits: set[str] = dataclasses.field(default_factory=set)
    aggregates: set[str] = dataclasses.field(default_factory=set)
    generation: int | None = None
    placement_ratios: dict[str, bool] = dataclasses.field(default_factory=dict,
                                                          compare=False)
    one_time_use: set[str] = dataclasses.field(default_factory=set, compare=False)
    retired_traits: set[str] = dataclasses.field(default_factory=set, compare=False)

    def copy(self) -> 'Provider':
        return dataclasses.replace(
            self,
            inventories={rc: dict(rec) for rc, rec in self.inventories.items()},
            traits=set(self.traits),
            aggregates=set(self.aggregates),
            placement_ratios=dict(self.placement_ratios),
            one_time_use=set(self.one_time_use),
            retired_traits=set(self.retired_traits))


def keep_placement_ratios(desired: Provider, held: Provider | None) -> Provider:
    """``desired`` with the allocation ratios placement's ``held`` provider
    has for the classes of ``desired.placement_ratios``."""
    if not desired.placement_ratios or held is None:
        return desired
    desired = desired.copy()
    for rc, fit in desired.placement_ratios.items():
        record, had = desired.inventories.get(rc), held.inventories.get(rc)
        if record is None or had is None:
            continue
        record['allocation_ratio'] = float(had['allocation_ratio'])
        if fit:
            record['max_unit'] = max(record['total'], capacity(record))
    return desired


def keep_one_time_use(desired: Provider, held: Provider | None,
                      used: Callable[[], dict[str, int]]) -> Provider:
    """``desired`` as nova treats a one-time-use device's inventory:
    reserved = total once it is allocated, never lowered by the reporter.

    The layout raises reserved to total while an instance uses the device;
    that raise is written only once placement holds the allocation (else
    the allocation itself, written after the providers, would no longer
    fit): ``used`` reads placement's usage, asked only while the two
    differ. A reserved placement holds at total is kept."""
    if not desired.one_time_use or held is None:
        return desired
    desired = desired.copy()
    for rc in desired.one_time_use:
        record, had = desired.inventories.get(rc), held.inventories.get(rc)
        if record is None or had is None or had.get('reserved') == record['reserved']:
            continue
        if had.get('reserved') == had.get('total') == record['total']:
            record['reserved'] = record['total']          # never lowered
        elif record['reserved'] == record['total'] and not used().get(rc):
            record['reserved'] = had.get('reserved', 0)   # not yet allocated
    return desired
