"""GET /allocation_candidates: the resource view each worker keeps.

Everything a candidates request reads -- providers and their trees,
inventories, usage, traits, aggregates, the names of classes and traits --
is held in memory, one view per database and process, and brought up to
date at the start of every request from the change sequence
(``placement_server.db.changes``): one indexed statement when nothing
changed, plus one statement reloading just the providers that did. A
write that committed before a request began is in that request's answer,
as it was when every request ran its own SQL.

The view only proposes: a claim still commits under the providers'
generation check against the database, the only truth.

The searches below are the SQL filters they replace, over dicts: capacity
and unit limits (``fits``: ``provider_filters.capacity_for``'s rule), any-of
required and forbidden traits, member_of and forbidden aggregates, trees.
"""
from collections.abc import Collection
from collections.abc import Iterable
import threading
from typing import Any
import weakref

import os_traits
import sqlalchemy as sa

from placement_server import errors
from placement_server.candidates import summaries as summaries_mod
from placement_server.candidates.combine import Capacity
from placement_server.candidates.search import GroupQuery
from placement_server.candidates.search import Names
from placement_server.candidates.sql import ALLOC
from placement_server.candidates.sql import INV
from placement_server.candidates.sql import RP
from placement_server.candidates.sql import RPA
from placement_server.candidates.sql import RPT
from placement_server.candidates.sql import ByIds
from placement_server.candidates.sql import Holds
from placement_server.db import changes
from placement_server.db import tables

# (id, uuid, parent id, root id, generation)
Row = tuple[int, str, int | None, int, int]
# An inventory as the search checks it:
# (capacity (total - reserved) * allocation_ratio, min_unit, max_unit, step_size)
Inv = tuple[float, int, int, int]


def fits(amount: int, used: int, inv: Inv) -> bool:
    """``inv`` can take ``amount`` more with ``used`` allocated: the rule of
    ``provider_filters.capacity_for`` (which says why it is the one rule),
    in Python; tests/functional/test_candidates_capacity.py holds both to
    one reference."""
    capacity, min_unit, max_unit, step = inv
    return (used + amount <= capacity and min_unit <= amount <= max_unit
            and (step == 1 or amount % step == 0))


def _rows(holds: Holds) -> sa.CompoundSelect[Any]:
    """Everything the view holds of the providers ``holds(column)`` selects,
    as rows (kind, provider, i1, i2, i3, i4, i5, ratio, text):
    'p' (parent, root, generation; uuid), 'i' (class, total, reserved,
    min_unit, max_unit, step_size; allocation ratio), 'u' (class, used),
    't' (trait), 'a' (aggregate; its uuid)."""
    null = sa.null()

    def kind(name: str) -> sa.Label[str]:
        return sa.literal(name).label('kind')
    agg = tables.placement_aggregates
    return sa.union_all(
        sa.select(kind('p'), RP.c.id.label('rp'), RP.c.parent_provider_id.label('i1'),
                  RP.c.root_provider_id.label('i2'), RP.c.generation.label('i3'),
                  null.label('i4'), null.label('i5'), null.label('i6'),
                  null.label('ratio'), RP.c.uuid.label('text'))
        .where(holds(RP.c.id)),
        sa.select(kind('i'), INV.c.resource_provider_id, INV.c.resource_class_id, INV.c.total,
                  INV.c.reserved, INV.c.min_unit, INV.c.max_unit, INV.c.step_size,
                  INV.c.allocation_ratio, null)
        .where(holds(INV.c.resource_provider_id)),
        sa.select(kind('u'), ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id,
                  sa.cast(sa.func.sum(ALLOC.c.used), sa.BigInteger), null, null, null, null,
                  null, null)
        .where(holds(ALLOC.c.resource_provider_id))
        .group_by(ALLOC.c.resource_provider_id, ALLOC.c.resource_class_id),
        sa.select(kind('t'), RPT.c.resource_provider_id, RPT.c.trait_id, null, null, null,
                  null, null, null, null)
        .where(holds(RPT.c.resource_provider_id)),
        sa.select(kind('a'), RPA.c.resource_provider_id, RPA.c.aggregate_id, null, null,
                  null, null, null, null, agg.c.uuid)
        .join(agg, agg.c.id == RPA.c.aggregate_id)
        .where(holds(RPA.c.resource_provider_id)))


_OF_PROVIDERS = ByIds(_rows)
_EVERYTHING = _rows(lambda column: sa.true())
_NAMES = sa.union_all(
    sa.select(sa.literal('c').label('kind'), tables.resource_classes.c.id,
              tables.resource_classes.c.name),
    sa.select(sa.literal('t'), tables.traits.c.id, tables.traits.c.name))


class ResourceView:
    """One database's providers as candidates see them, in memory."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.position: changes.Position | None = None
        self._clear()

    def _clear(self) -> None:
        self.rows: dict[int, Row] = {}
        self.by_uuid: dict[str, int] = {}
        self.members: dict[int, set[int]] = {}        # {root: providers of the tree}
        self.children = 0                              # providers with a parent
        self.inventories: dict[int, dict[int, Inv]] = {}   # {class: {provider: Inv}}
        self.classes_of: dict[int, set[int]] = {}     # {provider: classes in inventory}
        self.used: dict[int, dict[int, int]] = {}     # {class: {provider: used}}
        self.used_of: dict[int, set[int]] = {}        # {provider: classes used}
        self.traits: dict[int, frozenset[int]] = {}
        self.aggregates: dict[int, frozenset[int]] = {}
        self.in_aggregate: dict[int, set[int]] = {}   # {aggregate: providers}
        self.aggregate_ids: dict[str, int] = {}
        self.sharing: set[int] = set()
        self.class_ids: dict[str, int] = {}
        self.class_names: dict[int, str] = {}
        self.trait_ids: dict[str, int] = {}
        self.trait_names: dict[int, str] = {}
        # {provider: (resources with nothing used, trait names)}, interned
        self._summaries: dict[int, tuple[summaries_mod.Resources, list[str]]] = {}
        self._interned: dict[tuple[Any, ...], Any] = {}

    # -- keeping up ---------------------------------------------------------

    def refresh(self, conn: sa.Connection) -> None:
        """Bring the view up to what ``conn`` sees committed."""
        if self.position is not None:
            found = changes.since(conn, self.position)
            if found is not None:
                position, changed = found
                if changes.NAMES in changed:
                    self._load_names(conn)
                    changed.discard(changes.NAMES)
                if changed:
                    self._reload(conn, changed)
                self.position = position
                return
        # Where the sequence stands first: whatever is read after it is at
        # least that new, and what changes meanwhile comes again next time.
        position = changes.position(conn)
        self._clear()
        self._load_names(conn)
        self._add(_fetch(conn, _EVERYTHING))
        self.position = position

    def _load_names(self, conn: sa.Connection) -> None:
        classes, traits = {}, {}
        for kind, id_, name in conn.execute(_NAMES):
            (classes if kind == 'c' else traits)[name] = id_
        self.class_ids, self.trait_ids = classes, traits
        self.class_names = {v: k for k, v in classes.items()}
        self.trait_names = {v: k for k, v in traits.items()}
        self._summaries.clear()   # trait names show in them
        sharing_trait = traits.get(os_traits.MISC_SHARES_VIA_AGGREGATE)
        self.sharing = {rp for rp, ts in self.traits.items() if sharing_trait in ts}

    def _reload(self, conn: sa.Connection, ids: Collection[int]) -> None:
        for rp in ids:
            self._forget(rp)
        self._add(_OF_PROVIDERS.rows(conn, ids))

    def _forget(self, rp: int) -> None:
        row = self.rows.pop(rp, None)
        if row is not None:
            del self.by_uuid[row[1]]
            tree = self.members.get(row[3])
            if tree is not None:
                tree.discard(rp)
                if not tree:
                    del self.members[row[3]]
            if row[2] is not None:
                self.children -= 1
        for rc in self.classes_of.pop(rp, ()):
            del self.inventories[rc][rp]
        for rc in self.used_of.pop(rp, ()):
            del self.used[rc][rp]
        self.traits.pop(rp, None)
        for agg in self.aggregates.pop(rp, ()):
            self.in_aggregate[agg].discard(rp)
        self.sharing.discard(rp)
        self._summaries.pop(rp, None)

    def _add(self, rows: Iterable[Any]) -> None:
        traits: dict[int, set[int]] = {}
        aggregates: dict[int, set[int]] = {}
        for kind, rp, i1, i2, i3, i4, i5, i6, ratio, text in rows:
            if kind == 'p':
                self.rows[rp] = (rp, text, i1, i2, i3)
                self.by_uuid[text] = rp
                self.members.setdefault(i2, set()).add(rp)
                if i1 is not None:
                    self.children += 1
            elif kind == 'i':
                self.inventories.setdefault(i1, {})[rp] = ((i2 - i3) * ratio, i4, i5, i6)
                self.classes_of.setdefault(rp, set()).add(i1)
            elif kind == 'u':
                self.used.setdefault(i1, {})[rp] = int(i2)
                self.used_of.setdefault(rp, set()).add(i1)
            elif kind == 't':
                traits.setdefault(rp, set()).add(i1)
            else:
                aggregates.setdefault(rp, set()).add(i1)
                self.in_aggregate.setdefault(i1, set()).add(rp)
                self.aggregate_ids[text] = i1
        sharing_trait = self.trait_ids.get(os_traits.MISC_SHARES_VIA_AGGREGATE)
        for rp, found in traits.items():
            self.traits[rp] = frozenset(found)
            if sharing_trait in found:
                self.sharing.add(rp)
        for rp, found in aggregates.items():
            self.aggregates[rp] = frozenset(found)

    # -- what search and summaries answer, from memory ----------------------

    def resolve(self, classes: Collection[str], traits: Collection[str],
                aggregates: Collection[str]) -> Names:
        for name in sorted(classes):
            if name not in self.class_ids:
                raise errors.BadRequest('Invalid resource class in resources parameter: '
                                        'No such resource class %s.' % name)
        missing = sorted(set(traits) - set(self.trait_ids))
        if missing:
            raise errors.BadRequest('No such trait(s): %s.' % ', '.join(missing))
        return Names({n: self.class_ids[n] for n in classes},
                     {n: self.trait_ids[n] for n in traits},
                     {u: self.aggregate_ids[u] for u in aggregates if u in self.aggregate_ids},
                     {rp: set(self.aggregates.get(rp, ())) for rp in self.sharing},
                     self.children > 0)

    def root_of_uuid(self, uuid: str) -> int | None:
        rp = self.by_uuid.get(uuid)
        return None if rp is None else self.rows[rp][3]

    def sharing_anchors(self, sharing_ids: Collection[int]) -> dict[int, set[int]]:
        """{sharing provider: roots of the trees it shares an aggregate with,
        its own included}."""
        anchors = {}
        for s in sharing_ids:
            roots = {self.rows[s][3]}
            for agg in self.aggregates.get(s, ()):
                roots.update(self.rows[rp][3] for rp in self.in_aggregate[agg])
            anchors[s] = roots
        return anchors

    def _with_room(self, resources: dict[int, int]) -> set[int] | list[int]:
        """Providers with room for every (class, amount), the smallest
        inventory first."""
        found: list[int] | set[int] | None = None
        empty: dict[int, Inv] = {}
        for rc in sorted(resources, key=lambda rc: len(self.inventories.get(rc, empty))):
            amount = resources[rc]
            inventories = self.inventories.get(rc, empty)
            used = self.used.get(rc, {})
            among = inventories if found is None else (rp for rp in found if rp in inventories)
            found = [rp for rp in among
                     if fits(amount, used.get(rp, 0), inventories[rp])]
            if not found:
                return []
        return found or []

    def _meets(self, rp: int, query: GroupQuery) -> bool:
        """The provider's own traits and aggregates pass the group's filters."""
        traits = self.traits.get(rp, frozenset())
        aggregates = self.aggregates.get(rp, frozenset())
        return (all(traits & any_of for any_of in query.required)
                and not traits & query.forbidden
                and all(aggregates & any_of for any_of in query.member_of)
                and not aggregates & query.forbidden_aggs
                and (query.tree_root is None or self.rows[rp][3] == query.tree_root))

    def single_providers(self, query: GroupQuery, capacity_of: Collection[int] = (),
                         versions: bool = True
                         ) -> tuple[dict[int, int], Capacity, dict[int, tuple[str, int]]]:
        """``search.single_providers``, from memory."""
        rows = self.rows
        roots = {rp: rows[rp][3] for rp in self._with_room(query.resources)
                 if self._meets(rp, query)}
        found_versions = ({rp: (rows[rp][1], rows[rp][4]) for rp in roots}
                          if versions else {})
        wanted = set(capacity_of) & set(query.resources)
        return roots, self.capacities(roots, wanted) if wanted else {}, found_versions

    def single_providers_of_groups(self, queries: list[GroupQuery],
                                   capacity_of: Collection[int] = (), versions: bool = True
                                   ) -> list[tuple[dict[int, int], Capacity,
                                                   dict[int, tuple[str, int]]]]:
        return [self.single_providers(q, capacity_of, versions) for q in queries]

    def capacities(self, rp_ids: Iterable[int], rc_ids: Iterable[int]) -> Capacity:
        """{(provider, class): (capacity, used, max_unit)} for the given pairs."""
        found: Capacity = {}
        for rc in rc_ids:
            inventories = self.inventories.get(rc, {})
            used = self.used.get(rc, {})
            for rp in rp_ids:
                inv = inventories.get(rp)
                if inv is not None:
                    found[rp, rc] = (int(inv[0]), used.get(rp, 0), inv[2])
        return found

    def providers_per_class(self, query: GroupQuery) -> tuple[
            dict[int, list[int]], dict[int, int], Capacity, dict[int, set[int]]]:
        """``search.providers_per_class``, from memory: provider filters on
        the provider (forbidden traits and aggregates) or its root
        (member_of, forbidden aggregates); required traits only reported."""
        rows = self.rows
        by_class: dict[int, list[int]] = {}
        roots: dict[int, int] = {}
        capacity: Capacity = {}
        meets: dict[int, set[int]] = {}
        empty: frozenset[int] = frozenset()
        for rc, amount in sorted(query.resources.items()):
            inventories = self.inventories.get(rc, {})
            used = self.used.get(rc, {})
            found = by_class[rc] = []
            for rp, inv in inventories.items():
                used_now = used.get(rp, 0)
                if not fits(amount, used_now, inv):
                    continue
                root = rows[rp][3]
                if query.tree_root is not None and root != query.tree_root:
                    continue
                traits = self.traits.get(rp, empty)
                if traits & query.forbidden:
                    continue
                mine = self.aggregates.get(rp, empty)
                if query.member_of:
                    theirs = self.aggregates.get(root, empty)
                    if not (all(mine & s for s in query.member_of)
                            or all(theirs & s for s in query.member_of)):
                        continue
                if query.forbidden_aggs and (
                        mine & query.forbidden_aggs
                        or self.aggregates.get(root, empty) & query.forbidden_aggs):
                    continue
                found.append(rp)
                roots[rp] = root
                capacity[rp, rc] = (int(inv[0]), used_now, inv[2])
                meets[rp] = {k for k, any_of in enumerate(query.required) if traits & any_of}
            if not found:
                break
        return by_class, roots, capacity, meets

    def matching_roots(self, root_ids: Iterable[int], required: Iterable[int],
                       forbidden: Collection[int]) -> set[int]:
        required = frozenset(required)
        forbidden = frozenset(forbidden)
        empty: frozenset[int] = frozenset()
        return {root for root in root_ids
                if required <= self.traits.get(root, empty)
                and not self.traits.get(root, empty) & forbidden}

    def roots_in_aggregates(self, root_ids: Iterable[int], agg_ids: Iterable[int]) -> set[int]:
        wanted = frozenset(agg_ids)
        return {root for root in root_ids if self.aggregates.get(root, frozenset()) & wanted}

    def resourceless_providers(self, query: GroupQuery) -> dict[int, int]:
        return {rp: row[3] for rp, row in self.rows.items() if self._meets(rp, query)}

    def providers_by_id(self, ids: Iterable[int]) -> list[Row]:
        return [self.rows[rp] for rp in ids if rp in self.rows]

    def tree_members_and_usage(self, root_ids: Iterable[int]
                               ) -> tuple[list[Row], summaries_mod.Used]:
        members = [self.rows[rp] for root in root_ids for rp in self.members.get(root, ())]
        used = {}
        for row in members:
            rp = row[0]
            for rc in self.used_of.get(rp, ()):
                used[rp, self.class_names[rc]] = self.used[rc][rp]
        return members, used

    def summaries_data(self, versions: dict[int, summaries_mod.Version],
                       roots: Collection[int] | None = None,
                       known_usage: summaries_mod.Used | None = None
                       ) -> tuple[dict[int, summaries_mod.Resources], dict[int, list[str]]]:
        """``summaries.summaries_data``, from memory ({provider: {class
        name: (capacity, used)}}, {provider: [trait names]})."""
        resources, traits = {}, {}
        for rp in versions:
            idle, names = self._summary(rp)
            used_classes = self.used_of.get(rp)
            if used_classes:
                resources[rp] = {
                    name: (capacity, self.used[self.class_ids[name]].get(rp, 0)
                           if self.class_ids[name] in used_classes else 0)
                    for name, (capacity, _) in idle.items()}
            else:
                resources[rp] = idle
            traits[rp] = names
        return resources, traits

    def _summary(self, rp: int) -> tuple[summaries_mod.Resources, list[str]]:
        entry = self._summaries.get(rp)
        if entry is None:
            idle = {self.class_names[rc]: (int(self.inventories[rc][rp][0]), 0)
                    for rc in sorted(self.classes_of.get(rp, ()))}
            # in trait id order (standard traits before custom ones), as upstream lists them
            names = [self.trait_names[t] for t in sorted(self.traits.get(rp, ()))]
            entry = self._summaries[rp] = (self._intern(idle), self._intern(names))
        return entry

    def _intern(self, value: Any) -> Any:
        """One object per distinct summary part, shared by every provider
        that shows it (render works each out once, see render.py)."""
        key = (type(value), tuple(value.items()) if isinstance(value, dict) else tuple(value))
        return self._interned.setdefault(key, value)


def _fetch(conn: sa.Connection, statement: sa.Executable) -> list[Any]:
    result = conn.execute(statement)
    try:
        rows: list[Any] = result.cursor.fetchall()
        return rows
    finally:
        result.close()


_VIEWS: 'weakref.WeakKeyDictionary[sa.Engine, ResourceView]' = weakref.WeakKeyDictionary()
_VIEWS_LOCK = threading.Lock()


def of(conn: sa.Connection) -> ResourceView:
    """This process's view of ``conn``'s database (not yet refreshed)."""
    view = _VIEWS.get(conn.engine)
    if view is None:
        with _VIEWS_LOCK:
            view = _VIEWS.setdefault(conn.engine, ResourceView())
    return view
