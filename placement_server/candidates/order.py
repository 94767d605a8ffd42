"""GET /allocation_candidates: which anchors' candidates, in which order.

Each anchor (tree root) gives its candidates one by one (``Source``). The
answer takes them until ``stop_after`` (the request's limit, or the global
``max_allocation_candidates``), either

- depth-first: every candidate of the first anchor before the next, or
- breadth-first: one candidate of each anchor in turn (upstream's
  round-robin), so a limit spreads the answer over every tree that fits,

and never asks an anchor for more than the answer takes. A request's
budget (``assign.Budget``) that runs out ends the answer with what was
found by then: valid candidates, cut the way the limit cuts.
"""
from collections.abc import Callable
from collections.abc import Mapping
from typing import Protocol

from placement_server.candidates.assign import Budget
from placement_server.candidates.assign import OutOfTime
from placement_server.candidates.combine import Candidate

STRATEGIES = ('depth-first', 'breadth-first')


class Source(Protocol):
    def get(self, i: int, budget: Budget) -> Candidate | None:
        """The i-th candidate, or None when there are no more."""


class Found:
    """A source whose candidates are all known already."""

    def __init__(self, items: list[Candidate]) -> None:
        self.items = items

    def get(self, i: int, budget: Budget) -> Candidate | None:
        return self.items[i] if i < len(self.items) else None


def take(sources: Mapping[int, Source], stop_after: int | None, strategy: str,
         budget: Budget, distinct: bool,
         summarised: Callable[[int], int] = lambda anchor: 0) -> list[Candidate]:
    """The candidates of ``sources`` (by anchor) the answer holds.
    ``distinct``: a candidate may come from several anchors (sharing
    providers serve them all) and is shown once. ``summarised(anchor)``:
    how many providers the answer summarises once it holds a candidate of
    that anchor (owed to the budget with the candidate's allocations)."""
    taken: list[Candidate] = []
    seen: set[object] = set()

    def add(candidate: Candidate, anchor: int, first: bool) -> bool:
        """Add ``candidate``; whether the answer is full."""
        if distinct:
            key = (frozenset(candidate.amounts.items()),
                   frozenset((s, tuple(rps)) for s, rps in candidate.mappings.items()))
            if key in seen:
                return False
            seen.add(key)
        taken.append(candidate)
        budget.owe(len(candidate.amounts), summarised(anchor) if first else 0)
        budget.step()
        return stop_after is not None and len(taken) >= stop_after

    anchors = sorted(sources)
    try:
        if strategy == 'depth-first':
            for anchor in anchors:
                source, i = sources[anchor], 0
                while (candidate := source.get(i, budget)) is not None:
                    i += 1
                    if add(candidate, anchor, i == 1):
                        return taken
        else:
            i = 0
            while anchors:
                live = []
                for anchor in anchors:
                    candidate = sources[anchor].get(i, budget)
                    if candidate is None:
                        continue
                    live.append(anchor)
                    if add(candidate, anchor, i == 0):
                        return taken
                anchors, i = live, i + 1
    except OutOfTime:
        pass
    return taken
