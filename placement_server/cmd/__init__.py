"""Console entry points: placement-server, placement-manage, placement-status.

A user's mistake ends a command with one line on stderr and a non-zero
exit status, never a traceback.
"""
import argparse
from collections.abc import Callable
from collections.abc import Mapping
from importlib import metadata
import os
import sys
from typing import TYPE_CHECKING
from typing import NoReturn

from oslo_config import cfg
import sqlalchemy as sa

from placement_server.db import config

if TYPE_CHECKING:   # a command loads the database layer only when it opens one
    from placement_server.db import api as db_api

# argparse's and oslo.config's status for a command line they refuse.
USAGE_STATUS = 2


class CommandError(Exception):
    """A problem the user can fix; its message is the whole report."""


class UsageError(CommandError):
    """A command line the command does not accept (exit status 2)."""


class ArgumentParser(argparse.ArgumentParser):

    def error(self, message: str) -> NoReturn:
        raise UsageError('%s: %s (see --help)' % (self.prog, message))


def version() -> str:
    """This distribution's version, which every command's --version prints."""
    try:
        return metadata.version('compute-tracker')
    except metadata.PackageNotFoundError:
        return 'unknown'


def add_conf_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--version', action='version', version=version())
    parser.add_argument('--config-file', action='append', metavar='PATH',
                        help='placement.conf to read (repeatable); default: '
                             '$OS_PLACEMENT_CONFIG_DIR/placement.conf or '
                             '/etc/placement/placement.conf')
    parser.add_argument('--config-dir', action='append', metavar='DIR',
                        help='a directory whose *.conf files are read after '
                             'the config files, in name order (repeatable)')
    parser.add_argument('--database-connection', metavar='URL',
                        help='SQLAlchemy URL of the database, overriding '
                             '[placement_database] connection')


def oslo_arguments(args: argparse.Namespace) -> list[str]:
    """--config-file and --config-dir as oslo.config reads them; each must exist."""
    argv = []
    for option, paths, exists in (('--config-file', args.config_file, os.path.isfile),
                                  ('--config-dir', args.config_dir, os.path.isdir)):
        for path in paths or ():
            if not exists(path):
                raise CommandError('%s %s: no such %s'
                                   % (option, path, option.split('-')[-1]))
            argv += [option, path]
    return argv


def default_config_files() -> list[str]:
    """The config files read when none is named; CommandError for a bad
    $OS_PLACEMENT_CONFIG_DIR."""
    try:
        return config.default_config_files()
    except config.NotConfigured as e:
        raise CommandError(str(e))


def load_conf(args: argparse.Namespace,
              overrides: Mapping[tuple[str, str], object] | None = None) -> cfg.ConfigOpts:
    """The service configuration, with the command line on top."""
    from placement_server import deploy
    argv = oslo_arguments(args)
    try:
        conf = deploy.load_conf(argv, config_files=default_config_files())
    except cfg.Error as e:   # oslo.config's parse and value errors
        raise CommandError('bad configuration: %s' % str(e).strip().splitlines()[0])
    options = dict(overrides or {})
    if getattr(args, 'database_connection', None):
        options[('placement_database', 'connection')] = args.database_connection
    for (group, name), value in options.items():
        try:
            conf.set_override(name, value, group=group)
        except ValueError as e:
            raise CommandError('bad value for --%s: %s' % (name.replace('_', '-'), e))
    return conf


def open_database(conf: cfg.ConfigOpts, create: bool = True) -> 'db_api.Database':
    """The configured database, or a CommandError saying why not: none
    configured (where we looked), unreachable, or (``create`` false, for
    read-only commands) an SQLite file that does not exist yet."""
    from placement_server import deploy
    try:
        url = config.connection(conf)
    except config.NotConfigured as e:
        raise CommandError(str(e))
    try:
        parsed = sa.engine.make_url(url)
    except Exception:
        raise CommandError('cannot use database %s: not an SQLAlchemy URL' % safe_url(url))
    if (not create and parsed.get_backend_name() == 'sqlite'
            and parsed.database not in (None, '', ':memory:')
            and not os.path.exists(parsed.database)):
        raise CommandError('cannot use database %s: no such file' % safe_url(url))
    try:
        db = deploy.open_database(conf)
        with db.engine.connect() as conn:
            conn.execute(sa.text('SELECT 1'))
    except Exception as e:
        reason = str(getattr(e, 'orig', None) or e).strip().splitlines()[0]
        raise CommandError('cannot use database %s: %s' % (safe_url(url), reason))
    return db


def safe_url(url: str | sa.URL) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return '<unparsable URL>'


def run(main: Callable[[list[str]], int | None], argv: list[str] | None = None,
        error_status: int = 1) -> int:
    """Call ``main(argv)``; a CommandError is one line and ``error_status``."""
    try:
        return main(sys.argv[1:] if argv is None else argv) or 0
    except UsageError as e:
        print(str(e), file=sys.stderr)
        return USAGE_STATUS
    except CommandError as e:
        print(str(e), file=sys.stderr)
        return error_status
    except KeyboardInterrupt:
        return 130
