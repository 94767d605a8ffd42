"""The order candidates are taken in (``candidates.order.take``): its
one-loop breadth-first path for answers without sharing providers takes
what the general one (``_Taken.add`` per candidate) does, for any limit,
with sources found already or still searching; and what it owes the
budget is every candidate's (issue 40)."""
import random

import pytest

from placement_server.candidates import assign
from placement_server.candidates import order
from placement_server.candidates.combine import Candidate


class Lazy:
    """A source that finds its candidates one ``get`` at a time, as a
    search does."""

    def __init__(self, items):
        self.found = items
        self.items = []
        self.complete = False

    def get(self, i, budget):
        while len(self.items) <= i:
            if len(self.items) == len(self.found):
                self.complete = True
                return None
            budget.step()
            self.items.append(self.found[len(self.items)])
        return self.items[i]


def sources(seed):
    rng = random.Random(seed)
    made = {}
    for anchor in rng.sample(range(1, 500), rng.randint(0, 40)):
        items = [Candidate({anchor * 10 + k: ((0, 1),) * rng.randint(1, 3)},
                           {'': [anchor * 10 + k]}) for k in range(rng.randint(0, 5))]
        made[anchor] = order.Found(items) if rng.random() < 0.5 else Lazy(items)
    return made


def expected(made, limit):
    """Round-robin over the anchors in id order, up to ``limit``."""
    rounds = max((len(s.found if isinstance(s, Lazy) else s.items) for s in made.values()),
                 default=0)
    found = [s.found if isinstance(s, Lazy) else s.items
             for _, s in sorted(made.items())]
    answer = [items[i] for i in range(rounds) for items in found if i < len(items)]
    return answer if limit is None else answer[:max(limit, 1)]


@pytest.mark.parametrize('seed', range(40))
@pytest.mark.parametrize('limit', [None, 0, 1, 7, 33, 100])
def test_breadth_first_takes_round_robin_up_to_the_limit(seed, limit):
    for distinct in (False, True):
        made = sources(seed)
        want = expected(made, limit)
        got = order.take(made, limit, 'breadth-first', assign.Budget(None), distinct,
                         summarised={a: [a] * 3 for a in made})
        assert [id(c) for c in got] == [id(c) for c in want]


@pytest.mark.parametrize('seed', range(20))
def test_what_the_answer_owes_the_budget_is_every_candidates(seed):
    owed = []
    for distinct in (False, True):
        made = sources(seed)
        budget = assign.Budget(1000.0)
        got = order.take(made, None, 'breadth-first', budget, distinct,
                         summarised={a: [a] * 3 for a in made})
        owed.append(budget.owed)
        firsts = {a for a, s in made.items() if s.items}
        assert budget.owed == pytest.approx(
            sum(len(c.amounts) for c in got) * assign.SECONDS_PER_ALLOCATION
            + 3 * len(firsts) * assign.SECONDS_PER_SUMMARY)
    assert owed[0] == pytest.approx(owed[1])


def test_a_spent_budget_cuts_the_answer_with_what_was_found():
    made = {a: order.Found([Candidate({a: ((0, 1),)}, {'': [a]})]) for a in range(1, 2000)}
    budget = assign.Budget(1e-9)
    got = order.take(made, None, 'breadth-first', budget, False)
    assert budget.cut and 0 < len(got) < 1999
    assert all(c is made[a].items[0] for a, c in enumerate(got, 1))
