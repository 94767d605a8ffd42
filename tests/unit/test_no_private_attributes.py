"""No code of ours reads or writes a library's private attribute or passes
it a private keyword: SQLAlchemy, oslo.db, gunicorn and requests keep the
right to change those in any release, and a change would break us with
no test saying why (issue 28).

The rule, read from the source (ast): an attribute ``x._name`` (not a
``__dunder__``) is refused unless ``x`` is ``self``, ``cls``, ``super()``,
a module of ours, or ``_name`` is a member that the same module defines
itself (a class of the module using another instance's private member:
``copy.copy(self)._lock``); a keyword argument ``_name=`` is refused
everywhere. No exceptions are listed: every library hook the server uses
is public (tests/unit/test_library_hooks.py holds their signatures).
"""
import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ('placement_server', 'tracker')


def _our_modules(tree):
    """Names the module binds to modules (or names) of our packages."""
    ours = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or '').split('.')[0] in PACKAGES:
            ours.update(alias.asname or alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            ours.update(alias.asname or alias.name.split('.')[0] for alias in node.names
                        if alias.name.split('.')[0] in PACKAGES)
    return ours


def _own_members(tree):
    """Private names the module defines: methods and class attributes of
    its classes, and attributes it sets on self or cls."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and (
                isinstance(node.value, ast.Name) and node.value.id in ('self', 'cls')):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return {n for n in names if n.startswith('_')}


def _dunder(name):
    return name.startswith('__') and name.endswith('__')


def private_uses(source, filename='<source>'):
    """(line, what) of each private attribute or keyword ``source`` uses."""
    tree = ast.parse(source, filename)
    ours, own = _our_modules(tree), _own_members(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith('_') and not _dunder(
                node.attr):
            value = node.value
            if isinstance(value, ast.Name) and (value.id in ('self', 'cls') or value.id in ours):
                continue
            if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                    and value.func.id == 'super'):
                continue
            if node.attr in own:
                continue
            found.append((node.lineno, '%s.%s' % (ast.unparse(value), node.attr)))
        elif isinstance(node, ast.keyword) and node.arg and node.arg.startswith('_'):
            found.append((node.lineno, '%s=' % node.arg))
    return found


def _sources():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob('*.py'))


@pytest.mark.parametrize('path', list(_sources()), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_attribute_of_a_library_is_used(path):
    found = private_uses(path.read_text(), str(path))
    assert not found, '%s: %s' % (path.relative_to(ROOT), ', '.join(
        'line %d %s' % use for use in found))


@pytest.mark.parametrize('source, what', [
    # what the write path and PlacementDirect did before issue 28
    ('engine._has_events = False', 'engine._has_events'),
    ('dialect = fairy._pool._dialect', 'fairy._pool'),
    ('resp._content = wresp.body', 'resp._content'),
    ('engines.create_engine(url, _engine_target=target)', '_engine_target='),
    ('import sqlalchemy as sa\nsa.engine.base._Events', 'sa.engine.base._Events'),
])
def test_the_check_catches_a_private_use(source, what):
    assert what in [use for _, use in private_uses(source)]


@pytest.mark.parametrize('source', [
    'class A:\n    def f(self):\n        return self._x',
    'class A:\n    def f(cls):\n        return super()._x',
    'from placement_server.db import api\napi._MYSQL_INIT',
    'class A:\n    def __init__(self):\n        self._lock = 1\n'
    '    def twin(self, other):\n        other._lock = 2',
    'x.__class__',
])
def test_the_check_leaves_our_own_private_members_alone(source):
    assert private_uses(source) == []
