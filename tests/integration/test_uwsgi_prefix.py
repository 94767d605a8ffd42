"""Mounted as devstack mounts placement, under uwsgi, behind an HTTPS proxy.

Both applications run under the same line, ``uwsgi --mount
/placement=<module>:application --manage-script-name`` (the uwsgi of our
virtualenv, from the test extras; ``--virtualenv`` points it at upstream's
for theirs, the same Python), with ``[oslo_middleware]
enable_proxy_headers_parsing = true``.
Every Location and link must be upstream's. (uwsgi's HTTP socket takes
the scheme from X-Forwarded-Proto itself; that the application's proxy
handling works is tests/functional/test_proxy_prefix.py's.)
"""
import os
import subprocess

import pytest

from tests import upstream
from tests.integration import servers
from tests.integration import test_server_facing
from tests.integration import uwsgi

pytestmark = pytest.mark.integration

OUR_VENV = os.path.dirname(servers.BIN)


class UwsgiMount:
    """One application in ``venv`` mounted at /placement under uwsgi."""

    def __init__(self, name, venv, module, workdir, db_url):
        self.name, self.venv, self.module = name, venv, module
        self.workdir = os.path.join(workdir, name)
        os.makedirs(self.workdir)
        self.db_url = db_url
        self.port = upstream.free_port()
        self.url = 'http://127.0.0.1:%d/placement' % self.port
        self.conf_path = os.path.join(self.workdir, 'placement.conf')
        self.log_path = os.path.join(self.workdir, 'uwsgi.log')
        upstream.write_config(self.conf_path, db_url, {
            ('oslo_middleware', 'enable_proxy_headers_parsing'): 'true'})
        self.proc = None

    def start(self, manage):
        subprocess.run([manage, '--config-file', self.conf_path, 'db', 'sync'], check=True,
                       capture_output=True, env=upstream.clean_env(), timeout=300)
        with open(self.log_path, 'wb') as log:
            self.proc = subprocess.Popen(
                [uwsgi.UWSGI, '--http-socket', '127.0.0.1:%d' % self.port,
                 '--master', '--processes', '2', '--need-app', '--die-on-term',
                 '--virtualenv', self.venv, '--mount', '/placement=%s' % self.module,
                 '--manage-script-name', '--env', 'OS_PLACEMENT_CONFIG_DIR=%s' % self.workdir],
                cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                env=upstream.clean_env())
        upstream.wait_until_up(self.url, self.proc, self.log_path)
        return self

    def stop(self):
        upstream.stop_process(self.proc)


def test_under_uwsgi_mount_behind_a_proxy_links_as_upstream(tmp_path):
    upstream.ensure_venv()
    theirs = UwsgiMount('upstream', upstream.VENV, 'placement.wsgi.api:application',
                        str(tmp_path), 'sqlite:///%s' % (tmp_path / 'upstream.sqlite'))
    ours = UwsgiMount('ours', OUR_VENV, 'placement_server.wsgi_app:application',
                      str(tmp_path), 'sqlite:///%s' % (tmp_path / 'ours.sqlite'))
    try:
        theirs.start(upstream.venv_bin('placement-manage'))
        expected = test_server_facing._calls(theirs.url)
    finally:
        theirs.stop()
    try:
        ours.start(servers.PLACEMENT_MANAGE)
        got = test_server_facing._calls(ours.url)
    finally:
        ours.stop()
    assert expected['POST /resource_providers 1.39'][1] == (
        'https://cloud.example/placement/resource_providers/<rp>')
    assert got == expected
