"""placement-manage: database administration, under upstream placement's
command names (deployment tools call them).

  placement-manage [--config-file F]... [--config-dir D]... [--database-connection URL]
      db sync                      create, upgrade or take over the schema (safe to run again)
      db version                   the schema revisions found: ours and upstream placement's
      db stamp REVISION            record a revision without migrating
      db online_data_migrations    complete rows older releases left incomplete
      db reload-views              make running servers load their resource view again

Each action is a parser and a function taking (args, conf); a new category
or action is one more ``add_parser`` with ``set_defaults(run=...)``.
"""
import argparse
import sys
from typing import NoReturn

from oslo_config import cfg
import sqlalchemy as sa

from placement_server import cmd
from placement_server.capacity import explain_cmd
from placement_server.db import api as db_api
from placement_server.db import changes
from placement_server.db import migration
from placement_server.db import online_migrations
from placement_server.db import takeover


def _open(conf: cfg.ConfigOpts, create: bool = True) -> db_api.Database:
    db = cmd.open_database(conf, create=create)
    try:
        migration.check(db)
    except takeover.UnknownRevision as e:
        db.dispose()
        raise cmd.CommandError(str(e))
    return db


def db_sync(args: argparse.Namespace, conf: cfg.ConfigOpts) -> None:
    db = _open(conf)
    try:
        before = migration.found(db)
        try:
            migration.sync(db, conf)
        except sa.exc.DBAPIError as e:   # e.g. a schema stamped at a revision it is not at
            raise cmd.CommandError('db sync failed: %s'
                                   % str(e.orig or e).strip().splitlines()[0])
        after = migration.found(db)
    finally:
        db.dispose()
    taken = (' (taken over from upstream placement revision %s, which upstream still finds)'
             % before.upstream if before.upstream and not before.ours else '')
    print('database %s is at schema revision %s%s'
          % (cmd.safe_url(conf.placement_database.connection), after.ours, taken))


def db_version(args: argparse.Namespace, conf: cfg.ConfigOpts) -> None:
    db = _open(conf, create=False)
    try:
        schema = migration.found(db)
    finally:
        db.dispose()
    if not (schema.ours or schema.upstream):
        print('none (empty database: run "db sync")')
    elif not schema.ours:
        print('upstream placement %s; ours none (run "db sync" to take it over)'
              % schema.upstream)
    elif schema.upstream:
        print('%s; upstream placement %s' % (schema.ours, schema.upstream))
    else:
        print(schema.ours)


def db_stamp(args: argparse.Namespace, conf: cfg.ConfigOpts) -> None:
    db = cmd.open_database(conf)
    try:
        migration.stamp(db, args.version)
    except takeover.UnknownRevision as e:
        raise cmd.CommandError(str(e))
    finally:
        db.dispose()
    print('stamped schema revision %s' % args.version)


def db_online_data_migrations(args: argparse.Namespace, conf: cfg.ConfigOpts) -> None:
    db = _open(conf, create=False)
    try:
        if not any(migration.found(db)):
            raise cmd.CommandError('empty database: run "placement-manage db sync" first')
        with db.writer() as conn:
            done = online_migrations.run_all(conn, conf)
            if any(done.values()):
                changes.invalidate_all(conn)   # rows changed behind the views
    finally:
        db.dispose()
    for name, count in done.items():
        print('%s: %d rows completed' % (name, count))


def db_reload_views(args: argparse.Namespace, conf: cfg.ConfigOpts) -> None:
    db = _open(conf, create=False)
    try:
        with db.writer() as conn:
            changes.invalidate_all(conn)
    finally:
        db.dispose()
    print('every placement-server worker reloads its resource view at its next request')


def positive_integer(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(text)
    return value


def _parser() -> cmd.ArgumentParser:
    parser = cmd.ArgumentParser(prog='placement-manage',
                                description='Administer the placement database.')
    cmd.add_conf_arguments(parser)
    commands = parser.add_subparsers(dest='category', metavar='CATEGORY', required=True)
    db = commands.add_parser('db', help='schema management')
    actions = db.add_subparsers(dest='action', metavar='ACTION', required=True)
    actions.add_parser(
        'sync', help='create or upgrade the schema, taking over an upstream placement '
                     'database, and add the standard resource classes and traits '
                     '(safe to run again)').set_defaults(run=db_sync)
    actions.add_parser(
        'version', help="print the database's schema revisions (ours, and upstream "
                        "placement's when it made the database)").set_defaults(run=db_version)
    stamp = actions.add_parser('stamp', help='record a schema revision (ours, "head", or '
                                             "upstream placement's) without migrating")
    stamp.add_argument('version', metavar='REVISION')
    stamp.set_defaults(run=db_stamp)
    online = actions.add_parser('online_data_migrations',
                                help='complete rows older placement releases left '
                                     'incomplete (safe to run again)')
    online.add_argument('--max-count', type=positive_integer, metavar='N',
                        help='accepted for upstream compatibility; every row is '
                             'completed in one run')
    online.set_defaults(run=db_online_data_migrations)
    actions.add_parser(
        'reload-views', help='make every placement-server worker load its resource view '
                             'again at its next request (after rows were changed by '
                             'hand, or a backup restored under running servers)'
    ).set_defaults(run=db_reload_views)
    explain_cmd.add_to(commands)
    return parser


def _main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    args.run(args, cmd.load_conf(args))
    return 0


def main(argv: list[str] | None = None) -> NoReturn:
    sys.exit(cmd.run(_main, argv))


if __name__ == '__main__':
    main()
