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
from collections.abc import Mapping
import sys
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
    # Whether ``items`` holds them all: ``get`` beyond gives None.
    complete: bool

    def get(self, i: int, budget: Budget) -> Candidate | None:
        """The i-th candidate, or None when there are no more."""


class Found:
    """A source whose candidates are all known already."""
    complete = True

    def __init__(self, items: list[Candidate]) -> None:
        self.items = items

    def get(self, i: int, budget: Budget) -> Candidate | None:
        return self.items[i] if i < len(self.items) else None


class _Taken:
    """The answer as it fills, and what it owes the budget."""

    def __init__(self, stop_after: int | None, budget: Budget, distinct: bool,
                 summarised: Mapping[int, Collection[int]] | None) -> None:
        self.items: list[Candidate] = []
        self.limit = sys.maxsize if stop_after is None else stop_after
        self.budget = budget
        self.seen: set[object] | None = set() if distinct else None
        self.summarised = summarised
        # Owed to the budget since its last report: steps, allocations, summaries
        self.steps = self.allocations = self.summaries = 0

    def add(self, candidate: Candidate, first_of: int | None) -> bool:
        """Add ``candidate`` (``first_of``: its anchor, when it is that
        anchor's first); whether the answer is full."""
        if self.seen is not None:
            key = (frozenset(candidate.amounts.items()),
                   frozenset((s, tuple(rps)) for s, rps in candidate.mappings.items()))
            if key in self.seen:
                return False
            self.seen.add(key)
        self.items.append(candidate)
        self.allocations += len(candidate.amounts)
        if first_of is not None and self.summarised is not None:
            self.summaries += len(self.summarised.get(first_of, ()))
        self.steps += 1
        if self.steps == _REPORT_EVERY:
            self.report()
        return len(self.items) >= self.limit

    def report(self) -> None:
        self.budget.took(self.steps, self.allocations, self.summaries)
        self.steps = self.allocations = self.summaries = 0


def take(sources: Mapping[int, Source], stop_after: int | None, strategy: str,
         budget: Budget, distinct: bool,
         summarised: Mapping[int, Collection[int]] | None = None) -> list[Candidate]:
    """The candidates of ``sources`` (by anchor) the answer holds.
    ``distinct``: a candidate may come from several anchors (sharing
    providers serve them all) and is shown once. ``summarised[anchor]``:
    the providers the answer summarises once it holds a candidate of that
    anchor (owed to the budget with the candidate's allocations; None:
    only the candidates' own)."""
    taken = _Taken(stop_after, budget, distinct, summarised)
    anchors = sorted(sources)
    try:
        if strategy == 'depth-first':
            _depth_first(sources, anchors, budget, taken)
        elif distinct:
            _breadth_first(sources, anchors, budget, taken)
        else:
            _breadth_first_each_once(sources, anchors, budget, taken)
        taken.report()
    except OutOfTime:
        pass
    return taken.items


def _depth_first(sources: Mapping[int, Source], anchors: list[int], budget: Budget,
                 taken: _Taken) -> None:
    for anchor in anchors:
        source, i = sources[anchor], 0
        while (candidate := source.get(i, budget)) is not None:
            i += 1
            if taken.add(candidate, anchor if i == 1 else None):
                return


def _breadth_first(sources: Mapping[int, Source], anchors: list[int], budget: Budget,
                   taken: _Taken) -> None:
    i = 0
    while anchors:
        live = []
        for anchor in anchors:
            source = sources[anchor]
            items = source.items
            if i < len(items):   # (found already: a kept search, a lone group)
                candidate = items[i]
            else:
                found = None if source.complete else source.get(i, budget)
                if found is None:
                    continue
                candidate = found
            live.append(anchor)
            if taken.add(candidate, anchor if i == 0 else None):
                return
        anchors, i = live, i + 1


def _breadth_first_each_once(sources: Mapping[int, Source], anchors: list[int],
                             budget: Budget, taken: _Taken) -> None:
    """``_breadth_first`` where no candidate can come twice (not
    ``distinct``): ``_Taken.add`` inline, an answer of thousands of
    candidates being the common case."""
    i = 0
    answer = taken.items
    summarised = taken.summarised
    while anchors:
        live = []
        reported = len(answer)
        for anchor in anchors:
            source = sources[anchor]
            items = source.items
            if i < len(items):
                candidate = items[i]
            else:
                found = None if source.complete else source.get(i, budget)
                if found is None:
                    continue
                candidate = found
            live.append(anchor)
            answer.append(candidate)
            taken.allocations += len(candidate.amounts)
            if i == 0 and summarised is not None:
                taken.summaries += len(summarised.get(anchor, ()))
            if len(answer) >= taken.limit:
                break
            if len(answer) - reported == _REPORT_EVERY:
                taken.steps += _REPORT_EVERY
                taken.report()
                reported = len(answer)
        taken.steps += len(answer) - reported
        if len(answer) >= taken.limit:
            return
        anchors, i = live, i + 1
