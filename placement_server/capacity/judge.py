"""Each root's verdict on an allocation candidates request, group by group.

A root fits when a provider of its tree is in the real answer (the
roots GET /allocation_candidates shows). Any other root is judged group by
group, in the request's order, by the candidates search's own rules
(``candidates.group_anchors``: the roots that anchor a way to satisfy the
group alone):

1. its tree (``in_tree``);
2. per class, over the providers the group may take from there (the
   tree's, and the sharing providers sharing an aggregate with it): a
   class none has, none with room while some is within their unit limits
   (``capacity``; the devices among them that their agent drained, trait
   CUSTOM_DEVICE_DRAINED and nothing left of them, named), or the amount
   outside every one's unit limits
   (``unit_limits``: min_unit, max_unit, step_size named);
3. the group's shape with no trait or aggregate asked (``group``: one
   provider for a suffixed group; below 1.29, no group split across one
   tree's providers), then with its forbidden traits, its aggregates
   (member_of judged per provider: on a tree's provider or its root, on
   a sharing provider by its own), its required traits (held by the
   providers the allocation takes from, between them) -- the first that
   loses the root names it.

Then root_required. A root that passes them all anchors candidates: made
only of sharing providers of other trees, which show under their own
roots (``shared_only``), or kept out by the rules between groups
(``capacity.explain``), or not reached before the time limit.
"""
import dataclasses
from typing import Any

from placement_server import candidates
from placement_server import filters
from placement_server import view as view_mod
from placement_server.candidates import request as request_mod
from placement_server.candidates import search

# Stages in the order they are judged.
STAGES = ('in_tree', 'class', 'capacity', 'unit_limits', 'group', 'forbidden_trait',
          'aggregate', 'required_trait', 'root_required', 'isolate', 'same_subtree',
          'combined', 'shared_only', 'time_limit', 'fits')

# (stage, detail, the Verdict's other fields)
Found = tuple[str, str, dict[str, Any]]
# what an agent puts on a device it drained (tracker/drivers/drains.py),
# with its reserved inventory raised to the total
DRAINED = 'CUSTOM_DEVICE_DRAINED'
TIME_LIMIT: Found = ('time_limit', 'the search was cut by [placement] '
                     'allocation_candidates_time_limit before it found whether this root fits',
                     {})
SHARED_ONLY: Found = ('shared_only', 'its candidates take only from sharing providers of '
                      'other trees, which the answer shows under their own roots', {})


def appearing(view: view_mod.ResourceView, result: candidates.Result) -> set[int]:
    """The roots whose providers the answer's candidates take from."""
    rows = view.rows
    return {rows[rp].root for c in result.candidates for rp in c.amounts if rp in rows}


def unit_limit(amount: int, inv: view_mod.Inv) -> str:
    """The first unit limit ``amount`` breaks on ``inv`` ('' if none)."""
    if amount < inv.min_unit:
        return 'min_unit %d' % inv.min_unit
    if amount > inv.max_unit:
        return 'max_unit %d' % inv.max_unit
    if amount % inv.step_size:
        return 'step_size %d' % inv.step_size
    return ''


# A group's query with only some of its filters, in the order judged.
_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ('group', dict(required=[], forbidden=set(), member_of=[], forbidden_aggs=set())),
    ('forbidden_trait', dict(required=[], member_of=[], forbidden_aggs=set())),
    ('aggregate', dict(required=[])),
    ('required_trait', {}))


class Judge:
    """The verdicts for one request; the caller holds the view's lock."""

    def __init__(self, view: view_mod.ResourceView, request: request_mod.CandidateRequest,
                 result: candidates.Result | None) -> None:
        self.view, self.request, self.result = view, request, result
        self.appear = set() if result is None else appearing(view, result)
        self.names = search.resolve(
            view, request.all_classes(), request.all_traits(),
            {u for g in request.groups.values() for s in g.member_of + [g.forbidden_aggs]
             for u in s})
        self.serves = search.sharing_anchors(view, view.sharing)
        self.groups = [(g, filters.group_query(view, g)) for g in request.groups.values()]
        self._anchors: dict[tuple[str, str], set[int]] = {}
        self._pooled: set[int] | None = None

    def verdicts(self) -> list[tuple[int, Found | None]]:
        """(root, verdict) for every root, by id; None: for the rules
        between groups to say."""
        found: list[tuple[int, Found | None]] = []
        for root in sorted(self.view.members):
            if root in self.appear:
                found.append((root, ('fits', 'a provider of its tree is in a candidate', {})))
            else:
                found.append((root, self._ruled_out(root)))
        return found

    def _ruled_out(self, root: int) -> Found | None:
        for group, query in self.groups:
            found = self._group(root, group, query)
            if found is not None:
                return found
        traits = self.view.traits.get(root, frozenset())
        ids = self.view.trait_ids
        if (not {ids[t] for t in self.request.root_required} <= traits
                or {ids[t] for t in self.request.root_forbidden} & traits):
            return 'root_required', 'the root provider does not meet root_required', {}
        if self._shared_only(root):
            return SHARED_ONLY
        if self.result is None or self.result.cut:
            return TIME_LIMIT
        # One group that every rule lets in anchors candidates: they can
        # only be sharing providers' (found above); several: the rules
        # between them.
        return None if len(self.groups) > 1 else SHARED_ONLY

    def _shared_only(self, root: int) -> bool:
        if self._pooled is None:
            # The roots every provider of a candidate serves, over the
            # candidates made of sharing providers alone (once).
            serves, empty = self.serves, frozenset[int]()
            self._pooled = set()
            for c in [] if self.result is None else self.result.candidates:
                if c.amounts and all(rp in serves for rp in c.amounts):
                    self._pooled |= frozenset.intersection(
                        *(frozenset(serves.get(rp, empty)) for rp in c.amounts))
        return root in self._pooled

    def _group(self, root: int, group: filters.RequestGroup,
               query: filters.GroupQuery | None) -> Found | None:
        suffix = group.suffix
        label: dict[str, Any] = {'group': suffix or '(unsuffixed)'}
        if query is None:
            if group.in_tree and filters.root_of_uuid(self.view, group.in_tree) is None:
                return 'in_tree', 'in_tree%s names no provider' % suffix, label
            return 'aggregate', 'no aggregate named in member_of%s exists' % suffix, label
        if query.tree_root is not None and query.tree_root != root:
            return 'in_tree', 'in_tree%s names another tree' % suffix, label
        if root in self._anchored(query, 'required_trait'):
            return None
        short = self._classes(root, group, query, label)
        if short is not None:
            return short
        for stage, _ in _VARIANTS:
            if root not in self._anchored(query, stage):
                return stage, self._detail(stage, query), label
        return None

    def _pool(self, root: int, query: filters.GroupQuery) -> list[int]:
        """The providers a group may take from under ``root``, filters aside."""
        pool = sorted(self.view.members.get(root, ()))
        if query.tree_root is None:
            pool += sorted(s for s, roots in self.serves.items()
                           if root in roots and self.view.rows[s].root != root)
        return pool

    def _classes(self, root: int, group: filters.RequestGroup, query: filters.GroupQuery,
                 label: dict[str, Any]) -> Found | None:
        view = self.view
        pool = self._pool(root, query)
        for rc_name, amount in sorted(group.resources.items()):
            rc = self.names.classes[rc_name]
            inventories = view.inventories.get(rc, {})
            used = view.used.get(rc, {})
            facts = dict(label, resource_class=rc_name, asked=amount)
            have = [rp for rp in pool if rp in inventories]
            if not have:
                return ('class', 'no provider of the tree or sharing with it has %s'
                        % rc_name, facts)
            if any(filters.fits(amount, used.get(rp, 0), inventories[rp]) for rp in have):
                continue
            within = [rp for rp in have if not unit_limit(amount, inventories[rp])]
            if within:
                free = max(max(0, int(inventories[rp].capacity - used.get(rp, 0)))
                           for rp in within)
                facts['largest_free'] = free
                detail = '%s short by %d (asked %d, largest free %d)' % (
                    rc_name, amount - free, amount, free)
                drained = self._drained(within, inventories)
                if drained:
                    facts['drained'] = drained
                    detail += '; drained: %s' % ', '.join(drained)
                return 'capacity', detail, facts
            facts['limits'] = sorted({unit_limit(amount, inventories[rp]) for rp in have})
            return 'unit_limits', '%s:%d is outside the unit limits of every provider ' \
                'with %s (%s)' % (rc_name, amount, rc_name, ', '.join(facts['limits'])), facts
        return None

    def _drained(self, providers: list[int], inventories: dict[int, view_mod.Inv]
                 ) -> list[str]:
        """The names of the drained devices among ``providers``: the trait,
        and nothing left to allocate (reserved = total)."""
        trait = self.view.trait_ids.get(DRAINED)
        if trait is None:
            return []
        return sorted(self.view.details[rp][0] for rp in providers
                      if trait in self.view.traits.get(rp, frozenset())
                      and inventories[rp].capacity <= 0)

    def _anchored(self, query: filters.GroupQuery, stage: str) -> set[int]:
        key = (query.suffix, stage)
        found = self._anchors.get(key)
        if found is None:
            loose = dataclasses.replace(query, **dict(_VARIANTS)[stage])
            found = self._anchors[key] = candidates.group_anchors(
                self.view, self.request, loose, self.names)
        return found

    def _detail(self, stage: str, query: filters.GroupQuery) -> str:
        name = 'group %s' % query.suffix if query.granular else 'the unsuffixed group'
        if stage == 'group':
            if query.granular:
                return 'no one provider has room for all of %s' % name
            if not self.request.nested_aware:
                return ('below microversion 1.29 a group is not split across the providers '
                        'of one tree, and no one provider of the tree has room for all of it')
            return 'no choice of providers has room for all of %s' % name
        if stage == 'forbidden_trait':
            return 'every way to satisfy %s takes from a provider with a forbidden trait' % name
        if stage == 'aggregate':
            return ('no way to satisfy %s is in the aggregates member_of asks (a tree\'s '
                    'provider by its own or its root\'s, a sharing provider by its own), or '
                    'each is in a forbidden one' % name)
        return ('no providers with room for %s hold its required traits between them (a '
                'trait counts on a provider the allocation takes from)' % name)
