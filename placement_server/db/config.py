"""Where the placement database is configured, and the refusal when it is not.

Every placement process (the commands, the WSGI application under any
server) finds its configuration and its database the same way, here:

- ``default_config_files()``: ``$OS_PLACEMENT_CONFIG_DIR/placement.conf``
  when that variable is set (a directory that does not exist is an error:
  a typo must not silently drop the operator's configuration), otherwise
  oslo.config's usual search for ``placement.conf``.
- ``connection(conf)``: ``[placement_database] connection``, or
  ``NotConfigured`` whose one line says where it looked. There is no
  default database: as upstream placement does, a process without one
  refuses to run rather than create a database somewhere unexpected.
"""
from collections.abc import Mapping
import os
from typing import Any

from oslo_config import cfg

PROJECT = 'placement'
CONFIG_FILE = 'placement.conf'
CONFIG_DIR_VARIABLE = 'OS_PLACEMENT_CONFIG_DIR'
CONNECTION_VARIABLE = 'OS_PLACEMENT_DATABASE__CONNECTION'


class NotConfigured(Exception):
    """No usable configuration; the message is one line for the operator."""


def _config_dir(environ: Mapping[str, str]) -> str:
    return (environ.get(CONFIG_DIR_VARIABLE) or '').strip()


def default_config_files(environ: Mapping[str, str] | None = None) -> list[str]:
    """The config files a process reads when none is named on its command line."""
    environ = os.environ if environ is None else environ
    config_dir = _config_dir(environ)
    if config_dir:
        if not os.path.isdir(config_dir):
            raise NotConfigured('%s=%s: no such directory' % (CONFIG_DIR_VARIABLE, config_dir))
        path = os.path.join(config_dir, CONFIG_FILE)
        return [path] if os.path.exists(path) else []
    return list(cfg.find_config_files(project=PROJECT))


def searched_dirs() -> list[str]:
    """Where oslo.config looks for placement.conf by default (its documented order)."""
    return ['~/.%s' % PROJECT, '~', '/etc/%s' % PROJECT, '/etc']


def where_looked(conf: Any, environ: Mapping[str, str] | None = None) -> str:
    """A short phrase naming the configuration ``conf`` was read from."""
    environ = os.environ if environ is None else environ
    files = list(getattr(conf, 'config_file', None) or ())
    given = getattr(conf, 'config_dir', None)
    dirs = [given] if isinstance(given, str) else list(given or ())
    read = ['config file %s' % f for f in files] + ['config dir %s' % d for d in dirs]
    if read:
        looked = ', '.join(read)
    elif _config_dir(environ):
        looked = 'no %s in %s=%s' % (CONFIG_FILE, CONFIG_DIR_VARIABLE, _config_dir(environ))
    else:
        looked = 'no %s in %s' % (CONFIG_FILE, ', '.join(searched_dirs()))
    return looked + ', nor %s' % CONNECTION_VARIABLE


def connection(conf: Any, environ: Mapping[str, str] | None = None) -> str:
    """The database URL ``conf`` names, or NotConfigured saying where it looked."""
    url = conf.placement_database.connection
    if url:
        return str(url)
    raise NotConfigured('no database configured: [placement_database] connection is not '
                        'set (looked in: %s)' % where_looked(conf, environ))
