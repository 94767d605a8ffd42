"""placement_server.query: the provider-selecting query parameters, parsed
per microversion (the HTTP behaviour is in tests/functional)."""
import pytest

from placement_server import errors
from placement_server import microversion
from placement_server import query

A = 'a99a0000-0000-4000-8000-000000000001'
B = 'a99a0000-0000-4000-8000-000000000002'


def v(text):
    return microversion.Version.parse(text)


def test_member_of_groups_and_forbidden():
    assert query.parse_member_of([A], v('1.3')) == ([{A}], set())
    assert query.parse_member_of(['in:%s,%s' % (A, B)], v('1.3')) == ([{A, B}], set())
    assert query.parse_member_of([A, 'in:%s' % B], v('1.24')) == ([{A}, {B}], set())
    assert query.parse_member_of(['!in:%s,%s' % (A, B)], v('1.32')) == ([], {A, B})
    # Dashless and upper case uuids are taken as spelt (upstream finds an
    # aggregate by the spelling it stored).
    spelt = A.replace('-', '').upper()
    assert query.parse_member_of([spelt], v('1.3')) == ([{spelt}], set())


@pytest.mark.parametrize('values,version', [
    ([A, B], '1.23'),                 # repetition from 1.24
    (['!' + A], '1.31'),              # forbidden from 1.32
    (['%s,%s' % (A, B)], '1.39'),     # a list needs in:
    (['in:!' + A], '1.39'),           # ! goes before in:
    (['nope'], '1.3'),
    (['in:'], '1.3'),
])
def test_member_of_bad(values, version):
    with pytest.raises(errors.BadRequest):
        query.parse_member_of(values, v(version))


def test_required_groups_and_forbidden():
    assert query.parse_required(['A,B'], v('1.18')) == ([{'A'}, {'B'}], set())
    assert query.parse_required(['A,!B'], v('1.22')) == ([{'A'}], {'B'})
    assert query.parse_required(['in:A,B', '!C'], v('1.39')) == ([{'A', 'B'}], {'C'})
    # Before 1.39 only the last repeated parameter counts, as upstream.
    assert query.parse_required(['A', 'B'], v('1.38')) == ([{'B'}], set())


@pytest.mark.parametrize('values,version', [
    (['!A'], '1.21'),
    (['in:A,B'], '1.38'),
    (['in:A,!B'], '1.39'),
    (['A,,B'], '1.18'),
    ([''], '1.18'),
    (['!'], '1.22'),
])
def test_required_bad(values, version):
    with pytest.raises(errors.BadRequest):
        query.parse_required(values, v(version))


def test_resources():
    assert query.parse_resources('VCPU:2,MEMORY_MB:1024') == {'VCPU': 2, 'MEMORY_MB': 1024}


@pytest.mark.parametrize('value', ['', 'VCPU', 'VCPU:', ':1', 'VCPU:0', 'VCPU:-1',
                                   'VCPU:x', 'VCPU:1,', 'VCPU:1.5'])
def test_resources_bad(value):
    with pytest.raises(errors.BadRequest):
        query.parse_resources(value)
