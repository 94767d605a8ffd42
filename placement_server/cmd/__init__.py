"""Console entry points: placement-server, placement-manage, placement-status.

A user's mistake ends a command with one line on stderr and a non-zero
exit status, never a traceback.
"""
import argparse
import sys

import sqlalchemy as sa


class CommandError(Exception):
    """A problem the user can fix; its message is the whole report."""


class ArgumentParser(argparse.ArgumentParser):

    def error(self, message):
        raise CommandError('%s: %s (see --help)' % (self.prog, message))


def add_conf_arguments(parser):
    parser.add_argument('--config-file', action='append', metavar='PATH',
                        help='placement.conf to read (repeatable); default: '
                             '$OS_PLACEMENT_CONFIG_DIR/placement.conf or '
                             '/etc/placement/placement.conf')
    parser.add_argument('--database-connection', metavar='URL',
                        help='SQLAlchemy URL of the database, overriding '
                             '[placement_database] connection')


def load_conf(args, overrides=None):
    """The service configuration, with the command line on top."""
    from placement_server import deploy
    for path in args.config_file or ():
        try:
            open(path).close()
        except OSError as e:
            raise CommandError('cannot read config file %s: %s' % (path, e.strerror))
    try:
        conf = deploy.load_conf(config_files=args.config_file)
    except Exception as e:   # oslo.config's parse and value errors
        raise CommandError('bad configuration: %s' % e)
    overrides = dict(overrides or {})
    if args.database_connection:
        overrides[('placement_database', 'connection')] = args.database_connection
    for (group, name), value in overrides.items():
        try:
            conf.set_override(name, value, group=group)
        except ValueError as e:
            raise CommandError('bad value for --%s: %s' % (name.replace('_', '-'), e))
    return conf


def open_database(conf):
    """The configured database, or a CommandError saying why not."""
    from placement_server import deploy
    url = conf.placement_database.connection
    try:
        db = deploy.open_database(conf)
        with db.engine.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
    except Exception as e:
        reason = str(getattr(e, 'orig', None) or e).strip().splitlines()[0]
        raise CommandError('cannot use database %s: %s' % (safe_url(url), reason))
    return db


def safe_url(url):
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return '<unparsable URL>'


def run(main, argv=None, error_status=1):
    """Call ``main(argv)``; a CommandError is one line and ``error_status``."""
    try:
        return main(sys.argv[1:] if argv is None else argv) or 0
    except CommandError as e:
        print(str(e), file=sys.stderr)
        return error_status
    except KeyboardInterrupt:
        return 130
