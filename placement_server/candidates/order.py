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
from collections.abc import Collection
from collections.abc import Iterator
from collections.abc import Mapping
from typing import Protocol

from placement_server.candidates.assign import Budget
from placement_server.candidates.assign import OutOfTime
from placement_server.candidates.combine import Candidate

STRATEGIES = ('depth-first', 'breadth-first')

# Candidates taken between two reports to the budget (what they owe, and
# their steps): often enough that its look at the clock every
# assign._CLOCK_EVERY steps stays as often.
_REPORT_EVERY = 32


class Source(Protocol):
    # The candidates found so far: the first ones ``get`` gives, in order.
    items: list[Candidate]

    def get(self, i: int, budget: Budget) -> Candidate | None:
        """The i-th candidate, or None when there are no more."""


class Found:
    """A source whose candidates are all known already."""

    def __init__(self, items: list[Candidate]) -> None:
        self.items = items

    def get(self, i: int, budget: Budget) -> Candidate | None:
        return self.items[i] if i < len(self.items) else None


# (a candidate, and its anchor when it is that anchor's first in the answer)
_Stream = Iterator[tuple[Candidate, int | None]]


def _depth_first(sources: Mapping[int, Source], anchors: list[int], budget: Budget) -> _Stream:
    for anchor in anchors:
        source, i = sources[anchor], 0
        while (candidate := source.get(i, budget)) is not None:
            yield candidate, anchor if i == 0 else None
            i += 1


def _breadth_first(sources: Mapping[int, Source], anchors: list[int], budget: Budget
                   ) -> _Stream:
    i = 0
    while anchors:
        live = []
        for anchor in anchors:
            source = sources[anchor]
            items = source.items
            # (found already, most often: a kept search, or a lone group's)
            candidate = items[i] if i < len(items) else source.get(i, budget)
            if candidate is None:
                continue
            live.append(anchor)
            yield candidate, anchor if i == 0 else None
        anchors, i = live, i + 1


def take(sources: Mapping[int, Source], stop_after: int | None, strategy: str,
         budget: Budget, distinct: bool,
         summarised: Mapping[int, Collection[int]] | None = None) -> list[Candidate]:
    """The candidates of ``sources`` (by anchor) the answer holds.
    ``distinct``: a candidate may come from several anchors (sharing
    providers serve them all) and is shown once. ``summarised[anchor]``:
    the providers the answer summarises once it holds a candidate of that
    anchor (owed to the budget with the candidate's allocations; None:
    only the candidates' own)."""
    taken: list[Candidate] = []
    seen: set[object] = set()
    stream = (_depth_first if strategy == 'depth-first' else _breadth_first)(
        sources, sorted(sources), budget)
    # Owed to the budget since its last report: steps, allocations, summaries
    steps = allocations = summaries = 0
    try:
        for candidate, first_of in stream:
            if distinct:
                key = (frozenset(candidate.amounts.items()),
                       frozenset((s, tuple(rps)) for s, rps in candidate.mappings.items()))
                if key in seen:
                    continue
                seen.add(key)
            taken.append(candidate)
            allocations += len(candidate.amounts)
            if first_of is not None and summarised is not None:
                summaries += len(summarised.get(first_of, ()))
            steps += 1
            if steps == _REPORT_EVERY:
                budget.took(steps, allocations, summaries)
                steps = allocations = summaries = 0
            if stop_after is not None and len(taken) >= stop_after:
                break
        budget.took(steps, allocations, summaries)
    except OutOfTime:
        pass
    return taken
