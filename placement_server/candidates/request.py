"""GET /allocation_candidates: the query string as request groups.

A request is a set of *request groups* keyed by suffix: the unsuffixed
group ('') may be satisfied by several providers of one tree plus sharing
providers; each suffixed ("granular") group by exactly one provider. Around
them sit the request-wide parameters: limit, group_policy, root_required,
same_subtree.

Parsing is pure (no database): names are resolved later by the search.
Every check and message follows upstream placement's per microversion.
"""
import dataclasses
import re

import webob.multidict

from placement_server import errors
from placement_server import microversion
from placement_server import query
from placement_server.filters import RequestGroup as RequestGroup
from placement_server.schemas import allocation_candidate as schema

_KEY = {
    False: re.compile(r'^(resources|required|member_of|in_tree)(%s)?$' % schema.SUFFIX_1_25),
    True: re.compile(r'^(resources|required|member_of|in_tree)(%s)?$' % schema.SUFFIX_1_33),
}


@dataclasses.dataclass
class CandidateRequest:
    groups: dict[str, RequestGroup]   # by suffix
    version: microversion.Version
    limit: int | None = None
    group_policy: str | None = None
    root_required: set[str] = dataclasses.field(default_factory=set)
    root_forbidden: set[str] = dataclasses.field(default_factory=set)
    same_subtrees: list[set[str]] = dataclasses.field(default_factory=list)  # sets of suffixes

    @property
    def nested_aware(self) -> bool:
        # Before 1.29 a candidate never takes from two providers of one tree.
        return self.version >= (1, 29)

    def all_classes(self) -> set[str]:
        return {rc for g in self.groups.values() for rc in g.resources}

    def all_traits(self) -> set[str]:
        names = set(self.root_required) | set(self.root_forbidden)
        for g in self.groups.values():
            names |= g.forbidden
            for any_of in g.required:
                names |= any_of
        return names


def _bad(detail: str, code: str | None = None) -> errors.BadRequest:
    return errors.BadRequest(detail, code=code)


def _parse_group_key(version: microversion.Version, group: RequestGroup, prefix: str,
                     values: list[str]) -> None:
    suffix = group.suffix
    if prefix == 'resources':
        group.resources = query.parse_resources(values[-1])
    elif prefix == 'required':
        required, forbidden = query.parse_required(values, version)
        group.required += required
        group.forbidden |= forbidden
    elif prefix == 'member_of':
        member_of, forbidden = query.parse_member_of(values, version, suffix)
        group.member_of += member_of
        group.forbidden_aggs |= forbidden
    elif prefix == 'in_tree':
        group.in_tree = query.parse_in_tree(values[-1])


def _request_wide(params: webob.multidict.MultiDict, version: microversion.Version
                  ) -> CandidateRequest:
    wide = CandidateRequest(groups={}, version=version)
    if 'limit' in params:
        # The schema judged the last value; as upstream, the first is used.
        limit = params.getall('limit')[0]
        pattern = schema.GET_1_16['properties']['limit']['pattern']
        if not re.match(pattern, limit):
            raise _bad('Invalid query string parameters: %r does not match %r'
                       % (limit, pattern))
        wide.limit = int(limit)
    if 'group_policy' in params:
        wide.group_policy = params.getall('group_policy')[0]
    roots = params.getall('root_required')
    if len(roots) > 1:
        raise _bad("Query parameter 'root_required' may be specified only once.",
                   errors.QUERYPARAM_DUPLICATE_KEY)
    if roots:
        required, forbidden = query.parse_traits(roots[0], True, False)
        wide.root_required = {n for any_of in required for n in any_of}
        wide.root_forbidden = forbidden
        conflicts = wide.root_required & forbidden
        if conflicts:
            raise _bad('Conflicting required and forbidden traits found in '
                       'root_required: %s' % ', '.join(sorted(conflicts)),
                       errors.QUERYPARAM_BAD_VALUE)
    for value in params.getall('same_subtree'):
        suffixes = {s.strip() for s in value.split(',')}
        if '' in suffixes:
            raise _bad('Empty string (unsuffixed group) can not be specified '
                       'in `same_subtree` ', errors.QUERYPARAM_BAD_VALUE)
        wide.same_subtrees.append(suffixes)
    return wide


def _check_groups_1_36(groups: dict[str, RequestGroup], same_subtrees: list[set[str]]) -> None:
    resourceless = {s for s, g in groups.items() if not g.resources}
    if len(resourceless) == len(groups):
        raise _bad('There must be at least one resources or resources[$S] '
                   'parameter.', errors.QUERYPARAM_MISSING_VALUE)
    in_subtree = set().union(*same_subtrees)
    bad = sorted(resourceless - in_subtree)
    if bad:
        raise _bad('Resourceless suffixed group request should be specified in '
                   '`same_subtree` query param: bad group(s) - %s.' % bad,
                   errors.QUERYPARAM_BAD_VALUE)
    unknown = sorted(in_subtree - set(groups))
    if unknown:
        raise _bad('Real suffixes should be specified in `same_subtree`: '
                   '%s not found in %s.' % (unknown, sorted(groups)),
                   errors.QUERYPARAM_BAD_VALUE)


def _check_orphans(groups: dict[str, RequestGroup]) -> None:
    orphans = ['required%s' % s for s, g in groups.items() if g.required and not g.resources]
    if orphans:
        raise _bad('All traits parameters must be associated with resources.  '
                   'Found the following orphaned traits keys: %s' % ', '.join(orphans))
    orphans = ['member_of%s' % s for s, g in groups.items()
               if not g.resources and (g.member_of or g.forbidden_aggs)]
    if orphans:
        raise _bad('All member_of parameters must be associated with resources. '
                   'Found the following orphaned member_of keys: %s' % ', '.join(orphans))
    if not all(g.resources for g in groups.values()):
        raise _bad('All request groups must specify resources.')
    if not groups:
        raise _bad('At least one request group (`resources` or `resources{$S}`) '
                   'is required.')


def parse(params: webob.multidict.MultiDict, version: microversion.Version
          ) -> CandidateRequest:
    """The CandidateRequest for a query string (a webob MultiDict).

    The caller has validated the key set against the version's schema.
    """
    wide = _request_wide(params, version)
    pattern = _KEY[version >= (1, 33)]
    seen = set()
    for key in params.keys():
        match = pattern.match(key)
        if not match or key in seen:
            continue
        seen.add(key)
        prefix, suffix = match.group(1), match.group(2) or ''
        group = wide.groups.setdefault(suffix, RequestGroup(suffix))
        _parse_group_key(version, group, prefix, params.getall(key))

    if version >= (1, 36):
        _check_groups_1_36(wide.groups, wide.same_subtrees)
    else:
        _check_orphans(wide.groups)

    if version >= (1, 22):
        conflicts = []
        for suffix, group in wide.groups.items():
            for any_of in group.required:
                if any_of <= group.forbidden:
                    conflicts.append('required%s: (%s)' % (suffix, ', '.join(sorted(any_of))))
        if conflicts:
            raise _bad('Conflicting required and forbidden traits found in the '
                       'following traits keys: %s' % ', '.join(sorted(conflicts)))

    granular = [g for g in wide.groups.values() if g.granular]
    if not wide.group_policy and len(granular) > 1:
        raise _bad('The "group_policy" parameter is required when specifying '
                   'more than one "resources{N}" parameter.')
    return wide
