"""The placement API for any WSGI server: ``placement_server.wsgi_app:application``.

Configured from ``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` (or
/etc/placement/placement.conf) and ``OS_<GROUP>__<OPTION>`` environment
variables; see placement_server.deploy. Importing this module builds the
application (servers such as uwsgi and mod_wsgi look the name up in the
module itself), but opens no database connection, so servers may fork
workers after loading it. Under uWSGI, placement_server.under_uwsgi
does what placement-server's master does (metrics).

Without a configured database it refuses to load: one line on stderr
saying where it looked, and the server stops rather than restarting its
workers forever (``cannot_boot``).
"""
import os
import sys
import tempfile
from typing import Any
from typing import NoReturn
from wsgiref.types import WSGIApplication

from placement_server import under_uwsgi
from placement_server.db import config

# gunicorn's arbiter halts on a worker's exit status 3 ("the worker cannot
# boot"); uWSGI respawns a worker whatever its status.
WORKER_CANNOT_BOOT = 3


def _first_to_fail(master: int) -> bool:
    """Whether this worker is the first of ``master``'s to fail: a marker
    file named after the master, made exclusively."""
    path = os.path.join(tempfile.gettempdir(),
                        'placement-cannot-boot.' + under_uwsgi.process_key(master))
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False
    return True


def cannot_boot(uwsgi: Any) -> NoReturn:
    """End this process so that the WSGI server around it stops. gunicorn:
    exactly one worker exits with WORKER_CANNOT_BOOT, the others with 0
    (two such exits at once make its arbiter raise its halt again while
    halting: a traceback, and status 1)."""
    if uwsgi is not None:
        under_uwsgi.stop(uwsgi, WORKER_CANNOT_BOOT)
    if 'gunicorn.arbiter' in sys.modules and not _first_to_fail(os.getppid()):
        raise SystemExit(0)
    raise SystemExit(WORKER_CANNOT_BOOT)


def _load() -> WSGIApplication:
    uwsgi = under_uwsgi.server()
    if uwsgi is not None:
        under_uwsgi.share_metrics(uwsgi)   # before prometheus_client is imported
    from placement_server import deploy
    try:
        app = deploy.application_from_environment()
    except config.NotConfigured as e:
        print('placement: %s' % e, file=sys.stderr, flush=True)
        cannot_boot(uwsgi)
    if uwsgi is not None:
        under_uwsgi.serve_metrics(uwsgi, deploy.load_conf())
    return app


application = _load()
