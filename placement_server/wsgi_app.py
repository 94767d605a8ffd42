"""The placement API for any WSGI server: ``placement_server.wsgi_app:application``.

Configured from ``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` (or
/etc/placement/placement.conf) and ``OS_<GROUP>__<OPTION>`` environment
variables; see placement_server.deploy. Importing this module builds the
application (servers such as uwsgi and mod_wsgi look the name up in the
module itself), but opens no database connection, so servers may fork
workers after loading it.
"""
from placement_server import deploy

application = deploy.application_from_environment()
