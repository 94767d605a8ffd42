"""A brute-force model of GET /allocation_candidates, for tests only.

It reads a ``World`` (tests/property/world.py) from memory and tries every
assignment the rules allow, with no SQL and no shortcuts, so that the
server's answers can be checked against it. The rules (upstream placement's):

- A suffixed group takes all its resources from ONE provider, which has
  all its required traits (each any-of set met), none of its forbidden
  traits, is in every member_of set and in no forbidden aggregate, and is
  in the in_tree tree. It may serve its own root as anchor; a sharing
  provider (MISC_SHARES_VIA_AGGREGATE) also the root of any provider it
  shares an aggregate with.
- The unsuffixed group takes each class from one provider of the anchor's
  tree, or from a sharing provider sharing an aggregate with that tree
  (not with in_tree). Each provider used has no forbidden trait; the
  providers used meet the required sets between them; member_of holds for
  the provider or its tree's root (a sharing provider: itself); neither
  the provider nor the anchor is in a forbidden aggregate.
- A candidate: one choice per group, all under one anchor root (which
  meets root_required); isolate: granular groups on distinct providers;
  same_subtree: one of the providers mapped to the listed groups is an
  ancestor-or-self of all of them; what several groups take of one
  provider and class adds up and must fit used + sum <= capacity and
  sum <= max_unit; before 1.29 no two providers of one tree.
"""
import itertools

SHARES = 'MISC_SHARES_VIA_AGGREGATE'


def fits(prov, rc, amount):
    inv = prov.inventories.get(rc)
    return (inv is not None and prov.used.get(rc, 0) + amount <= inv.capacity
            and inv.min_unit <= amount <= inv.max_unit and amount % inv.step_size == 0)


def _in_all(prov, member_of):
    return all(prov.aggregates & s for s in member_of)


def _anchors(prov, providers):
    roots = {prov.root.uuid}
    if SHARES in prov.traits:
        roots |= {p.root.uuid for p in providers if p.aggregates & prov.aggregates}
    return roots


def _ancestors(prov):
    found = set()
    while prov is not None:
        found.add(prov.uuid)
        prov = prov.parent
    return found


def _granular_options(world, group, tree_root):
    providers = list(world.providers.values())
    options = {}
    for p in providers:
        if not all(fits(p, rc, a) for rc, a in group.resources.items()):
            continue
        if not all(p.traits & s for s in group.required) or p.traits & group.forbidden:
            continue
        if not _in_all(p, group.member_of) or p.aggregates & group.forbidden_aggs:
            continue
        if tree_root and p.root.uuid != tree_root:
            continue
        amounts = frozenset(((p.uuid, rc), a) for rc, a in group.resources.items())
        for anchor in _anchors(p, providers):
            options.setdefault(anchor, set()).add((amounts, frozenset([p.uuid])))
    return options


def _spread_options(world, group, tree_root, nested_aware):
    providers = list(world.providers.values())
    by_uuid = world.providers
    options = {}
    for root in (p for p in providers if p.parent is None):
        if tree_root and root.uuid != tree_root:
            continue
        if root.aggregates & group.forbidden_aggs:
            continue
        pools = []
        for rc, amount in sorted(group.resources.items()):
            pool = []
            for p in providers:
                if not fits(p, rc, amount) or p.traits & group.forbidden:
                    continue
                if p.aggregates & group.forbidden_aggs:
                    continue
                if p.root is root:
                    if _in_all(p, group.member_of) or _in_all(root, group.member_of):
                        pool.append(p.uuid)
                elif (not tree_root and SHARES in p.traits
                      and root.uuid in _anchors(p, providers)
                      and _in_all(p, group.member_of)):
                    pool.append(p.uuid)
            pools.append([(rc, amount, u) for u in pool])
        for choice in itertools.product(*pools):
            used = {u for _, _, u in choice}
            traits = set().union(*(by_uuid[u].traits for u in used))
            if not all(traits & s for s in group.required):
                continue
            if not nested_aware and len({by_uuid[u].root.uuid for u in used}) != len(used):
                continue
            amounts = frozenset(((u, rc), a) for rc, a, u in choice)
            options.setdefault(root.uuid, set()).add((amounts, frozenset(used)))
    return options


def candidates(world, request):
    """Every candidate, as a set of (frozenset of ((uuid, class), amount),
    frozenset of (suffix, frozenset of uuids))."""
    by_uuid = world.providers
    options = {}
    for suffix, group in request.groups.items():
        tree_root = None
        if group.in_tree:
            if group.in_tree not in by_uuid:
                return set()
            tree_root = by_uuid[group.in_tree].root.uuid
        if group.granular or not group.resources:
            options[suffix] = _granular_options(world, group, tree_root)
        else:
            options[suffix] = _spread_options(world, group, tree_root, request.nested_aware)
    suffixes = list(request.groups)
    granular = [s for s in suffixes if request.groups[s].granular]
    anchors = set.intersection(*(set(options[s]) for s in suffixes))
    found = set()
    for anchor in anchors:
        root = by_uuid[anchor]
        if request.root_required - root.traits or request.root_forbidden & root.traits:
            continue
        for combo in itertools.product(*(sorted(options[s][anchor], key=repr) for s in suffixes)):
            mapped = dict(zip(suffixes, (providers for _, providers in combo)))
            if request.group_policy == 'isolate' and len(
                    set().union(*(mapped[s] for s in granular))) != len(granular):
                continue
            if not all(_one_subtree(set().union(*(mapped[s] for s in subtree)), by_uuid)
                       for subtree in request.same_subtrees):
                continue
            total = {}
            for amounts, _ in combo:
                for key, amount in amounts:
                    total[key] = total.get(key, 0) + amount
            if any(by_uuid[u].used.get(rc, 0) + a > by_uuid[u].inventories[rc].capacity
                   or a > by_uuid[u].inventories[rc].max_unit
                   for (u, rc), a in total.items()):
                continue
            if not request.nested_aware:
                rps = {u for u, _ in total}
                if len({by_uuid[u].root.uuid for u in rps}) != len(rps):
                    continue
            found.add((frozenset(total.items()),
                       frozenset((s, frozenset(p)) for s, p in mapped.items())))
    return found


def _one_subtree(uuids, by_uuid):
    if len(uuids) <= 1:
        return True
    common = set.intersection(*(_ancestors(by_uuid[u]) for u in uuids))
    return bool(common & uuids)
