"""A provider tree with its usage, as an operator reads it."""
from collections.abc import Sequence
import textwrap
from typing import Any

from tracker.placement.allocations import normalize as normalize_allocations
from tracker.providers.provider import Provider
from tracker.providers.provider import capacity


def usage_by_provider(allocations: dict[str, Any] | None) -> dict[str, dict[str, int]]:
    """``{rp_uuid: {rc: used}}`` summed over every consumer."""
    usage: dict[str, dict[str, int]] = {}
    for consumer_allocations in (allocations or {}).values():
        for rp, resources in normalize_allocations(consumer_allocations).items():
            used = usage.setdefault(rp, {})
            for rc, amount in resources.items():
                used[rc] = used.get(rc, 0) + amount
    return usage


def format_tree(providers: Sequence[Provider], allocations: dict[str, Any] | None) -> str:
    """One line per provider (indented under its parent), then one line
    per inventory: used / capacity (capacity = (total - reserved) * ratio),
    then the total, reserved and allocation ratio it comes from."""
    usage = usage_by_provider(allocations)
    children: dict[str | None, list[Provider]] = {}
    for p in providers:
        children.setdefault(p.parent_uuid, []).append(p)
    known = {p.uuid for p in providers}
    roots = [p for p in providers if p.parent_uuid not in known]
    lines: list[str] = []

    def show(provider: Provider, depth: int) -> None:
        pad = '  ' * depth
        lines.append('%s%s (%s)' % (pad, provider.name, provider.uuid))
        for label, values in (('traits', provider.traits),
                              ('aggregates', provider.aggregates)):
            if values:
                lines.extend(textwrap.wrap(
                    '%s: %s' % (label, ' '.join(sorted(values))), width=79,
                    initial_indent=pad + '  ', subsequent_indent=pad + '    '))
        used = usage.get(provider.uuid, {})
        for rc, inv in sorted(provider.inventories.items()):
            lines.append('%s  %-20s %6d / %d used  (total %d, reserved %d, '
                         'ratio %g)' % (pad, rc, used.get(rc, 0), capacity(inv),
                                        inv['total'], inv.get('reserved', 0),
                                        inv.get('allocation_ratio', 1.0)))
        for child in sorted(children.get(provider.uuid, []), key=lambda c: c.name):
            show(child, depth + 1)

    for root in sorted(roots, key=lambda r: r.name):
        show(root, 0)
    return '\n'.join(lines)
