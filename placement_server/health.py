"""GET /healthcheck: oslo.middleware's Healthcheck with a database check.

The checks are oslo.middleware's plugins, chosen by ``[healthcheck]
backends``; ours adds ``database`` (the default, placement_server.conf:
a ``SELECT 1`` on this worker's pool). ``disable_by_file`` (with ``[healthcheck]
disable_by_file_path``) drains a host: touch the file and the load
balancer sees 503 while requests in flight and new ones still work.
"""
import logging

from oslo_config import cfg
from oslo_middleware import healthcheck
from oslo_middleware.healthcheck import pluginbase
import sqlalchemy as sa

from placement_server.db import api as db_api

LOG = logging.getLogger(__name__)

PATH = '/healthcheck'

# The Database of each configuration an application was built with:
# oslo.middleware makes the plugins from the configuration alone.
_DATABASES: dict[int, db_api.Database] = {}


class DatabaseCheck(pluginbase.HealthcheckBaseExtension):
    """Available while the database answers a query."""

    def healthcheck(self, server_port: int) -> pluginbase.HealthcheckResult:
        db = _DATABASES.get(id(self.oslo_conf))
        if db is None:
            return pluginbase.HealthcheckResult(False, 'database: not configured')
        try:
            with db.reader() as conn:
                conn.execute(sa.text('SELECT 1'))
        except Exception as e:
            LOG.warning('health check: database unreachable: %s', e)
            return pluginbase.HealthcheckResult(False, 'database: unreachable')
        return pluginbase.HealthcheckResult(True, 'OK')


def app(conf: cfg.ConfigOpts, db: db_api.Database) -> healthcheck.Healthcheck:
    """The health check application for ``conf`` on ``db``."""
    _DATABASES[id(conf)] = db
    return healthcheck.Healthcheck(None, conf)
