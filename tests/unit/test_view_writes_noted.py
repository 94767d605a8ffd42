"""Every write to a table the resource view reads notes its change itself.

Workers keep a resource view (placement_server/view.py) and learn what
changed only from the change sequence (placement_server/db/changes.py): a
write that does not note the providers or names it changed is never seen
by a worker. So any INSERT, UPDATE or DELETE on those tables must sit in a
function that calls ``changes.note``, ``changes.note_names`` or
``changes.note_created`` itself (or a function it is nested in does), or
be one of the few listed below with the reason its caller is trusted.

The scan reads placement_server/'s source (ast): SQLAlchemy's
``TABLE.insert()/.update()/.delete()`` and ``sa.insert/update/delete(TABLE)``,
``insert_later(conn, TABLE, ...)``, and SQL text naming one of the tables
after INSERT INTO, UPDATE or DELETE FROM. A statement built at module level
counts where its name is used. A receiver the scan cannot resolve to a
table (a loop variable) counts as one of the view's tables.
(What each write must note, exactly: tests/functional/test_change_sequence.py.)
"""
import ast
import os
import re

import pytest

import placement_server

ROOT = os.path.dirname(placement_server.__file__)

# What the view reads (view.py) and the name tables it caches.
VIEW_TABLES = {'resource_providers', 'inventories', 'allocations',
               'resource_provider_traits', 'resource_provider_aggregates',
               'placement_aggregates', 'resource_classes', 'traits'}
NOTES = {'note', 'note_names', 'note_created'}

# Writes whose noting is their caller's, each with the reason.
EXEMPT = {
    # Schema migrations run with no server serving.
    'db/migrations/': 'alembic revisions: run by db sync, before the server serves',
    # Its caller invalidates every worker's view (placement-manage db
    # online_data_migrations) or runs before the change tables exist (the
    # takeover of an upstream database in db sync).
    'db/online_migrations.py:root_provider_ids':
        'callers invalidate every view (changes.invalidate_all) or precede the views',
    # The queueing helper itself: its callers are scanned (its table argument).
    'db/api.py:insert_later': 'the helper; each call names its table and is scanned',
    # Rows of projects, users and consumer types (_id_of's callers name them).
    'db/consumers.py:_insert': 'inserts into the table its caller names: none of the view\'s',
    # A new aggregate's row is seen by the view only through a provider's
    # link to it (resource_provider_aggregates), whose writer notes the
    # provider; aggregate rows are never updated or deleted.
    'db/aggregates.py:ensure': 'a new aggregate: seen only through a link, which is noted',
    # Builds the statement take_and_read sends; take_and_read notes it.
    'db/providers.py:_taken_and_read': 'builds the statement take_and_read sends and notes',
}

SQL_WRITE = re.compile(r'\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)', re.I)
VERBS = {'insert', 'update', 'delete'}


def sources():
    for folder, _, files in os.walk(ROOT):
        for name in sorted(files):
            if name.endswith('.py'):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, ROOT).replace(os.sep, '/'), path


def exempt(relpath, qualname):
    return any(relpath.startswith(key) if key.endswith('/') else
               key == '%s:%s' % (relpath, qualname) for key in EXEMPT)


class Module:
    """One source file: its table aliases, its write sites, its functions."""

    def __init__(self, relpath, tree):
        self.relpath = relpath
        self.tree = tree
        self.parents = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        # NAME = tables.x (or x from a table module) at module level
        self.aliases = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                table = self.table_of(node.value, aliases_only=False)
                if table is not None:
                    self.aliases[node.targets[0].id] = table

    def table_of(self, node, aliases_only=True):
        """The table a receiver names: a table's name, '?' when unknown,
        '' when it is surely no table of the view's (not a table at all)."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id == 'tables':
            return node.attr
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return None if not aliases_only else '?'
        return None if not aliases_only else '?'

    def functions(self, node):
        """The functions enclosing ``node``, innermost first."""
        found = []
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append(node)
        return found

    def qualname(self, node):
        names = [f.name for f in reversed(self.functions(node))]
        return '.'.join(names) or '<module>'

    def writes(self):
        """(node, table) of each write statement built in this file."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Attribute) and func.attr in VERBS \
                        and not node.args and not node.keywords:
                    yield node, self.table_of(func.value)
                elif isinstance(func, ast.Attribute) and func.attr in VERBS \
                        and isinstance(func.value, ast.Name) and func.value.id in ('sa', 'sql') \
                        and node.args:
                    yield node, self.table_of(node.args[0])
                elif (getattr(func, 'attr', None) or getattr(func, 'id', None)) == 'insert_later' \
                        and len(node.args) >= 2:
                    yield node, self.table_of(node.args[1])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and not isinstance(self.parents.get(node), ast.Expr):   # a docstring
                for match in SQL_WRITE.finditer(node.value):
                    yield node, match.group(1).lower()

    def notes(self, function):
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                func = node.func
                name = getattr(func, 'attr', None) or getattr(func, 'id', None)
                if name in NOTES:
                    return True
        return False

    def module_level_name(self, node):
        """The module-level name a statement built outside functions is
        bound to, or None."""
        while node in self.parents:
            parent = self.parents[node]
            if isinstance(parent, ast.Assign) and parent in self.tree.body:
                target = parent.targets[0]
                return target.id if isinstance(target, ast.Name) else None
            node = parent
        return None


def derived(module, constants):
    """``constants`` ({(name, table)}: module-level write statements) and
    those built from them at module level (``_TAKE_R = _TAKE.returning()``)."""
    constants = set(constants)
    grown = True
    while grown:
        grown = False
        for node in ast.walk(module.tree):
            if not isinstance(node, ast.Name) or module.functions(node):
                continue
            name = module.module_level_name(node)
            for source, table in list(constants):
                if node.id == source and name and (name, table) not in constants:
                    constants.add((name, table))
                    grown = True
    return constants


def uses(modules, relpath, name):
    """(module, node) where the module-level ``name`` of ``relpath`` is
    read in a function (in its module, or elsewhere as ``module.name``)."""
    for other_path, other in modules.items():
        for node in ast.walk(other.tree):
            here = (isinstance(node, ast.Name) and node.id == name and other_path == relpath
                    and isinstance(node.ctx, ast.Load) and other.functions(node))
            if here or (isinstance(node, ast.Attribute) and node.attr == name):
                yield other, node


def unnoted_writes():
    modules = {}
    for relpath, path in sources():
        with open(path) as f:
            modules[relpath] = Module(relpath, ast.parse(f.read(), path))
    found = []
    for relpath, module in modules.items():
        constants = set()
        for node, table in module.writes():
            if table not in VIEW_TABLES and table != '?':
                continue
            if module.functions(node):
                found.extend(_check(module, node, table))
                continue
            name = module.module_level_name(node)
            if name is None:
                found.append('%s:%d: a write to %s outside any function'
                             % (relpath, node.lineno, table))
            else:
                constants.add((name, table))
        # a statement kept at module level writes where it is used
        for name, table in derived(module, constants):
            for other, node in uses(modules, relpath, name):
                found.extend(_check(other, node, table))
    return sorted(set(found))


def _check(module, node, table):
    if exempt(module.relpath, module.qualname(node)):
        return []
    functions = module.functions(node)
    if any(module.notes(f) for f in functions):
        return []
    where = module.qualname(node)
    return ['%s:%d: %s writes %s and notes no change (changes.note*)'
            % (module.relpath, node.lineno, where,
               'a table it names by a variable' if table == '?' else table)]


def test_every_write_the_view_reads_is_noted_where_it_is_made():
    found = unnoted_writes()
    assert found == [], '\n'.join(['writes the resource view would never see:'] + found)


@pytest.mark.parametrize('code,expected', [
    ('def f(conn):\n    conn.execute(tables.traits.insert())\n', ['f writes traits']),
    ('RP = tables.resource_providers\n'
     'def f(conn):\n    conn.execute(RP.update().where(RP.c.id == 1))\n',
     ['f writes resource_providers']),
    ('def f(conn):\n    api.insert_later(conn, tables.inventories, [])\n',
     ['f writes inventories']),
    ('def f(conn):\n    conn.exec_driver_sql("DELETE FROM allocations WHERE id = 1")\n',
     ['f writes allocations']),
    ('_BUMP = tables.resource_providers.update()\n'
     'def f(conn):\n    conn.execute(_BUMP)\n', ['f writes resource_providers']),
    ('def f(conn, table):\n    conn.execute(table.delete())\n',
     ['f writes a table it names by a variable']),
    ('def f(conn):\n    conn.execute(tables.traits.insert())\n'
     '    changes.note_names(conn)\n', []),
    ('_TAKE = tables.resource_providers.update()\n_TAKE_R = prepared(_TAKE.returning())\n'
     'def f(conn):\n    conn.execute(_TAKE_R)\n', ['f writes resource_providers']),
    ('def f(conn):\n    """UPDATE traits: in a docstring."""\n'
     '    conn.execute(tables.consumers.update())\n', []),
])
def test_the_scan_finds_a_write_that_notes_nothing(code, expected, monkeypatch, tmp_path):
    (tmp_path / 'db').mkdir()
    (tmp_path / 'db' / 'writes.py').write_text(code)
    monkeypatch.setattr(__import__(__name__, fromlist=['ROOT']), 'ROOT', str(tmp_path))
    found = [line.split(': ', 1)[1].split(' and notes')[0] for line in unnoted_writes()]
    assert found == expected
