"""Assembling the deployed service: configuration, database, application.

``placement_server.wsgi_app`` (for any WSGI server) and ``placement-server``
both build the application here. Configuration comes, as upstream
placement does it, from
``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` when that variable is set,
otherwise from oslo.config's usual places (/etc/placement/placement.conf,
...), and any option can be given by environment variable:
``OS_<GROUP>__<OPTION>``, e.g. ``OS_PLACEMENT_DATABASE__CONNECTION``.
Without a database connection there is no application:
placement_server.db.config says where it looked.
"""
from collections.abc import Iterable
import importlib.metadata
import logging as std_logging
import os
from typing import Any
from wsgiref.types import WSGIApplication

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from placement_server import catch_up
from placement_server import conf as conf_mod
from placement_server import middleware
from placement_server import policy
from placement_server import wsgi
from placement_server.db import api as db_api
from placement_server.db import config
from placement_server.db import migration

LOG = logging.getLogger(__name__)


def default_config_files() -> list[str]:
    return config.default_config_files()


def load_conf(args: Iterable[str] = (),
              config_files: list[str] | None = None) -> cfg.ConfigOpts:
    """A ConfigOpts with every placement option, parsed and ready."""
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    logging.register_options(conf)
    policy.register_opts(conf)
    if config_files is None:
        config_files = default_config_files()
    conf(list(args), project='placement', default_config_files=config_files)
    return conf


def open_database(conf: cfg.ConfigOpts) -> db_api.Database:
    """This process's Database for [placement_database] connection
    (config.NotConfigured when there is none)."""
    url = sa.engine.make_url(config.connection(conf))
    kwargs: dict[str, Any] = {}   # oslo.db's [placement_database] options
    if url.get_backend_name() == 'sqlite':
        if url.database and url.database != ':memory:':
            os.makedirs(os.path.dirname(os.path.abspath(url.database)), exist_ok=True)
    else:
        group = conf.placement_database
        kwargs = {name: group[name] for name in (
            'max_pool_size', 'max_overflow', 'pool_timeout', 'connection_recycle_time',
            'mysql_sql_mode', 'mysql_wsrep_sync_wait', 'connection_parameters',
            'connection_debug', 'connection_trace')}
        if group.slave_connection:
            # Every read must see the writes committed before it (the view,
            # generations): a replica that lags cannot serve any of them.
            LOG.warning('[placement_database] slave_connection is ignored: '
                        'placement reads only from the primary')
        # oslo.db's: an empty SQL mode leaves the server's
        kwargs['mysql_sql_mode'] = kwargs['mysql_sql_mode'] or None
    return db_api.Database(url, **kwargs)


def init_application(conf: cfg.ConfigOpts,
                     db: db_api.Database | None = None) -> WSGIApplication:
    """The full application: operator layers around the API stack."""
    db = db or open_database(conf)
    policy.init(conf)
    if conf.placement_database.sync_on_startup:
        migration.sync(db)
        # Servers fork workers after loading the app: hand them no sockets.
        db.dispose()
    catch_up.watch(db)
    return middleware.wrap(wsgi.make_app(conf, db), conf, db)


def application_from_environment() -> WSGIApplication:
    """The application as configured by files and OS_* variables
    (config.NotConfigured when no database is configured)."""
    conf = load_conf()
    config.connection(conf)
    logging.setup(conf, 'placement')
    log_start(conf)
    return init_application(conf)


def log_start(conf: cfg.ConfigOpts) -> None:
    """The version and every option's effective value (secrets masked), as
    OpenStack services log them when they start."""
    LOG.info('placement server %s starting', version())
    conf.log_opt_values(LOG, std_logging.INFO)


def version() -> str:
    try:
        return importlib.metadata.version('compute-tracker')
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
