"""The placement API for any WSGI server: ``placement_server.wsgi_app:application``.

Configured from ``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` (or
/etc/placement/placement.conf) and ``OS_<GROUP>__<OPTION>`` environment
variables; see placement_server.deploy. Importing this module builds the
application (servers such as uwsgi and mod_wsgi look the name up in the
module itself), but opens no database connection, so servers may fork
workers after loading it.

Without a configured database it refuses to load: one line on stderr
saying where it looked, and exit status 3, which gunicorn takes as "the
worker cannot boot" and stops rather than restarting workers in a loop.
"""
import sys

from placement_server import deploy
from placement_server.db import config

try:
    application = deploy.application_from_environment()
except config.NotConfigured as e:
    print('placement: %s' % e, file=sys.stderr, flush=True)
    raise SystemExit(3)
