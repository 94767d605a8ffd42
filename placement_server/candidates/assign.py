"""GET /allocation_candidates: the candidates under one anchor, by backtracking.

A candidate is one piece per request group under a common anchor. Taking
the product of the groups' pieces and filtering it is hopeless on wide
trees (many identical children, one group each): G groups over P
single-unit providers make P**G products of which only P!/(P-G)! are
valid, and an almost fitting tree has none at all after P**G tries.

``AnchorSearch`` chooses a piece for one group after the other and drops a
partial choice as soon as it

- over-allocates a provider or its max_unit (amounts of one class from
  one provider, asked by several groups, add up),
- breaks group_policy=isolate or a same_subtree,
- leaves the groups still to choose more than the anchor's free capacity
  can give: per class several groups ask, the free units and the number of
  smallest-asked amounts that fit on the providers (``_Pool``; the same
  bound at the start rejects a tree that cannot fit before any choice),
- or is interchangeable with a choice already found to lead nowhere at
  this point of the search (same parent, no children, same groups, same
  capacity, same use so far): a dead end is found once, not once for
  every permutation of identical devices.

Identical hosts are searched once: anchors whose searches would be the
same step for step, up to the names of their providers (``twin_key``),
share one search, each reading its candidates through its own names
(``Twin``). A fleet of one hardware model, mostly free, is a handful of
searches however many hosts it has.

The search keeps its place: ``get(i, budget)`` goes only as far as the
i-th candidate, and a budget that runs out (``OutOfTime``) leaves it where
it was, so a search kept with the request's answers goes on next time.
Candidates come in the order the product would give them.
"""
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Hashable
import dataclasses
import time

from placement_server.candidates.combine import Asked
from placement_server.candidates.combine import Candidate
from placement_server.candidates.combine import Capacity
from placement_server.candidates.combine import Piece

# Steps between two looks at the clock.
_CLOCK_EVERY = 256


class OutOfTime(Exception):
    """The request's budget for building candidates is spent."""


# What the rest of the request costs per allocation in the answer (its
# rendering) and per provider summarised (from 1.29 every provider of a
# tree the answer touches), measured with the worst case's answer on a
# busy two-core machine (docs/bench/wide-trees.md): what a found answer
# still owes the time bound.
SECONDS_PER_ALLOCATION = 4e-6
SECONDS_PER_SUMMARY = 8e-6


def _owed(allocations: int, summaries: int) -> float:
    return allocations * SECONDS_PER_ALLOCATION + summaries * SECONDS_PER_SUMMARY


class Budget:
    """How long one request may spend (None: no bound): setting up its
    searches, building candidates, and summarising and rendering those
    found, which found candidates reserve (``took``)."""

    def __init__(self, seconds: float | None) -> None:
        self.deadline = None if not seconds else time.monotonic() + seconds
        self.cut = False
        self.owed = 0.0
        self._steps = 0

    def step(self) -> None:
        """One more step of some search: now and then, a look at the clock."""
        self._steps += 1
        if self._steps % _CLOCK_EVERY == 0:
            self.check()

    def took(self, steps: int, allocations: int, summaries: int) -> None:
        """``steps`` candidates joined the answer, of ``allocations``
        providers in all, and ``summaries`` more providers are to be
        summarised: what they owe, and a look at the clock as ``step``
        would have taken."""
        self.owed += _owed(allocations, summaries)
        before = self._steps
        self._steps += steps
        if before // _CLOCK_EVERY != self._steps // _CLOCK_EVERY:
            self.check()

    def afford(self, steps: int, allocations: int, summaries: int) -> bool:
        """``took`` them all at once if what they owe fits in what is left
        (a look at the clock); else take nothing and say so."""
        owed = _owed(allocations, summaries)
        if self.deadline is not None and time.monotonic() + self.owed + owed > self.deadline:
            return False
        self.owed += owed
        self._steps += steps
        return True

    def check(self) -> None:
        """Raise OutOfTime if what is spent and owed reaches the bound."""
        if self.deadline is not None and time.monotonic() + self.owed > self.deadline:
            self.cut = True
            raise OutOfTime()


@dataclasses.dataclass
class Rules:
    """What a request asks of a whole candidate, beyond each group's match;
    one per request, shared by its anchors' searches."""
    suffixes: list[str]
    asks: list[dict[int, int]]          # per group: {class: amount}
    granular: list[bool]
    isolate: bool
    subtrees: list[list[int]]           # group indexes that share a subtree
    nested_aware: bool
    capacity: Capacity                  # (provider, class) pairs whose amounts add up
    root_of: dict[int, int]
    parent_of: Callable[[int], int | None]
    parents_in: Callable[[int], Collection[int]]   # {providers with children} of a tree
    chains: dict[int, frozenset[int]] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        counted: dict[int, int] = {}
        for ask in self.asks:
            for rc in ask:
                counted[rc] = counted.get(rc, 0) + 1
        # Only classes several groups ask for can run short between groups.
        self.shared = sorted(rc for rc, n in counted.items() if n > 1)
        self.smallest = {rc: min(a[rc] for a in self.asks if rc in a) for rc in self.shared}
        # What the groups from index k on still ask: {class: (units, groups)}
        self.still: list[dict[int, tuple[int, int]]] = []
        for k in range(len(self.asks) + 1):
            rest = self.asks[k:]
            self.still.append({rc: (sum(a.get(rc, 0) for a in rest),
                                    sum(rc in a for a in rest)) for rc in self.shared})
        # The group index at which each same_subtree can be judged
        self.subtree_at: dict[int, list[list[int]]] = {}
        for subtree in self.subtrees:
            self.subtree_at.setdefault(max(subtree), []).append(subtree)

    def chain(self, rp: int) -> frozenset[int]:
        """``rp`` and its ancestors."""
        found = self.chains.get(rp)
        if found is None:
            up: set[int] = {rp}
            parent = self.parent_of(rp)
            while parent is not None:
                up.add(parent)
                parent = self.parent_of(parent)
            found = self.chains[rp] = frozenset(up)
        return found


class AnchorSearch:
    """The candidates one anchor gives, found as they are asked for."""

    def __init__(self, anchor: int, rules: Rules, groups: list[list[Piece]]) -> None:
        self.anchor = anchor
        self.rules = rules
        self.groups = groups            # per group index: its pieces under the anchor
        self.items: list[Candidate] = []
        self.complete = False
        self._started = False

    def get(self, i: int, budget: Budget) -> Candidate | None:
        """The i-th candidate, or None when there are no more."""
        while len(self.items) <= i and not self.complete:
            self._advance(budget)
        return self.items[i] if i < len(self.items) else None

    # -- the search state --------------------------------------------------

    def _start(self) -> None:
        self._started = True
        self._path: list[Piece] = []
        self._next: list[int] = [0]               # per depth: the next piece to try
        self._dead: list[set[object] | None] = [None]   # per depth: signatures leading nowhere
        self._marks: list[int] = []               # leaves found before each choice
        self._leaves = 0
        self._sums: dict[tuple[int, int], int] = {}
        # {id(piece): its (provider, class) amounts that add up with others'}
        self._counted: dict[int, tuple[tuple[tuple[int, int], int], ...]] = {}
        self._times: dict[int, int] = {}           # provider: pieces on the path using it
        self._isolated: set[int] = set()          # providers granular groups took
        self._pool = _Pool(self.rules, self.groups)
        self._static = _interchangeable(self.anchor, self.rules, self.groups)
        if not self._pool.enough(self.rules.still[0]):
            self.complete = True

    def _advance(self, budget: Budget) -> None:
        """Search on until one more candidate is found or none is left."""
        if not self._started:
            self._start()
            if self.complete:
                return
        groups, depth_of_leaf = self.groups, len(self.groups)
        step = budget.step
        while True:
            step()
            depth = len(self._path)
            if depth == depth_of_leaf:
                self._leaves += 1
                found = self._candidate()
                self._pop()
                if found is not None:
                    self.items.append(found)
                    return
                continue
            pieces = groups[depth]
            i = self._next[depth]
            if i == len(pieces):
                if depth == 0:
                    self.complete = True
                    return
                self._pop()
                continue
            self._next[depth] = i + 1
            piece = pieces[i]
            dead = self._dead[depth]
            if dead and self._signature(piece) in dead:
                continue
            if self._admits(depth, piece):
                self._push(piece)
                if not self._pool.enough(self.rules.still[depth + 1]):
                    self._pop(record=False)

    def _admits(self, depth: int, piece: Piece) -> bool:
        rules = self.rules
        if rules.isolate and rules.granular[depth] and not piece.providers.isdisjoint(
                self._isolated):
            return False
        capacity, sums = rules.capacity, self._sums
        for rp, asked in piece.amounts.items():
            for rc, amount in asked:
                limits = capacity.get((rp, rc))
                if limits is not None:
                    total = sums.get((rp, rc), 0) + amount
                    if limits[1] + total > limits[0] or total > limits[2]:
                        return False
        for subtree in rules.subtree_at.get(depth, ()):
            chains = [rules.chain(rp) for i in subtree
                      for rp in (piece if i == depth else self._path[i]).mapped]
            # Only the one nearest its root can be an ancestor (or self) of
            # all the others: its chain must lie within every other chain.
            top = min(chains, key=len)
            if not all(top <= other for other in chains):
                return False
        return True

    def _push(self, piece: Piece) -> None:
        depth = len(self._path)
        if self.rules.isolate and self.rules.granular[depth]:
            self._isolated |= piece.providers
        self._path.append(piece)
        self._marks.append(self._leaves)
        self._next.append(0)
        self._dead.append(None)
        self._change(piece, 1)

    def _pop(self, record: bool = True) -> None:
        self._next.pop()
        self._dead.pop()
        piece = self._path.pop()
        mark = self._marks.pop()
        self._change(piece, -1)
        depth = len(self._path)
        if self.rules.isolate and self.rules.granular[depth]:
            self._isolated -= piece.providers
        if record and self._leaves == mark:
            signature = self._signature(piece)
            if signature is not None:
                dead = self._dead[depth]
                if dead is None:
                    dead = self._dead[depth] = set()
                dead.add(signature)

    def _change(self, piece: Piece, sign: int) -> None:
        times = self._times
        for rp in piece.providers:
            times[rp] = times.get(rp, 0) + sign
        counted = self._counted.get(id(piece))
        if counted is None:
            capacity = self.rules.capacity
            counted = self._counted[id(piece)] = tuple(
                ((rp, rc), amount) for rp, asked in piece.amounts.items()
                for rc, amount in asked if (rp, rc) in capacity)
        sums, pool = self._sums, self._pool
        for key, amount in counted:
            before = sums.get(key, 0)
            sums[key] = before + sign * amount
            pool.moved(key, before, before + sign * amount)

    def _signature(self, piece: Piece) -> object:
        """What makes ``piece`` interchangeable with another at this point
        of the search, or None when it is one of a kind."""
        if len(piece.mapped) != 1:
            return None
        rp = piece.mapped[0]
        static = self._static.get(rp)
        if static is None:
            return None
        sums = self._sums
        return (static, self._times.get(rp, 0),
                tuple(sums.get((rp, rc), 0) for rc in self.rules.shared))

    def _candidate(self) -> Candidate | None:
        """The candidate the path makes (None where an old microversion's
        one-provider-per-tree rule refuses it)."""
        path = self._path
        amounts: dict[int, Asked] = {}
        for piece in path:
            for rp, asked in piece.amounts.items():
                mine = amounts.get(rp)
                # A provider serving several groups: its amounts add up.
                amounts[rp] = asked if mine is None else _added(mine, asked)
        rules = self.rules
        if not rules.nested_aware and len({rules.root_of[rp] for rp in amounts}) != len(amounts):
            return None
        return Candidate(amounts, {s: piece.mapped for s, piece in zip(rules.suffixes, path)})


def _added(mine: Asked, more: Asked) -> Asked:
    """Two amounts from one provider as one, classes in order."""
    total = dict(mine)
    for rc, amount in more:
        total[rc] = total.get(rc, 0) + amount
    return tuple(sorted(total.items()))


class _Pool:
    """Per class several groups ask: the units the anchor's providers can
    still give (free, and within max_unit) and how many of the smallest
    asked amounts fit on them one provider at a time. Both bound what the
    remaining groups can take."""

    def __init__(self, rules: Rules, groups: list[list[Piece]]) -> None:
        self.capacity = rules.capacity
        self.smallest = rules.smallest
        self.units: dict[int, int] = {rc: 0 for rc in rules.shared}
        self.fits: dict[int, int] = {rc: 0 for rc in rules.shared}
        seen: set[tuple[int, int]] = set()
        for pieces in {id(p): p for p in groups}.values():
            for piece in pieces:
                for rp, asked in piece.amounts.items():
                    for rc, _ in asked:
                        key = (rp, rc)
                        if rc in self.units and key in self.capacity and key not in seen:
                            seen.add(key)
                            self.moved(key, None, 0)

    def _room(self, key: tuple[int, int], taken: int) -> int:
        capacity, used, max_unit = self.capacity[key]
        return max(0, min(int(capacity) - used - taken, max_unit - taken))

    def moved(self, key: tuple[int, int], before: int | None, after: int) -> None:
        """The path's amount on (provider, class) went from ``before``
        (None: not counted yet) to ``after``."""
        rc = key[1]
        if rc not in self.units:
            return
        smallest = self.smallest[rc]
        if before is not None:
            room = self._room(key, before)
            self.units[rc] -= room
            self.fits[rc] -= room // smallest
        room = self._room(key, after)
        self.units[rc] += room
        self.fits[rc] += room // smallest

    def enough(self, still: dict[int, tuple[int, int]]) -> bool:
        return all(self.units[rc] >= units and self.fits[rc] >= groups
                   for rc, (units, groups) in still.items())


def _interchangeable(anchor: int, rules: Rules, groups: list[list[Piece]]) -> dict[int, object]:
    """{provider: what it shares with the providers it may stand in for}:
    its parent, the piece lists it is in, its capacity per shared class.
    Only childless providers of the anchor's own tree that appear in
    single-provider pieces alone qualify."""
    lists: dict[int, set[int]] = {}
    alone: set[int] = set()
    for index, pieces in enumerate({id(p): p for p in groups}.values()):
        for piece in pieces:
            if len(piece.mapped) == 1:
                lists.setdefault(piece.mapped[0], set()).add(index)
            else:
                alone.update(piece.mapped)
    parents = rules.parents_in(anchor)
    capacity = rules.capacity
    found: dict[int, object] = {}
    for rp, indexes in lists.items():
        if rp in alone or rp in parents or rules.root_of.get(rp) != anchor:
            continue
        found[rp] = (rules.parent_of(rp), frozenset(indexes),
                     tuple(capacity.get((rp, rc)) for rc in rules.shared))
    return found


def twin_key(rules: Rules, groups: list[list[Piece]]) -> tuple[Hashable, list[int]] | None:
    """What the candidates of an anchor with these pieces depend on, its
    providers named by their order of appearance, and those providers in
    that order; None where more is read (same_subtree's ancestries, an old
    microversion's one-provider-per-tree rule).

    Anchors with the same key have the same candidates once the i-th
    provider of one stands for the i-th of the other: the same pieces in
    the same order, judged alike (amounts add up only in the shared
    classes, whose capacity is in the key; isolate compares providers).
    How a search prunes (``_Pool``, ``_interchangeable``) never changes
    what it finds, so it need not be alike."""
    if rules.subtrees or not rules.nested_aware:
        return None
    local: dict[int, int] = {}
    lists: list[object] = []
    first: dict[int, int] = {}
    for index, pieces in enumerate(groups):
        earlier = first.setdefault(id(pieces), index)
        if earlier != index:
            lists.append(earlier)
            continue
        shape: list[object] = []
        for piece in pieces:
            mapped = piece.mapped
            if len(mapped) == 1 and len(piece.amounts) == 1:
                rp = mapped[0]
                if rp not in local:
                    local[rp] = len(local)
                shape.append((local[rp], piece.amounts[rp]))
                continue
            for rp in mapped:
                if rp not in local:
                    local[rp] = len(local)
            shape.append((tuple([local[rp] for rp in mapped]),
                          tuple([(local[rp], asked) for rp, asked in piece.amounts.items()])))
        lists.append(tuple(shape))
    if rules.shared:
        capacity = rules.capacity
        lists.append(tuple([capacity.get((rp, rc)) for rp in local for rc in rules.shared]))
    return tuple(lists), list(local)


class Twin:
    """An anchor's candidates read from an identical anchor's search
    (``twin_key``): the same candidates, each provider of the other named
    as its counterpart here."""

    def __init__(self, search: AnchorSearch, counterpart: dict[int, int]) -> None:
        self.search = search
        self.counterpart = counterpart
        self.items: list[Candidate] = []
        self.complete = False

    def get(self, i: int, budget: Budget) -> Candidate | None:
        items = self.items
        while len(items) <= i:
            found = self.search.get(len(items), budget)
            if found is None:
                self.complete = True
                return None
            to = self.counterpart
            items.append(Candidate(
                {to[rp]: asked for rp, asked in found.amounts.items()},
                {suffix: sorted(to[rp] for rp in rps)
                 for suffix, rps in found.mappings.items()}))
        return items[i]
