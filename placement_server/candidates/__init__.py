"""GET /allocation_candidates: from a parsed request to candidates and summaries.

``find`` brings the worker's resource view (``placement_server.view``) up
to date, resolves names, asks ``search`` for the providers that can
satisfy each request group, turns them into pieces per anchor
(``combine``), starts one search per anchor (``assign``; kept per tree for
the next time the same request comes, ``_kept``), takes candidates from
the anchors in the configured order up to the limit (``order``), and
gathers provider summaries (``summaries``) only for the trees the returned
candidates touch. While nothing changes in the view the same request
gets the same Result again, without searching or taking (with
randomize_allocation_candidates, shuffled anew). The handler parses the
query string with ``request`` first and renders the Result with ``render``.
"""
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Hashable
from collections.abc import Iterator
from collections.abc import Mapping
import contextlib
import dataclasses
import functools
import gc
import random

import sqlalchemy as sa

from placement_server import filters
from placement_server import view as view_mod
from placement_server.candidates import assign
from placement_server.candidates import combine
from placement_server.candidates import order
from placement_server.candidates import request as request_mod
from placement_server.candidates import search
from placement_server.candidates import summaries


@dataclasses.dataclass
class Result:
    candidates: list[combine.Candidate]
    providers: dict[int, str]         # {id: uuid} of the unwritten candidates' providers
    summaries: dict[int, str]         # {id: '"its uuid":{its summary}', JSON text}
    class_names: dict[int, str]       # {class id: name}
    cut: bool = False                 # the time bound ended the search


EMPTY = Result([], {}, {}, {})


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection while a large answer is built.

    A request with thousands of candidates makes hundreds of thousands of
    small, acyclic objects (freed by reference counting); collections
    triggered by those allocations each walk every live object, which at
    10000 providers doubled the request's CPU time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _asks(query: search.GroupQuery) -> Hashable:
    """What a group asks, whatever its suffix."""
    return (query.granular, tuple(sorted(query.resources.items())),
            tuple(sorted(tuple(sorted(s)) for s in query.required)),
            tuple(sorted(query.forbidden)),
            tuple(sorted(tuple(sorted(s)) for s in query.member_of)),
            tuple(sorted(query.forbidden_aggs)), query.tree_root)


def _spread_needed(names: search.Names) -> bool:
    """Whether the unsuffixed group may take from several providers: not
    without trees or sharing providers, where every group is one provider."""
    return bool(names.sharing) or names.trees


class _Search:
    """The per-request state shared by the groups' searches."""

    def __init__(self, view: view_mod.ResourceView, request: request_mod.CandidateRequest,
                 queries: list[search.GroupQuery], names: search.Names) -> None:
        self.view = view
        self.request = request
        # Classes several groups ask for: only there can amounts add up
        # beyond what each group's own query checked.
        seen: set[int] = set()
        self.shared_classes: set[int] = set()
        for query in queries:
            self.shared_classes |= seen & set(query.resources)
            seen |= set(query.resources)
        self.sharing = names.sharing
        self.spread_needed = _spread_needed(names)
        self.root_of: dict[int, int] = {}
        self.capacity: combine.Capacity = {}
        self._anchors: dict[int, set[int]] = {}
        self._options: dict[Hashable, combine.Options] = {}

    def _load_anchors(self, rps: Collection[int]) -> None:
        missing = [rp for rp in rps if rp in self.sharing and rp not in self._anchors]
        self._anchors.update(search.sharing_anchors(self.view, missing))

    def lone_group(self, query: search.GroupQuery) -> list[combine.Candidate]:
        """A request of one single-provider group and no root filter: each
        matching provider is one candidate, whatever it anchors."""
        found, _ = search.single_providers(self.view, query)
        self.root_of.update(found)
        asked = tuple(sorted(query.resources.items()))
        return [combine.Candidate({rp: asked}, {query.suffix: [rp]}) for rp in sorted(found)]

    def options(self, query: search.GroupQuery) -> combine.Options:
        """The group's pieces per anchor. Groups that ask the same (many
        groups of one device each, on wide trees) share one search and
        one list of pieces per anchor."""
        same = _asks(query)
        found = self._options.get(same)
        if found is None:
            found = self._options[same] = self._options_of(query)
        return found

    def _options_of(self, query: search.GroupQuery) -> combine.Options:
        if not query.resources:
            found = search.resourceless_providers(self.view, query)
            return self._single(found, query)
        if query.granular or not self.spread_needed:
            found, capacity = search.single_providers(self.view, query, self.shared_classes)
            self.capacity.update(capacity)
            return self._single(found, query)
        return self._spread(query)

    def _single(self, found: dict[int, int], query: search.GroupQuery) -> combine.Options:
        self.root_of.update(found)
        self._load_anchors(found)
        return combine.single_provider_options(found, query.resources, self.root_of,
                                               self._anchors)

    def _spread(self, query: search.GroupQuery) -> combine.Options:
        by_class, roots, capacity, meets = search.providers_per_class(self.view, query)
        if any(not by_class.get(rc) for rc in query.resources):
            return {}
        self.root_of.update(roots)
        self.capacity.update(capacity)
        by_anchor: dict[int, dict[int, list[int]]] = {}
        for rc, rps in by_class.items():
            for rp in rps:
                by_anchor.setdefault(roots[rp], {}).setdefault(rc, []).append(rp)
        if query.tree_root is None:
            self._add_sharing(query, by_class, roots, by_anchor)
        # In id order: the same candidates in the same order, however the
        # view came to hold its providers.
        for per_class in by_anchor.values():
            for rps in per_class.values():
                rps.sort()
        return combine.spread_options(by_anchor, query.resources, meets,
                                      len(query.required), self.root_of,
                                      self.request.nested_aware)

    def _add_sharing(self, query: search.GroupQuery, by_class: dict[int, list[int]],
                     roots: dict[int, int], by_anchor: dict[int, dict[int, list[int]]]) -> None:
        """Sharing providers also serve the trees they share an aggregate with."""
        shared = [rp for rp in roots if rp in self.sharing and all(
            self.sharing[rp] & any_of for any_of in query.member_of)]
        self._load_anchors(shared)
        others = {rp: self._anchors[rp] - {roots[rp]} for rp in shared}
        if query.forbidden_aggs:
            bad = search.roots_in_aggregates(self.view, set().union(*others.values()),
                                                  query.forbidden_aggs)
            others = {rp: anchors - bad for rp, anchors in others.items()}
        for rc, rps in by_class.items():
            for rp in rps:
                for anchor in sorted(others.get(rp, ())):
                    by_anchor.setdefault(anchor, {}).setdefault(rc, []).append(rp)


# Inventory totals are 32-bit: a larger amount fits nowhere (and would only
# overflow integer arithmetic in the database).
MAX_AMOUNT = 2147483647

# {anchor root: where its candidates come from}
Sources = dict[int, order.Source]


def find(conn: sa.Connection, request: request_mod.CandidateRequest, randomize: bool = False,
         max_candidates: int = -1, key: Hashable = None, strategy: str = 'breadth-first',
         seconds: float | None = None) -> Result:
    """The Result for a CandidateRequest (see ``request``), from this
    process's resource view of ``conn``'s database, brought up to date first.

    ``strategy`` is the order anchors give candidates in (``order``);
    ``seconds`` bounds the time spent building them: what is found by then
    is the answer, cut as a limit cuts (``Result.cut`` says so).

    ``key``, when given, names the request (the same key, the same
    request): its anchors' searches are kept in the view, and the next
    time only the trees changed since are searched again (``_kept``).
    """
    view = view_mod.of(conn)
    budget = assign.Budget(seconds)
    with view.lock:
        view.refresh(conn)
        result = _find(view, request, randomize, max_candidates, key, strategy, budget)
        entry = view.answers.get(key) if key is not None else None
        if entry is not None:
            # (what answers it again when the view changes: ``answer_again``)
            entry.asked = (request, randomize, max_candidates, strategy, seconds)
        if randomize:
            result = _randomized(view, request, result)
    # (EMPTY is shared: never marked)
    return dataclasses.replace(result, cut=True) if budget.cut else result


def _find(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
          randomize: bool, max_candidates: int, key: Hashable, strategy: str,
          budget: assign.Budget) -> Result:
    if search.emptied_early(view, request, functools.partial(_finds_nothing, view, request)):
        return EMPTY
    names = search.resolve(
        view, request.all_classes(), request.all_traits(),
        {u for g in request.groups.values() for s in g.member_of + [g.forbidden_aggs]
         for u in s})
    if any(a > MAX_AMOUNT for g in request.groups.values() for a in g.resources.values()):
        return EMPTY
    found = [filters.group_query(view, g) for g in request.groups.values()]
    queries = [q for q in found if q is not None]
    if len(queries) < len(found):
        return EMPTY   # some group can match nothing
    class_names = {v: k for k, v in names.classes.items()}
    lone = queries[0] if len(queries) == 1 else None
    if not (lone is not None and lone.resources and (lone.granular or not _spread_needed(names))
            and not (request.root_required or request.root_forbidden)):
        lone = None

    stop_after = None
    if request.limit and not randomize:
        stop_after = request.limit
    if max_candidates >= 0:
        stop_after = min(stop_after or max_candidates, max_candidates)
    # A sharing provider serves other trees than its own: no answer is
    # any one tree's alone, so none is kept per tree.
    kept = key is not None and not names.sharing
    taken_as = (stop_after, strategy, randomize)
    entry: _Entry | None = view.answers.get(key) if kept else None
    if entry is not None and entry.version == view.version and entry.taken_as == taken_as:
        # Nothing changed since this request was last answered: the same
        # candidates (randomized by ``find``, each time anew).
        view.answers[key] = view.answers.pop(key)   # the most recent last
        result = entry.result
    else:
        try:
            result = _found(view, request, queries, names, lone, key if kept else None, budget,
                            stop_after, strategy, randomize, class_names)
        except assign.OutOfTime:
            return EMPTY   # the searches could not even be set up in time
    return result


def _randomized(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
                result: Result) -> Result:
    """The candidates in a new random order (the kept list stays as it
    is), or with a limit a random sample of them, in random order."""
    if request.limit and len(result.candidates) > request.limit:
        # (the summaries of the candidates shown only)
        return _with_summaries(view, request, random.sample(result.candidates, request.limit),
                               result.class_names)
    # Sorted by random keys: a uniform order, in C (random.shuffle draws
    # each swap in Python: a fifth of a kept answer's time)
    draw = random.random
    return dataclasses.replace(result, candidates=sorted(result.candidates,
                                                         key=lambda _: draw()))


def _found(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
           queries: list[search.GroupQuery], names: search.Names,
           lone: search.GroupQuery | None, key: Hashable, budget: assign.Budget,
           stop_after: int | None, strategy: str, randomize: bool,
           class_names: dict[int, str]) -> Result:
    """The Result, before randomizing: searched (again where ``key``'s
    kept searches say so), taken in ``strategy``'s order."""
    def compute(part: view_mod.ResourceView) -> Sources:
        return _sources(part, request, queries, names, lone, budget)

    sources = _kept(view, key, compute) if key is not None else compute(view)
    summarised = view.members if request.nested_aware and view.children else None
    if lone is not None and stop_after is None and budget.afford(
            *_lone_cost(sources, summarised)):
        # All of a lone group's candidates (single providers), the common
        # flat request: nothing to take in turn.
        candidates = [c for source in sources.values() for c in source.items]
    else:
        candidates = order.take(sources, stop_after, strategy, budget,
                                distinct=bool(names.sharing), summarised=summarised)
    if lone is not None and not randomize:
        # A lone group's candidates are listed by provider id.
        candidates.sort(key=lambda c: next(iter(c.amounts)))
    if request.limit and not randomize:
        candidates = candidates[:request.limit]
    result = _with_summaries(view, request, candidates, class_names)
    if key is not None and not budget.cut:
        # (a cut answer is not kept: the next call would start where this
        # one stopped, and answer more)
        _keep(view, key, sources, (stop_after, strategy, randomize), result)
    return result


def answer_again(view: view_mod.ResourceView, changed_at: int,
                 still_idle: Callable[[], bool]) -> None:
    """Answers again, most recent first and while ``still_idle()``, the
    kept requests asked since the view was at version ``changed_at`` (the
    view has changed since): the next time one is asked, its answer is
    kept already. One asked once is answered again once."""
    for key, entry in reversed(list(view.answers.items())):
        if entry.asked is None or entry.version != changed_at:
            continue
        if not still_idle():
            return
        request, randomize, max_candidates, strategy, seconds = entry.asked
        with view.lock:
            if view.answers.get(key) is entry:
                _find(view, request, randomize, max_candidates, key, strategy,
                      assign.Budget(seconds))


def _finds_nothing(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
                   group: request_mod.RequestGroup) -> bool:
    """Whether ``group`` alone has no candidate under any root the
    request's root filters let through."""
    query = filters.group_query(view, group)
    if query is None:
        return True
    traits = set(group.forbidden).union(*group.required)
    names = search.resolve(view, set(group.resources), traits,
                           {u for any_of in group.member_of + [group.forbidden_aggs]
                            for u in any_of})
    anchors: Collection[int] = group_anchors(view, request, query, names)
    if request.root_required or request.root_forbidden:
        anchors = search.matching_roots(
            view, anchors, {view.trait_ids[t] for t in request.root_required},
            {view.trait_ids[t] for t in request.root_forbidden})
    return not anchors


def group_anchors(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
                  query: search.GroupQuery, names: search.Names) -> set[int]:
    """The roots that anchor a way to satisfy ``query`` alone (request-wide
    rules aside), by the search's own rules: what ``capacity.explain``
    judges each group by."""
    return set(_Search(view, request, [query], names).options(query))


# Requests whose searches a worker keeps per tree, and candidates found by
# them in all; beyond either, the least recently asked request goes (one
# that found more than the second is not kept at all).
KEPT_REQUESTS = 16
KEPT_CANDIDATES = 100000


@dataclasses.dataclass
class _Entry:
    """A request's searches kept in the view (``view.answers``), and its
    answer as the view stood at ``version``."""
    version: int
    sources: Sources
    count: int                  # the candidates the searches found
    taken_as: Hashable          # how the answer was taken from them
    result: Result              # (before randomizing)
    # ``find``'s arguments, while the request has been asked since it was
    # last answered; None once ``answer_again`` answered it unasked
    asked: tuple[request_mod.CandidateRequest, bool, int, str, float | None] | None = None


def _kept(view: view_mod.ResourceView, key: Hashable,
          compute: Callable[[view_mod.ResourceView], Sources]) -> Sources:
    """The searches of the request named ``key``, by anchor, kept in the
    view: every anchor is the root of its tree, and with no sharing
    providers a tree's candidates depend on that tree's providers alone.
    So after a claim only the claimed tree is searched again (``compute``
    on ``view.subset`` of the trees changed since), the other trees'
    searches are taken as they were, with what they found so far."""
    entry: _Entry | None = view.answers.pop(key, None)
    changed = None if entry is None else view.trees_changed_since(entry.version)
    if entry is None or changed is None:
        return compute(view)
    sources = entry.sources
    if changed:
        for root in changed:
            sources.pop(root, None)
        sources.update(compute(view.subset(changed)))
    return sources


def _keep(view: view_mod.ResourceView, key: Hashable, sources: Sources,
          taken_as: Hashable, result: Result) -> None:
    kept = view.answers
    count = _count(sources)
    if count > KEPT_CANDIDATES:
        return
    kept[key] = _Entry(view.version, sources, count, taken_as, result)   # the most recent last
    while (len(kept) > KEPT_REQUESTS
           or sum(entry.count for entry in kept.values()) > KEPT_CANDIDATES):
        del kept[next(iter(kept))]


def _count(sources: Sources) -> int:
    """The candidates the sources have found so far."""
    return sum([len(source.items) for source in sources.values()])


def _lone_cost(sources: Sources,
               summarised: Mapping[int, Collection[int]] | None) -> tuple[int, int, int]:
    """What all of a lone group's candidates owe the budget: (steps,
    allocations, summaries)."""
    count = _count(sources)
    return count, count, 0 if summarised is None else sum(
        [len(summarised.get(anchor, ())) for anchor in sources])


def _sources(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
             queries: list[search.GroupQuery], names: search.Names,
             lone: search.GroupQuery | None, budget: assign.Budget) -> Sources:
    state = _Search(view, request, queries, names)
    if lone is not None:
        found: dict[int, list[combine.Candidate]] = {}
        for candidate in state.lone_group(lone):
            rp = next(iter(candidate.amounts))
            found.setdefault(view.rows[rp].root, []).append(candidate)
        return {anchor: order.Found(items) for anchor, items in found.items()}
    return _searches(view, request, state, queries, names.traits, budget)


def _searches(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
              state: _Search, queries: list[search.GroupQuery],
              trait_ids: dict[str, int], budget: assign.Budget) -> Sources:
    """One search per anchor every group can be satisfied under: candidates
    made of one piece per group (``assign``)."""
    options = []
    for query in queries:
        budget.check()
        found = state.options(query)
        if not found:
            return {}
        options.append(found)
    anchors = set.intersection(*(set(o) for o in options))
    if request.root_required or request.root_forbidden:
        anchors = search.matching_roots(view, anchors,
                                        {trait_ids[t] for t in request.root_required},
                                        {trait_ids[t] for t in request.root_forbidden})
    if not anchors:
        return {}
    suffixes = list(request.groups)
    rows, members = view.rows, view.members
    rules = assign.Rules(
        suffixes=suffixes, asks=[q.resources for q in queries],
        granular=[q.granular for q in queries],
        isolate=request.group_policy == 'isolate',
        subtrees=[[suffixes.index(s) for s in subtree] for subtree in request.same_subtrees],
        nested_aware=request.nested_aware, capacity=state.capacity, root_of=state.root_of,
        parent_of=lambda rp: rows[rp].parent,
        parents_in=lambda root: {p for rp in members.get(root, ())
                                 if (p := rows[rp].parent) is not None})
    # Anchors alike up to their providers' names share one search.
    sources: Sources = {}
    searched: dict[Hashable, tuple[assign.AnchorSearch, list[int]]] = {}
    for anchor in sorted(anchors):
        budget.step()
        groups = [o[anchor] for o in options]
        twin = assign.twin_key(rules, groups)
        if twin is None:
            sources[anchor] = assign.AnchorSearch(anchor, rules, groups)
            continue
        key, providers = twin
        if key in searched:
            search_, theirs = searched[key]
            sources[anchor] = assign.Twin(search_, dict(zip(theirs, providers)))
        else:
            search_ = sources[anchor] = assign.AnchorSearch(anchor, rules, groups)
            searched[key] = (search_, providers)
    return sources


def _with_summaries(view: view_mod.ResourceView, request: request_mod.CandidateRequest,
                    candidates: list[combine.Candidate], class_names: dict[int, str]) -> Result:
    """The Result: the candidates, and summaries of the providers they use
    (from 1.29, of every provider in their trees); the uuids of the
    providers of candidates not written yet in the request's form."""
    rows = view.rows
    shown: set[int] = set().union(*[c.amounts for c in candidates])
    if request.nested_aware and view.children:
        shown = summaries.tree_members(view, {rows[rp].root for rp in shown})
    form = combine.written_form(request.version)
    unwritten = [c for c in candidates if c.written[0] != form]
    named = set().union(*[c.amounts for c in unwritten],
                        *[rps for c in unwritten for rps in c.mappings.values()])
    return Result(candidates, {rp: rows[rp].uuid for rp in named},
                  summaries.texts(view, shown, summaries.shape_of(request)), class_names)
