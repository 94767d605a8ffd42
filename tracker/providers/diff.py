"""What it takes to turn the known tree into the desired one.

``diff(desired, known)`` answers three questions, in the order the writes
must happen: which providers to create (parents first), what exactly
changed on the ones both trees have, and which to delete (children first).
Generations are not compared: they are placement's bookkeeping, not
something the host wants.
"""
from collections.abc import Iterable
import dataclasses
from typing import Any

from tracker.providers import tree as tree_mod
from tracker.providers.provider import INVENTORY_DEFAULTS
from tracker.providers.provider import Provider

# {resource class: {field: (desired value, known value)}}
InventoryChanges = dict[str, dict[str, tuple[Any, Any]]]

# The parts of a provider a change can touch, in the order they are written.
FIELDS = ('name', 'parent', 'inventories', 'traits', 'aggregates')


@dataclasses.dataclass
class ProviderChange:
    """One provider both trees have, and what differs."""
    desired: Provider
    known: Provider
    fields: tuple[str, ...]  # subset of FIELDS

    @property
    def uuid(self) -> str:
        return self.desired.uuid

    def removed_resource_classes(self) -> set[str]:
        """Resource classes the known provider has and the desired lacks."""
        return set(self.known.inventories) - set(self.desired.inventories)


@dataclasses.dataclass
class TreeDiff:
    create: list[Provider] = dataclasses.field(default_factory=list)  # parents first
    update: list[ProviderChange] = dataclasses.field(default_factory=list)
    delete: list[Provider] = dataclasses.field(default_factory=list)  # children first

    def __bool__(self) -> bool:
        return bool(self.create or self.update or self.delete)


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a or 0) - float(b or 0)) > 1e-9
    return bool(a != b)


def inventory_changes(desired: Provider, known: Provider) -> InventoryChanges:
    """{resource class: {field: (desired value, known value)}} for the
    classes both providers have whose records differ. Fields are compared
    with placement's defaults filled in and ratios as floats, so a record
    written and read back is unchanged: the one rule the sync and the audit
    both use."""
    changes: InventoryChanges = {}
    for rc in set(desired.inventories) & set(known.inventories):
        want, have = desired.inventories[rc], known.inventories[rc]
        fields = {field: (want.get(field, default), have.get(field, default))
                  for field, default in INVENTORY_DEFAULTS.items()
                  if _differs(want.get(field, default), have.get(field, default))}
        if fields:
            changes[rc] = fields
    return changes


def inventories_differ(desired: Provider, known: Provider) -> bool:
    """Whether placement must be sent ``desired``'s inventories."""
    return (set(desired.inventories) != set(known.inventories)
            or bool(inventory_changes(desired, known)))


def changed_fields(desired: Provider, known: Provider) -> tuple[str, ...]:
    """The FIELDS in which two providers with the same uuid differ."""
    fields = []
    if desired.name != known.name:
        fields.append('name')
    if desired.parent_uuid != known.parent_uuid:
        fields.append('parent')
    if inventories_differ(desired, known):
        fields.append('inventories')
    if set(desired.traits) != set(known.traits):
        fields.append('traits')
    if set(desired.aggregates) != set(known.aggregates):
        fields.append('aggregates')
    return tuple(fields)


def diff(desired: 'tree_mod.ProviderTree | Iterable[Provider]',
         known: 'tree_mod.ProviderTree | Iterable[Provider]') -> TreeDiff:
    """A TreeDiff from ``known`` to ``desired`` (trees or provider lists)."""
    desired = tree_mod.as_tree(desired)
    known = tree_mod.as_tree(known)
    result = TreeDiff()
    known_uuids = known.uuids()
    for provider in desired.providers():
        if provider.uuid not in known_uuids:
            result.create.append(provider)
            continue
        old = known.get(provider.uuid)
        fields = changed_fields(provider, old)
        if fields:
            result.update.append(ProviderChange(provider, old, fields))
    desired_uuids = desired.uuids()
    result.delete = [p for p in reversed(known.providers())
                     if p.uuid not in desired_uuids]
    return result
