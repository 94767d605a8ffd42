"""What it takes to turn the known tree into the desired one.

``diff(desired, known)`` answers three questions, in the order the writes
must happen: which providers to create (parents first), what exactly
changed on the ones both trees have, and which to delete (children first).
Generations are not compared: they are placement's bookkeeping, not
something the host wants.
"""
import dataclasses

from tracker.providers import tree as tree_mod

# The parts of a provider a change can touch, in the order they are written.
FIELDS = ('name', 'parent', 'inventories', 'traits', 'aggregates')


@dataclasses.dataclass
class ProviderChange:
    """One provider both trees have, and what differs."""
    desired: object          # Provider
    known: object            # Provider
    fields: tuple            # subset of FIELDS

    @property
    def uuid(self):
        return self.desired.uuid

    def removed_resource_classes(self):
        """Resource classes the known provider has and the desired lacks."""
        return set(self.known.inventories) - set(self.desired.inventories)


@dataclasses.dataclass
class TreeDiff:
    create: list = dataclasses.field(default_factory=list)   # Providers, parents first
    update: list = dataclasses.field(default_factory=list)   # ProviderChanges
    delete: list = dataclasses.field(default_factory=list)   # Providers, children first

    def __bool__(self):
        return bool(self.create or self.update or self.delete)


def changed_fields(desired, known):
    """The FIELDS in which two providers with the same uuid differ."""
    fields = []
    if desired.name != known.name:
        fields.append('name')
    if desired.parent_uuid != known.parent_uuid:
        fields.append('parent')
    if desired.inventories != known.inventories:
        fields.append('inventories')
    if set(desired.traits) != set(known.traits):
        fields.append('traits')
    if set(desired.aggregates) != set(known.aggregates):
        fields.append('aggregates')
    return tuple(fields)


def diff(desired, known):
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
