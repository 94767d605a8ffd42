"""Reshape: moving allocated inventory between providers of one tree.

When the host's tree changes shape (VGPU inventory moves from the compute
node to one child provider per GPU, say) the allocations against the old
inventory must move in the same transaction as the inventory itself:
placement's POST /reshaper. So must allocations that change class on one
provider as it gains that class (a pinned guest's VCPU becoming PCPU when
dedicated CPUs are configured). This module only plans; it never sends.
"""
from collections.abc import Sequence
import dataclasses
from typing import Any

from tracker.placement import allocations as alloc_mod
from tracker.placement import errors
from tracker.placement.known import ConsumerRecord
from tracker.providers import diff as diff_mod
from tracker.providers import tree as tree_mod
from tracker.providers.provider import capacity


@dataclasses.dataclass
class Move:
    """Resource class ``rc`` leaves provider ``source`` for ``targets``."""
    source: str
    rc: str
    targets: list[str]     # provider uuids gaining the class, in tree order


def candidate_moves(tree_diff: diff_mod.TreeDiff, desired: tree_mod.ProviderTree) -> list[Move]:
    """Classes some provider loses while another in the tree gains them.

    Only these can need a reshape; whether they do depends on usage, which
    the caller asks placement about (one request per losing provider).
    """
    gained: dict[str, list[str]] = {}
    for provider in tree_diff.create:
        for rc in provider.inventories:
            gained.setdefault(rc, []).append(provider.uuid)
    for change in tree_diff.update:
        for rc, record in change.desired.inventories.items():
            before = change.known.inventories.get(rc)
            if before is None or capacity(record) > capacity(before):
                gained.setdefault(rc, []).append(change.uuid)
    lost = [(c.uuid, rc) for c in tree_diff.update for rc in c.removed_resource_classes()]
    lost += [(p.uuid, rc) for p in tree_diff.delete for rc in p.inventories]
    order = {p.uuid: i for i, p in enumerate(desired.providers())}
    return [Move(source, rc, sorted(gained[rc], key=lambda uuid: order[uuid]))
            for source, rc in lost if rc in gained]


def plan(moves: list[Move], desired: tree_mod.ProviderTree, known: tree_mod.ProviderTree,
         consumers: dict[str, ConsumerRecord],
         instances: Sequence[alloc_mod.Instance] | None = None,
         retyped: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """The POST /reshaper body for ``moves`` and ``retyped``.

    ``consumers``: {consumer: full allocation record as GET /allocations
    gives it (allocations, project_id, user_id, consumer_generation)} for
    every consumer holding a moved class or retyped. ``instances``
    (optional) says where the host sees each instance's resources now;
    otherwise amounts go to the first target with room. ``retyped``:
    {consumer: {provider}} whose part on those providers becomes what
    ``instances`` say.
    """
    retyped = retyped or {}
    wanted = {i.uuid: i.allocations for i in instances or ()}
    targets = {uuid for m in moves for uuid in m.targets}
    # room on a target: all of a new inventory, only the growth of one that
    # was there (its own consumers keep what they hold)
    free: dict[tuple[str, str], int] = {}
    for move in moves:
        for uuid in move.targets:
            room = capacity(desired.get(uuid).inventories[move.rc])
            old = known.find(uuid)
            if old is not None and move.rc in old.inventories:
                room -= capacity(old.inventories[move.rc])
            free[(uuid, move.rc)] = room
    allocations: dict[str, dict[str, Any]] = {}
    for consumer, record in sorted(consumers.items()):
        new = {rp: dict(res) for rp, res in
               alloc_mod.normalize(record['allocations']).items()}
        for move in moves:
            amount = new.get(move.source, {}).pop(move.rc, 0)
            if not amount:
                continue
            for rp, amounts in _place(consumer, move, amount, wanted, free).items():
                new.setdefault(rp, {})[move.rc] = new.get(rp, {}).get(move.rc, 0) + amounts
        for rp in retyped.get(consumer, ()):
            new[rp] = dict(wanted[consumer][rp])
        entry: dict[str, Any] = {
            key: record[key] for key in ('project_id', 'user_id', 'consumer_generation')
            if key in record}
        if record.get('consumer_type'):
            entry['consumer_type'] = record['consumer_type']
        entry['allocations'] = {rp: {'resources': res} for rp, res in new.items() if res}
        allocations[consumer] = entry
    changed = ({m.source for m in moves if m.source in desired.uuids()} | targets
               | {rp for rps in retyped.values() for rp in rps})
    inventories = {uuid: {'resource_provider_generation': _generation(known, desired, uuid),
                          'inventories': desired.get(uuid).inventories}
                   for uuid in sorted(changed)}
    for move in moves:
        if move.source not in desired.uuids():   # a provider going away
            inventories[move.source] = {
                'resource_provider_generation': known.get(move.source).generation,
                'inventories': {}}
    return {'inventories': inventories, 'allocations': allocations}


def _generation(known: tree_mod.ProviderTree, desired: tree_mod.ProviderTree,
                uuid: str) -> int:
    found = known.find(uuid)
    generation = found.generation if found else desired.get(uuid).generation
    return 0 if generation is None else generation


def _place(consumer: str, move: Move, amount: int, wanted: dict[str, dict[str, Any]],
           free: dict[tuple[str, str], int]) -> dict[str, int]:
    """{target: amount} for one consumer's share of a moved class."""
    seen = wanted.get(consumer, {})
    told = {rp: res[move.rc] for rp, res in seen.items()
            if rp in move.targets and res.get(move.rc)}
    if sum(told.values()) == amount:
        for rp, n in told.items():
            free[(rp, move.rc)] -= n
        return told
    placed: dict[str, int] = {}
    for rp in move.targets:
        if amount == 0:
            break
        take = min(amount, free[(rp, move.rc)])
        if take > 0:
            placed[rp] = take
            free[(rp, move.rc)] -= take
            amount -= take
    if amount:
        raise errors.InventoryInUse(
            'consumer %s: %d %s cannot move from provider %s: the new providers '
            'lack the room' % (consumer, amount, move.rc, move.source),
            provider=move.source, resource_classes={move.rc})
    return placed
