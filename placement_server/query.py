"""The query parameters that select providers, parsed per microversion.

``member_of``, ``required``, ``resources`` and ``in_tree`` mean the same on
GET /resource_providers and GET /allocation_candidates; both parse them
here into plain values (groups of uuids or trait names, amounts by class
name) that ``db.provider_filters`` turns into SQL.
"""
import uuid as uuidlib

from placement_server import errors


def _bad(detail):
    return errors.BadRequest('Invalid query string parameters: %s' % detail)


def _uuids(text, value):
    found = []
    for item in text.split(','):
        try:
            found.append(str(uuidlib.UUID(item)))
        except ValueError:
            raise _bad("Expected 'member_of' parameter to contain valid UUID(s). "
                       "Got: %s" % value)
    return found


def parse_member_of(values, version):
    """(groups, forbidden): providers must be in one aggregate of every
    group (AND of ORs) and in none of ``forbidden``.

    ``member_of=in:A,B`` is one any-of group (1.3); repeating the parameter
    ANDs groups (1.24); ``!A`` and ``!in:A,B`` forbid (1.32).
    """
    if len(values) > 1 and version < (1, 24):
        raise _bad('Multiple member_of parameters are not supported before '
                   'microversion 1.24.')
    groups, forbidden = [], set()
    for value in values:
        text, negate = value, False
        if text.startswith('!'):
            if version < (1, 32):
                raise errors.BadRequest('Forbidden member_of parameters are not '
                                        'supported before microversion 1.32.')
            text, negate = text[1:], True
        if text.startswith('in:'):
            uuids = _uuids(text[3:], value)
        else:
            uuids = _uuids(text, value)
            if len(uuids) > 1:
                raise errors.BadRequest("Multiple values for 'member_of' must be "
                                        "prefixed with 'in:' or '!in:'. Got: %s" % value)
        if negate:
            forbidden.update(uuids)
        else:
            groups.append(set(uuids))
    return groups, forbidden


def _trait_names(text, value):
    names = text.split(',')
    if not all(n.lstrip('!') for n in names):
        raise _bad("Expected 'required' parameter value of the form: "
                   "HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: %s" % value)
    return names


def parse_required(values, version):
    """(groups, forbidden) trait names: a provider has one trait of every
    group and none of ``forbidden``.

    ``required=A,B`` requires each (1.18); ``!A`` forbids (1.22);
    ``in:A,B`` is an any-of group and the parameter repeats (1.39); before
    that, as upstream does, only the last ``required`` counts.
    """
    if version < (1, 39):
        values = values[-1:]
    groups, forbidden = [], set()
    for value in values:
        if value.startswith('in:'):
            if version < (1, 39):
                raise _bad("The format 'in:A,B' is supported from microversion "
                           "1.39. Got: %s" % value)
            names = _trait_names(value[3:], value)
            if any(n.startswith('!') for n in names):
                raise _bad("Forbidden traits cannot be inside an 'in:' group. "
                           "Got: %s" % value)
            groups.append(set(names))
            continue
        for name in _trait_names(value, value):
            if name.startswith('!'):
                if version < (1, 22):
                    raise _bad("Expected 'required' parameter value of the form: "
                               "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" % value)
                forbidden.add(name[1:])
            else:
                groups.append({name})
    return groups, forbidden


def parse_resources(value):
    """{class name: amount} from ``VCPU:2,MEMORY_MB:1024``."""
    amounts = {}
    for item in value.split(','):
        name, sep, amount = item.partition(':')
        if not sep or not name or not amount:
            raise errors.BadRequest(
                'Badly formed resources parameter. Expected resources query '
                'string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. '
                'Got: %s.' % (value or 'empty string'))
        try:
            amount = int(amount)
        except ValueError:
            amount = 0
        if amount < 1:
            raise errors.BadRequest(
                'Requested resource %s expected positive integer amount. '
                'Got: %s.' % (name, item.partition(':')[2]))
        # More than any provider can hold matches nothing, as upstream on
        # PostgreSQL answers; unbounded, it overflows the database's integers.
        amounts[name] = min(amount, 2 ** 53)
    return amounts
