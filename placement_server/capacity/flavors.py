"""How many more instances of a flavor fit, and how fragmented free capacity is.

A flavor here is what nova asks placement for when it boots one: amounts
of resource classes, and optionally traits the host must have. An
operator names them in ``[capacity] flavor`` as nova writes extra specs::

    m1.large: VCPU=4, MEMORY_MB=8192, DISK_GB=80, trait:HW_CPU_X86_AVX2=required

Counting follows placement's own rule for one request group spread over a
tree (``search.fits``: free capacity after reserved and allocation ratio,
min_unit, max_unit, step_size): each instance takes each class whole from
one provider of the tree, different classes possibly from different
providers. So a tree holds, per class, the sum over its providers of how
many times the amount fits there, and the flavor fits as many times as its
scarcest class allows. Required traits are judged on the root provider,
where nova's compute node carries them. Sharing providers (a shared disk
pool) are not counted: a flavor's count is what its hosts hold themselves.
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


def times_fit(amount: int, used: int, inv: Inv) -> int:
    """How many allocations of ``amount`` one inventory can still take."""
    capacity, min_unit, max_unit, step = inv
    if not (min_unit <= amount <= max_unit and amount % step == 0) or amount <= 0:
        return 0
    k = max(0, int((capacity - used) // amount))
    # The capacity is a float (the ratio): settle the edge as ``fits`` does.
    while k and used + k * amount > capacity:
        k -= 1
    while used + (k + 1) * amount <= capacity:
        k += 1
    return k


def largest_one(used: int, inv: Inv) -> int:
    """The largest amount one allocation could still take from ``inv``."""
    capacity, min_unit, max_unit, step = inv
    top = min(max_unit, int(capacity - used))
    while top > 0 and used + top > capacity:   # float edge, as in times_fit
        top -= 1
    top -= top % step
    return top if top >= max(min_unit, 1) else 0


def free(used: int, inv: Inv) -> int:
    """Free capacity, whole units, never negative (an over-full provider
    has none)."""
    return max(0, int(inv[0] - used))
