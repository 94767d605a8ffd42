"""How many more instances of a flavor fit, and how fragmented free capacity is.

A flavor here is what nova asks placement for when it boots one: amounts
of resource classes, and optionally traits a provider of the allocation must have. An
operator names them in ``[capacity] flavor`` as nova writes extra specs::

    m1.large: VCPU=4, MEMORY_MB=8192, DISK_GB=80, trait:HW_CPU_X86_AVX2=required

How many fit is counted as placing them one at a time does (``placing``):
placement's own rules for one request group over a tree and the sharing
providers of its aggregates.
"""
import dataclasses

from placement_server.view import Inv


class FlavorError(ValueError):
    """A flavor option that does not say a flavor."""


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    resources: tuple[tuple[str, int], ...]     # (class name, amount), by name
    required: frozenset[str] = frozenset()     # trait names


def parse(text: str) -> Flavor:
    """A Flavor from ``NAME: CLASS=AMOUNT, ..., trait:TRAIT=required``."""
    name, sep, specs = text.partition(':')
    name = name.strip()
    if not sep or not name:
        raise FlavorError('%r: expected "NAME: CLASS=AMOUNT, ..."' % text)
    resources: dict[str, int] = {}
    required: set[str] = set()
    for item in filter(None, (s.strip() for s in specs.split(','))):
        key, sep, value = (p.strip() for p in item.partition('='))
        if not sep or not key:
            raise FlavorError('%s: %r is not KEY=VALUE' % (name, item))
        if key.startswith('trait:'):
            if value != 'required':
                raise FlavorError('%s: %r: only required traits are counted' % (name, item))
            required.add(key[len('trait:'):])
            continue
        key = key.removeprefix('resources:')
        try:
            amount = int(value)
        except ValueError:
            raise FlavorError('%s: %r: the amount is not a whole number' % (name, item))
        if amount < 0:
            raise FlavorError('%s: %r: the amount is negative' % (name, item))
        if amount:
            resources[key] = amount
    if not resources:
        raise FlavorError('%s: names no resource class' % name)
    return Flavor(name, tuple(sorted(resources.items())), frozenset(required))


def parse_all(texts: list[str]) -> list[Flavor]:
    flavors = [parse(t) for t in texts]
    names = [f.name for f in flavors]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise FlavorError('flavor named twice: %s' % ', '.join(dup))
    return flavors


def largest_one(used: int, inv: Inv) -> int:
    """The largest amount one allocation could still take from ``inv``."""
    capacity, min_unit, max_unit, step = inv
    top = min(max_unit, int(capacity - used))
    # The capacity is a float (the ratio): settle the edge as ``fits`` does.
    while top > 0 and used + top > capacity:
        top -= 1
    top -= top % step
    return top if top >= max(min_unit, 1) else 0


def free(used: int, inv: Inv) -> int:
    """Free capacity, whole units, never negative (an over-full provider
    has none)."""
    return max(0, int(inv[0] - used))
