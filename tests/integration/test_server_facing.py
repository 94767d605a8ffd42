"""placement-server facing real clients and proxies, as real processes.

- mounted under a path prefix behind a TLS-terminating proxy: the same
  Location headers and links as upstream placement mounted the same way;
- slow clients holding connections do not stop the others being served;
- no database configured: the server and the WSGI app refuse in one line;
- /metrics is not on the API port; the health check drains by file.

The prefix mount is gunicorn's (the SCRIPT_NAME environment variable:
requests under it, SCRIPT_NAME set, PATH_INFO the rest), the same
environ uwsgi's ``--mount /placement=... --manage-script-name`` gives.
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests

from tests import upstream
from tests.integration import servers
from tests.integration import uwsgi

pytestmark = pytest.mark.integration

ADMIN = servers.ADMIN
PREFIX = '/placement'
# What a proxy in front passes on: the client spoke HTTPS to cloud.example.
PROXIED = {'X-Forwarded-Proto': 'https', 'Host': 'cloud.example'}


def _sqlite(tmp_path, name):
    return 'sqlite:///%s' % (tmp_path / name)


def _calls(base):
    """The answers whose Location headers and links name URLs, with every
    generated uuid replaced by its role."""
    rp, old = str(uuid.uuid4()), str(uuid.uuid4())
    seen = {}

    def call(method, path, version, body=None):
        resp = requests.request(method, base + path, json=body, timeout=30,
                                headers=dict(ADMIN, **PROXIED, **{
                                    'OpenStack-API-Version': 'placement %s' % version}))
        assert resp.status_code < 300, (method, path, resp.status_code, resp.text)
        text = resp.text.replace(rp, '<rp>')
        location = resp.headers.get('Location', '').replace(rp, '<rp>').replace(old, '<old>')
        seen['%s %s %s' % (method, path.replace(rp, '<rp>'), version)] = (
            resp.status_code, location, sorted(set(re.findall(r'"href": ?"([^"]*)"', text))))

    call('POST', '/resource_providers', '1.19', {'name': 'cn-old', 'uuid': old})
    call('POST', '/resource_providers', '1.39', {'name': 'cn', 'uuid': rp})
    call('GET', '/resource_providers/%s' % rp, '1.39')
    call('GET', '/resource_providers?name=cn', '1.39')
    call('POST', '/resource_providers/%s/inventories' % rp, '1.39',
         {'resource_provider_generation': 0, 'resource_class': 'VCPU', 'total': 8})
    call('POST', '/resource_classes', '1.2', {'name': 'CUSTOM_GOLD'})
    call('PUT', '/resource_classes/CUSTOM_SILVER', '1.7')
    call('GET', '/resource_classes/CUSTOM_GOLD', '1.39')
    call('PUT', '/traits/CUSTOM_FAST', '1.39')
    call('GET', '/', '1.39')
    return seen


def test_under_a_prefix_behind_a_proxy_links_as_upstream(tmp_path):
    env = {'SCRIPT_NAME': PREFIX}
    ours = servers.Server(_sqlite(tmp_path, 'ours.sqlite'), str(tmp_path), workers=1,
                          sync_db=True, env=dict(
                              env, OS_OSLO_MIDDLEWARE__ENABLE_PROXY_HEADERS_PARSING='true'))
    ours.url += PREFIX
    theirs = upstream.UpstreamPlacement(
        _sqlite(tmp_path, 'upstream.sqlite'), str(tmp_path / 'upstream'), env=env,
        options={('oslo_middleware', 'enable_proxy_headers_parsing'): 'true'})
    theirs.url += PREFIX
    ours.start()
    try:
        theirs.start()
        try:
            expected = _calls(theirs.url)
        finally:
            theirs.stop()
        got = _calls(ours.url)
    finally:
        ours.stop()
    # upstream's own answer, so the comparison cannot pass vacuously
    assert expected['POST /resource_providers 1.39'][1] == (
        'https://cloud.example/placement/resource_providers/<rp>')
    assert '/placement/resource_providers/<rp>/inventories' in (
        expected['GET /resource_providers/<rp> 1.39'][2])
    assert got == expected


def _slow_client(port, stop):
    """A client sending its request's headers a byte every half second."""
    with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
        request = b'GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ' + b'z' * 200
        for byte in request:
            if stop.is_set():
                return
            sock.sendall(bytes([byte]))
            stop.wait(0.5)


def test_slow_clients_do_not_stop_the_others(placement_servers, tmp_path):
    server, = placement_servers(_sqlite(tmp_path, 'p.sqlite'), workers=2)
    stop = threading.Event()
    slow = [threading.Thread(target=_slow_client, args=(server.port, stop), daemon=True)
            for _ in range(16)]
    try:
        for thread in slow:
            thread.start()
        time.sleep(2)      # every slow client connected and dribbling
        for path in ['/', '/resource_providers', '/', '/resource_classes'] * 2:
            started = time.monotonic()
            # a new connection each: whichever worker takes it must answer
            resp = requests.get(server.url + path, headers=dict(ADMIN, Connection='close'),
                                timeout=5)
            assert resp.status_code == 200
            assert time.monotonic() - started < 1.0, (path, time.monotonic() - started)
        assert all(thread.is_alive() for thread in slow)     # still holding on
    finally:
        stop.set()
        for thread in slow:
            thread.join(5)


def _unconfigured_env(tmp_path):
    # No config file anywhere oslo.config looks (HOME is empty) and no OS_*.
    return upstream.clean_env(HOME=str(tmp_path), PATH=os.environ.get('PATH', ''))


def test_the_server_without_a_database_is_one_line(tmp_path):
    result = subprocess.run([servers.PLACEMENT_SERVER, '--auth-strategy', 'noauth2',
                             '--port', str(upstream.free_port())],
                            cwd=str(tmp_path), env=_unconfigured_env(tmp_path),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr.count('\n') == 1, result.stderr
    assert 'no database configured' in result.stderr
    assert 'placement.conf' in result.stderr     # where it looked
    assert not list(tmp_path.rglob('*.sqlite'))


def test_the_wsgi_app_without_a_database_is_one_line(tmp_path):
    result = subprocess.run([sys.executable, '-c', 'import placement_server.wsgi_app'],
                            cwd=str(tmp_path), env=_unconfigured_env(tmp_path),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert result.stderr.count('\n') == 1, result.stderr
    assert result.stderr.startswith('placement: no database configured')
    # Under a WSGI server it stops rather than restart workers forever. Five
    # workers failing together, twice: gunicorn's arbiter halting on
    # two boot failures at once (a traceback, status 1) cannot hide.
    gunicorn = os.path.join(os.path.dirname(sys.executable), 'gunicorn')
    for _ in range(2):
        result = subprocess.run(
            upstream.gunicorn_command(gunicorn, 'placement_server.wsgi_app:application',
                                      upstream.free_port(), 5),
            cwd=str(tmp_path), env=_unconfigured_env(tmp_path),
            capture_output=True, text=True, timeout=120)
        assert result.returncode == 3, result.stderr[-3000:]
        assert 'Traceback' not in result.stderr
        assert 'placement: no database configured' in result.stderr
    # uWSGI as Kolla and OpenStack-Helm run it: it would respawn the
    # workers forever; the first to fail shuts it down.
    for tool in uwsgi.TOOLS:
        ini, log = tmp_path / ('%s.ini' % tool), tmp_path / ('%s.log' % tool)
        uwsgi.write_ini(str(ini), uwsgi.ini(tool, upstream.free_port(), 3,
                                            upstream.free_port(), str(log)))
        result = subprocess.run([uwsgi.UWSGI, '--ini', str(ini)], cwd=str(tmp_path),
                                env=_unconfigured_env(tmp_path), capture_output=True,
                                text=True, timeout=120)
        # Kolla's logto2 takes the log (and the app's stderr) to its file
        said = result.stderr + (log.read_text() if log.exists() else '')
        assert 'Traceback' not in said, said[-3000:]
        assert 'placement: no database configured' in said
        assert 'goodbye to uWSGI' in said
    assert not list(tmp_path.rglob('*.sqlite'))


def test_metrics_are_not_served_on_the_api_port(placement_servers, tmp_path):
    server, = placement_servers(_sqlite(tmp_path, 'p.sqlite'), workers=2)
    assert requests.get(server.url + '/resource_providers', headers=ADMIN,
                        timeout=10).status_code == 200
    assert requests.get(server.url + '/metrics', timeout=10).status_code == 401
    assert requests.get(server.url + '/metrics', headers=ADMIN, timeout=10).status_code == 404
    scrape = requests.get(server.metrics_url, timeout=10)
    assert scrape.status_code == 200
    assert re.search(r'^placement_http_requests_total\{method="GET",'
                     r'route="/resource_providers",status="200"\} 1\.0$', scrape.text, re.M)


def test_the_health_check_drains_a_host_by_file(placement_servers, tmp_path):
    flag = tmp_path / 'drain'
    server, = placement_servers(_sqlite(tmp_path, 'p.sqlite'), workers=2, env={
        'OS_HEALTHCHECK__BACKENDS': 'database,disable_by_file',
        'OS_HEALTHCHECK__DISABLE_BY_FILE_PATH': str(flag)})
    resp = requests.get(server.url + '/healthcheck', timeout=10)
    assert resp.status_code == 200 and 'DISABLED' not in resp.text
    flag.touch()
    for _ in range(4):     # whichever worker answers
        resp = requests.get(server.url + '/healthcheck', timeout=10)
        assert resp.status_code == 503 and 'DISABLED BY FILE' in resp.text
    # draining fails the check only: the API still answers
    assert requests.get(server.url + '/resource_providers', headers=ADMIN,
                        timeout=10).status_code == 200
    flag.unlink()
    assert requests.get(server.url + '/healthcheck', timeout=10).status_code == 200


def test_malformed_http_is_a_json_error(placement_servers, tmp_path):
    server, = placement_servers(_sqlite(tmp_path, 'p.sqlite'))
    with socket.create_connection(('127.0.0.1', server.port), timeout=10) as sock:
        sock.sendall(b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
                     b'Content-Type: application/json\r\nContent-Length: many\r\n\r\n')
        data = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b'\r\n\r\n')
    assert head.startswith(b'HTTP/1.1 400')
    assert re.search(rb'(?im)^content-type: application/json\r?$', head)
    error, = json.loads(body)['errors']
    assert error['detail'] == 'content-length header must be an integer'


def test_gunicorn_logs_through_oslo_log_with_the_options_at_start(placement_servers, tmp_path):
    log_file = tmp_path / 'placement-server.log'
    server, = placement_servers(_sqlite(tmp_path, 'p.sqlite'), workers=2,
                                env={'OS_DEFAULT__LOG_FILE': str(log_file)})
    requests.get(server.url + '/', timeout=10)
    server.stop()
    lines = log_file.read_text().splitlines()
    # oslo.log's format: date time pid LEVEL logger [context] message
    stamp = r'^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \d+ INFO '
    assert [line for line in lines if re.match(stamp + r'gunicorn\.error .*Booting worker', line)]
    assert len([line for line in lines if 'Booting worker' in line]) == 2
    assert [line for line in lines if re.match(stamp + r'placement_server\.deploy .*'
                                               r'placement server \S+ starting', line)]
    assert [line for line in lines if re.search(r'api\.auth_strategy += noauth2$', line)]
    connection = [line for line in lines if 'placement_database.connection ' in line]
    assert connection and connection[0].endswith('= ****'), connection
