"""The query parameters that select providers, parsed per microversion.

``resources``, ``required``, ``member_of`` and ``in_tree`` mean the same on
GET /resource_providers and GET /allocation_candidates (and its numbered
groups): both parse them here into plain values (amounts by class name,
groups of trait names or aggregate uuids) that the queries turn into SQL.
Only lists' ``in_tree`` is checked by their schema instead, as upstream's
error for it is the schema's. Error texts are upstream's: clients and
upstream's tests match on them.
"""
from placement_server import errors
from placement_server import microversion
from placement_server import util

# ([any-of set, ...], {forbidden}): a provider must hold one of every set
Groups = tuple[list[frozenset[str]], set[str]]

_BAD = 'Invalid query string parameters: '


def parse_resources(value: str) -> dict[str, int]:
    """'VCPU:2,MEMORY_MB:1024' -> {'VCPU': 2, 'MEMORY_MB': 1024}"""
    form = ('Badly formed resources parameter. Expected resources query string '
            'parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: %s.')
    if not value.strip():
        raise errors.BadRequest(form % 'empty string')
    result: dict[str, int] = {}
    for item in value.split(','):
        parts = item.split(':')
        if len(parts) != 2 or not parts[0]:
            raise errors.BadRequest(form % item)
        name, text = parts
        try:
            amount = int(text)
        except ValueError:
            raise errors.BadRequest('Requested resource %s expected positive integer '
                                    'amount. Got: %s.' % (name, text))
        if amount < 1:
            raise errors.BadRequest('Requested resource %s requires amount >= 1. '
                                    'Got: %d.' % (name, amount))
        # Beyond any capacity (matches nothing) yet within database integers.
        result[name] = min(amount, 2 ** 53)
    return result


def parse_traits(value: str, allow_forbidden: bool, allow_any_of: bool) -> Groups:
    """One ``required`` value -> ([frozenset any-of, ...], {forbidden}).

    ``A,B`` requires each, ``!A`` forbids (1.22), ``in:A,B`` requires one
    of them (1.39).
    """
    if value.startswith('in:'):
        if not allow_any_of:
            raise errors.BadRequest(
                _BAD + "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
                "since microversion 1.39. Got: %s" % value)
        any_of = {t.strip() for t in value[3:].split(',')}
        if not all(any_of):
            raise errors.BadRequest(
                _BAD + "Expected 'required' parameter value of the form: "
                "in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: %s" % value)
        if any(n.startswith('!') for n in any_of):
            raise errors.BadRequest(
                _BAD + "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support "
                "forbidden traits. Got: %s" % value)
        return [frozenset(any_of)], set()
    names = [t.strip() for t in value.split(',')]
    # As upstream, any number of leading '!' forbid once.
    forbidden = {n.lstrip('!') for n in names if n.startswith('!')}
    if not all(names) or not all(forbidden):
        form = ('HW_CPU_X86_VMX,!CUSTOM_MAGIC' if allow_forbidden
                else 'HW_CPU_X86_VMX,CUSTOM_MAGIC')
        raise errors.BadRequest(
            _BAD + "Expected 'required' parameter value of the form: %s. "
            "Got an empty trait in: %s" % (form, value))
    if forbidden and not allow_forbidden:
        raise errors.BadRequest(
            _BAD + "Expected 'required' parameter value of the form: "
            "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" % value)
    return [frozenset([n]) for n in names if not n.startswith('!')], forbidden


def parse_member_of_value(value: str) -> tuple[set[str], set[str]]:
    """One ``member_of`` value -> (required any-of set, forbidden set)."""
    if ',' in value and not value.startswith(('in:', '!in:')):
        raise errors.BadRequest(
            "Multiple values for 'member_of' must be prefixed with the 'in:' or "
            "'!in:' keyword using the valid microversion. Got: %s" % value)
    required: set[str] = set()
    forbidden: set[str] = set()
    if value.startswith('!in:'):
        forbidden = set(value[4:].split(','))
    elif value.startswith('!'):
        forbidden = {value[1:]}
    elif value.startswith('in:'):
        required = set(value[3:].split(','))
    else:
        required = {value}
    for agg in required | forbidden:
        if not util.is_uuid(agg):
            raise errors.BadRequest(
                _BAD + "Expected 'member_of' parameter to contain valid UUID(s). "
                "Got: %s" % agg)
    # As given: upstream finds an aggregate only by the spelling it stored
    # (on every engine).
    return required, forbidden


def parse_in_tree(value: str) -> str:
    """An ``in_tree`` value -> the provider uuid, as given (found as the
    database compares it: ``ResourceView.provider_of``)."""
    if not util.is_uuid(value.strip()):
        raise errors.BadRequest(
            _BAD + "Expected 'in_tree' parameter to be a format of uuid. Got: %s" % value)
    return value.strip()


def parse_member_of(values: list[str], version: microversion.Version,
                    suffix: str = '') -> tuple[list[set[str]], set[str]]:
    """(groups, forbidden): providers must be in one aggregate of every
    group (AND of ORs) and in none of ``forbidden``.

    ``member_of=in:A,B`` is one any-of group (1.3); repeating the parameter
    ANDs groups (1.24); ``!A`` and ``!in:A,B`` forbid (1.32).
    """
    if len(values) > 1 and version < (1, 24):
        raise errors.BadRequest('Multiple member_of%s parameters are not supported'
                                % suffix)
    groups: list[set[str]] = []
    forbidden: set[str] = set()
    for value in values:
        required, refused = parse_member_of_value(value)
        if required:
            groups.append(required)
        if refused:
            if version < (1, 32):
                raise errors.BadRequest('Forbidden member_of%s parameters are not '
                                        'supported in the specified microversion' % suffix)
            forbidden |= refused
    return groups, forbidden


def parse_required(values: list[str], version: microversion.Version) -> Groups:
    """(groups, forbidden) trait names: a provider has one trait of every
    group and none of ``forbidden``.

    Before 1.39, as upstream does, only the last ``required`` counts.
    """
    if version < (1, 39):
        values = values[-1:]
    groups: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        required, refused = parse_traits(value, version >= (1, 22), version >= (1, 39))
        groups += required
        forbidden |= refused
    return groups, forbidden
