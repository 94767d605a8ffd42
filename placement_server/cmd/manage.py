"""placement-manage: database administration.

  placement-manage [--config-file F] [--database-connection URL] db sync
  placement-manage ... db version
  placement-manage ... db reload-views
"""
import sys

from placement_server import cmd
from placement_server.db import changes
from placement_server.db import migration


def _parser():
    parser = cmd.ArgumentParser(prog='placement-manage',
                                description='Administer the placement database.')
    cmd.add_conf_arguments(parser)
    commands = parser.add_subparsers(dest='category', metavar='CATEGORY', required=True)
    db = commands.add_parser('db', help='schema management')
    db_commands = db.add_subparsers(dest='action', metavar='ACTION', required=True)
    db_commands.add_parser('sync', help='create or upgrade the schema and add the '
                                        'standard resource classes and traits '
                                        '(safe to run again)')
    db_commands.add_parser('version', help="print the database's schema revision")
    db_commands.add_parser('reload-views',
                           help='make every placement-server worker load its resource view '
                                'again at its next request (after rows were changed by '
                                'hand, or a backup restored under running servers)')
    return parser


def _main(argv):
    args = _parser().parse_args(argv)
    conf = cmd.load_conf(args)
    db = cmd.open_database(conf)
    try:
        if args.action == 'sync':
            migration.sync(db)
            print('database %s is at schema revision %s'
                  % (cmd.safe_url(conf.placement_database.connection), migration.current(db)))
        elif args.action == 'reload-views':
            with db.writer() as conn:
                changes.invalidate_all(conn)
            print('every placement-server worker reloads its resource view at its next request')
        else:
            print(migration.current(db) or 'none (empty database: run "db sync")')
    finally:
        db.dispose()
    return 0


def main(argv=None):
    sys.exit(cmd.run(_main, argv))


if __name__ == '__main__':
    main()
