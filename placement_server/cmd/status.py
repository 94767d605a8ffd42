"""placement-status upgrade check: is this database ready for this code?

Exit status as every OpenStack ``*-status upgrade check``: 0 all checks
passed, 1 a warning, 2 a failure (the service would not work), 255 the
check itself could not run (e.g. the database is unreachable).
"""
import sys

import os_resource_classes
import os_traits
import sqlalchemy as sa

from placement_server import cmd
from placement_server.db import migration
from placement_server.db import tables

SUCCESS, WARNING, FAILURE = 0, 1, 2


def check_schema(db):
    have, want = migration.current(db), migration.head()
    if have == want:
        return SUCCESS, 'schema revision %s is current' % have
    return FAILURE, ('schema revision is %s, this code needs %s: run '
                     '"placement-manage db sync"' % (have or 'none', want))


def check_standard_names(db):
    with db.reader() as conn:
        classes = set(conn.scalars(sa.select(tables.resource_classes.c.name)))
        traits = set(conn.scalars(sa.select(tables.traits.c.name)))
    missing = (len(set(os_resource_classes.STANDARDS) - classes)
               + len(set(os_traits.get_traits()) - traits))
    if not missing:
        return SUCCESS, 'all standard resource classes and traits are present'
    return WARNING, ('%d standard resource classes or traits are missing: run '
                     '"placement-manage db sync"' % missing)


def _parser():
    parser = cmd.ArgumentParser(prog='placement-status',
                                description='Check that placement can run on its database.')
    cmd.add_conf_arguments(parser)
    commands = parser.add_subparsers(dest='category', metavar='CATEGORY', required=True)
    upgrade = commands.add_parser('upgrade', help='upgrade readiness')
    actions = upgrade.add_subparsers(dest='action', metavar='ACTION', required=True)
    actions.add_parser('check', help='run every check and report each one')
    return parser


def _main(argv):
    args = _parser().parse_args(argv)
    conf = cmd.load_conf(args)
    db = cmd.open_database(conf)
    names = {SUCCESS: 'Success', WARNING: 'Warning', FAILURE: 'Failure'}
    worst = SUCCESS
    try:
        for title, check in (('Database schema', check_schema),
                             ('Standard resource classes and traits', check_standard_names)):
            if title != 'Database schema' and worst == FAILURE:
                break       # no tables to look into
            code, detail = check(db)
            worst = max(worst, code)
            print('%s: %s (%s)' % (title, names[code], detail))
    finally:
        db.dispose()
    return worst


def main(argv=None):
    sys.exit(cmd.run(_main, argv, error_status=255))


if __name__ == '__main__':
    main()
