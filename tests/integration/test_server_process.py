"""placement-server as a real process: start, serve, log, scrape, stop."""
import json
import os
import re
import socket
import subprocess
import time

import pytest
import requests

from tests import upstream
from tests.integration import servers

pytestmark = pytest.mark.integration

ADMIN = servers.ADMIN


def _sqlite(tmp_path, name='placement.sqlite'):
    return 'sqlite:///%s' % (tmp_path / name)


def _run(args, tmp_path, timeout=60, env=None):
    return subprocess.run(args, cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=timeout,
                          env=upstream.clean_env(HOME=str(tmp_path), **(env or {})))


def test_serves_the_api_and_stops_cleanly_on_sigterm(placement_servers, tmp_path):
    server, = placement_servers(_sqlite(tmp_path), workers=2)
    resp = requests.post(server.url + '/resource_providers', json={'name': 'cn1'},
                         headers=ADMIN, timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.json()['name'] == 'cn1'
    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < 15
    with pytest.raises(requests.ConnectionError):
        requests.get(server.url + '/', timeout=2)


def test_a_kept_alive_connection_serves_request_after_request(placement_servers, tmp_path):
    # Clients reuse connections: the server keeps them alive and answers
    # each request on the same socket.
    server, = placement_servers(_sqlite(tmp_path))
    with socket.create_connection(('127.0.0.1', server.port), timeout=10) as sock:
        for _ in range(3):
            sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
            head, body = _read_response(sock)
            assert head.startswith(b'HTTP/1.1 200')
            assert not re.search(rb'(?im)^connection: close\r?$', head)
            assert b'max_version' in body
    with requests.Session() as session:
        for _ in range(5):
            assert session.get(server.url + '/resource_providers', headers=ADMIN,
                               timeout=10).status_code == 200


def _read_response(sock):
    data = b''
    while b'\r\n\r\n' not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b'\r\n\r\n')
    length = int(re.search(rb'(?im)^content-length: *(\d+)', head).group(1))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, 'the connection ended inside the response'
        body += chunk
    return head, body


def test_the_worker_is_free_once_the_response_is_sent(placement_servers, tmp_path):
    # A client that reads its answer and keeps the socket open must not
    # hold the one worker: the next client is served at once; the idle
    # connection is closed when its keep-alive time runs out.
    server, = placement_servers(_sqlite(tmp_path), workers=1)
    with socket.create_connection(('127.0.0.1', server.port), timeout=10) as lingering:
        lingering.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        head, _ = _read_response(lingering)
        assert head.startswith(b'HTTP/1.1 200')
        started = time.monotonic()
        resp = requests.get(server.url + '/resource_providers', headers=ADMIN, timeout=10)
        waited = time.monotonic() - started
        assert resp.status_code == 200
        assert waited < 1.0, waited
        assert lingering.recv(1) == b''     # and the first one was closed


def test_a_body_sent_slowly_is_answered_on_a_kept_alive_connection(placement_servers,
                                                                   tmp_path):
    # The worker reads a request whole, its body dribbling in, before the
    # application refuses it; the body is not left on the socket to be
    # taken for the next request, nor the connection reset.
    server, = placement_servers(_sqlite(tmp_path), workers=1)
    with socket.create_connection(('127.0.0.1', server.port), timeout=10) as sock:
        sock.sendall(b'PUT /nowhere HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
                     b'Content-Type: application/json\r\nContent-Length: 4\r\n\r\n')
        for part in (b'{', b'}', b'  '):
            time.sleep(0.2)
            sock.sendall(part)
        head, body = _read_response(sock)
        assert head.startswith(b'HTTP/1.1 404')
        assert json.loads(body)['errors'][0]['status'] == 404
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        head, body = _read_response(sock)
        assert head.startswith(b'HTTP/1.1 200') and b'max_version' in body


def test_one_log_line_per_request_with_the_global_request_id(placement_servers, tmp_path):
    server, = placement_servers(_sqlite(tmp_path))
    global_id = 'req-12345678-1234-1234-1234-123456789abc'
    resp = requests.get(server.url + '/resource_providers?name=x',
                        headers=dict(ADMIN, **{'X-OpenStack-Request-Id': global_id}),
                        timeout=10)
    assert resp.status_code == 200
    local_id = resp.headers['x-openstack-request-id']
    assert local_id != global_id
    requests.get(server.url + '/nowhere', headers=ADMIN, timeout=10)
    server.stop()
    lines = [line for line in server.log().splitlines()
             if 'placement_server.requests' in line and '"GET /" ' not in line]
    assert len(lines) == 2, lines
    assert global_id in lines[0] and local_id in lines[0]
    assert '"GET /resource_providers?name=x" status: 200' in lines[0]
    assert '"GET /nowhere" status: 404' in lines[1]


def test_metrics_sum_over_workers(placement_servers, tmp_path):
    server, = placement_servers(_sqlite(tmp_path), workers=2)
    for _ in range(7):
        assert requests.get(server.url + '/resource_providers', headers=ADMIN,
                            timeout=10).status_code == 200
    requests.get(server.url + '/resource_providers/nope', headers=ADMIN, timeout=10)
    text = requests.get(server.metrics_url, timeout=10).text
    count = re.search(r'^placement_http_requests_total\{method="GET",'
                      r'route="/resource_providers",status="200"\} (\S+)$', text, re.M)
    assert count and float(count.group(1)) == 7.0, text
    assert re.search(r'route="/resource_providers/\{uuid\}",status="404"', text)
    assert re.search(r'^placement_db_pool_connections_open \S+$', text, re.M)
    assert 'placement_http_request_duration_seconds_bucket' in text


def test_metrics_go_where_the_operator_says(placement_servers, tmp_path):
    metrics_dir = tmp_path / 'metrics' / 'placement'      # made if missing
    server, = placement_servers(_sqlite(tmp_path), workers=2,
                                env={'PROMETHEUS_MULTIPROC_DIR': str(metrics_dir)})
    assert requests.get(server.url + '/resource_providers', headers=ADMIN,
                        timeout=10).status_code == 200
    assert any(name.endswith('.db') for name in os.listdir(metrics_dir))
    server.stop()
    assert metrics_dir.exists()     # the operator's directory is left alone


def test_healthcheck_needs_no_token(placement_servers, tmp_path):
    server, = placement_servers(_sqlite(tmp_path))
    resp = requests.get(server.url + '/healthcheck', timeout=10)
    assert resp.status_code == 200 and resp.text == 'OK'
    resp = requests.get(server.url + '/healthcheck', headers={'Accept': 'application/json'},
                        timeout=10)
    assert resp.json()['reasons'] == ['OK']
    assert requests.get(server.url + '/resource_providers', timeout=10).status_code == 401


@pytest.mark.parametrize('args, message, code', [
    (['--port', '0'], '--port must be 1-65535', 1),
    (['--limit-request-line', '70000'], '--limit-request-line must be 1-65535', 1),
    (['--limit-request-body', '-1'], '--limit-request-body must not be negative', 1),
    (['--header-timeout', '0'], '--header-timeout and --body-timeout must be positive', 1),
    # usage errors: argparse's exit status, as every placement-* command
    (['--workers', 'many'], "argument --workers: invalid int value: 'many'", 2),
    (['--auth-strategy', 'magic'], 'argument --auth-strategy: invalid choice', 2),
    (['--auth-strategy', 'noauth2', '--database-connection', 'nosuchdb://x'],
     'cannot use database', 1),
    (['--auth-strategy', 'noauth2',
      '--database-connection', 'postgresql+psycopg2://nobody@127.0.0.1:1/x'],
     'cannot use database postgresql+psycopg2://nobody@127.0.0.1:1/x', 1),
    (['--config-file', '/nonexistent/placement.conf'],
     '--config-file /nonexistent/placement.conf: no such file', 1),
    (['--auth-strategy', 'keystone'],
     'auth strategy keystone needs [keystone_authtoken] www_authenticate_uri and auth_type', 1),
])
def test_bad_arguments_are_one_line_and_exit_non_zero(tmp_path, args, message, code):
    result = _run([servers.PLACEMENT_SERVER] + args, tmp_path)
    assert result.returncode == code
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert 'Traceback' not in result.stdout + result.stderr


def test_refuses_a_database_without_the_current_schema(tmp_path):
    result = _run([servers.PLACEMENT_SERVER, '--database-connection', _sqlite(tmp_path),
                   '--auth-strategy', 'noauth2', '--port', str(upstream.free_port())],
                  tmp_path)
    assert result.returncode == 1
    assert 'not current' in result.stderr and 'db sync' in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_port_in_use_is_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _run([servers.PLACEMENT_SERVER, '--database-connection', _sqlite(tmp_path),
                       '--auth-strategy', 'noauth2', '--sync-db', '--port', str(port)],
                      tmp_path)
    assert result.returncode == 1
    assert 'cannot listen on 127.0.0.1:%d' % port in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_wsgi_app_is_configured_from_the_environment(tmp_path):
    # Any WSGI server can load the module-level application; oslo.config
    # reads OS_<GROUP>__<OPTION> variables as upstream placement does.
    url = _sqlite(tmp_path)
    assert _run([servers.PLACEMENT_MANAGE, '--database-connection', url, 'db', 'sync'],
                tmp_path).returncode == 0
    port = upstream.free_port()
    log_path = str(tmp_path / 'gunicorn.log')
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(
            upstream.gunicorn_command(os.path.join(servers.BIN, 'gunicorn'),
                                      'placement_server.wsgi_app:application', port, 2),
            cwd=str(tmp_path), stdout=log, stderr=subprocess.STDOUT,
            env=upstream.clean_env(HOME=str(tmp_path),
                                   OS_PLACEMENT_DATABASE__CONNECTION=url,
                                   OS_API__AUTH_STRATEGY='noauth2'))
    base = 'http://127.0.0.1:%d' % port
    try:
        upstream.wait_until_up(base, proc, log_path)
        resp = requests.post(base + '/resource_providers', json={'name': 'from-env'},
                             headers=ADMIN, timeout=10)
        assert resp.status_code == 200, resp.text
    finally:
        upstream.stop_process(proc)
    import sqlalchemy as sa
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql(
            "SELECT count(*) FROM resource_providers WHERE name = 'from-env'").scalar() == 1
    engine.dispose()
