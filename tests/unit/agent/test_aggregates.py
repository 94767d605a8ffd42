"""The aggregates file and the plan that mirrors it."""
import pytest

from tracker import aggregates

A = '5f0a3e4e-8c1b-4a57-9d0c-7e1f2a3b4c5d'
B = '0b9d2c6e-3f41-4e8a-a2d7-6c5b4a3f2e1d'


def test_load_and_plan(tmp_path):
    path = tmp_path / 'aggregates.yaml'
    path.write_text('aggregates:\n'
                    '  - {name: rack-a, uuid: %s, hosts: [c1, c2]}\n'
                    '  - {name: ssd, uuid: %s, hosts: [c2]}\n' % (A.upper(), B))
    described = aggregates.load(str(path))
    assert [(a.name, a.uuid, a.hosts) for a in described] == [
        ('rack-a', A, ['c1', 'c2']), ('ssd', B, ['c2'])]
    # placement has c3 in rack-a and c1 in ssd: the file is the whole truth
    present = {A: ['c1', 'c3'], B: ['c1']}
    assert [(member, a.name, h) for member, a, h in aggregates.plan(described, present)] == [
        (True, 'rack-a', 'c1'), (True, 'rack-a', 'c2'), (False, 'rack-a', 'c3'),
        (False, 'ssd', 'c1'), (True, 'ssd', 'c2')]


@pytest.mark.parametrize('text, message', [
    ('- a\n', 'expected a mapping with an "aggregates" list'),
    ('aggregates: [{name: x, hosts: [h]}]\n', '"uuid" must be a uuid'),
    ('aggregates: [{uuid: %s}]\n' % A, '"name" must be a non-empty string'),
    ('aggregates: [{name: x, uuid: %s, hosts: h}]\n' % A, '"hosts" must be a list'),
    ('aggregates: [{name: x, uuid: %s, color: red}]\n' % A, 'unknown key(s) color'),
    ('aggregates: [{name: x, uuid: %s}, {name: x, uuid: %s}]\n' % (A, B),
     'described twice'),
    ('aggregates: [\n', 'not YAML'),
])
def test_bad_file_says_why(tmp_path, text, message):
    path = tmp_path / 'aggregates.yaml'
    path.write_text(text)
    with pytest.raises(aggregates.AggregateFileError) as err:
        aggregates.load(str(path))
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_find_by_name_or_uuid():
    described = aggregates.parse({'aggregates': [{'name': 'rack-a', 'uuid': A}]})
    assert aggregates.find(described, 'rack-a') == A
    assert aggregates.find(described, B.upper()) == B
    with pytest.raises(aggregates.AggregateFileError, match='unknown aggregate'):
        aggregates.find(described, 'rack-z')
