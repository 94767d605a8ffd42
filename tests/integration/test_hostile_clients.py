"""placement-server against hostile and broken clients, as a real process
started as docs/install.md starts it (``placement-server --workers 2``).

Each case was found by sending the same inputs to ours and to upstream
placement under uwsgi (issue 40): none may take the server, answer 500,
grow the metrics without bound, or forge a log line.
"""
import json
import re
import socket
import threading
import time
import uuid

import pytest
import requests
import sqlalchemy as sa

from tests.integration import servers

pytestmark = pytest.mark.integration

ADMIN = servers.ADMIN
STALLED = 200


@pytest.fixture(scope='module')
def server(tmp_path_factory):
    """One server with the default options, on SQLite."""
    workdir = tmp_path_factory.mktemp('hostile')
    started, = servers.start_servers('sqlite:///%s' % (workdir / 'p.sqlite'), str(workdir),
                                     workers=2)
    yield started
    started.stop()


def _exchange(port, data, close_write=True):
    """What the server answers to the bytes ``data`` (until it closes)."""
    with socket.create_connection(('127.0.0.1', port), timeout=30) as sock:
        sock.sendall(data)
        if close_write:
            sock.shutdown(socket.SHUT_WR)
        answer = b''
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return answer
            answer += chunk


def _status_and_error(answer):
    head, _, body = answer.partition(b'\r\n\r\n')
    status = int(head.split(b' ', 2)[1])
    assert re.search(rb'(?im)^content-type: application/json\r?$', head), head
    return status, json.loads(body)['errors'][0]


def _served_within_a_second(server):
    for path in ['/', '/resource_providers', '/', '/resource_classes'] * 2:
        started = time.monotonic()
        resp = requests.get(server.url + path, headers=dict(ADMIN, Connection='close'),
                            timeout=10)
        assert resp.status_code == 200
        assert time.monotonic() - started < 1.0, (path, time.monotonic() - started)


def test_a_long_request_line_is_served_as_behind_apache(server):
    # A scheduler filtering by 150 aggregates: 5.6 KB, over gunicorn's 4094.
    aggregates = ','.join(str(uuid.uuid4()) for _ in range(150))
    resp = requests.get(server.url + '/resource_providers?member_of=in:' + aggregates,
                        headers=ADMIN, timeout=10)
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'resource_providers': []}
    # Apache's limit, 8190 bytes, is the default; one more is 414.
    line = b'GET /?x=%s HTTP/1.1'
    pad = 8190 - len(line % b'')
    resp = requests.get(server.url + '/?x=' + 'a' * pad, headers=ADMIN, timeout=10)
    assert resp.status_code == 200
    status, error = _status_and_error(_exchange(
        server.port, line % (b'a' * (pad + 1)) + b'\r\nHost: x\r\n\r\n'))
    assert status == 414 and '8190' in error['detail']


def test_stalled_clients_do_not_stop_the_others(server):
    for path in ['/resource_providers', '/resource_classes'] * 4:    # both workers warm
        assert requests.get(server.url + path, headers=ADMIN, timeout=10).status_code == 200
    # Half a head, or a head and half a body: then nothing.
    stalled = []
    try:
        for i in range(STALLED):
            sock = socket.create_connection(('127.0.0.1', server.port), timeout=30)
            stalled.append(sock)
            if i % 2:
                sock.sendall(b'GET /resource_providers HTTP/1.1\r\nHost: x\r\nX-Au')
            else:
                sock.sendall(b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
                             b'Content-Type: application/json\r\nContent-Length: 40\r\n'
                             b'X-Auth-Token: admin\r\n\r\n{"name": "st')
        time.sleep(1)      # every one read as far as it goes
        _served_within_a_second(server)
    finally:
        for sock in stalled:
            sock.close()


def test_stalled_clients_are_timed_out(placement_servers, tmp_path):
    fast, = placement_servers('sqlite:///%s' % (tmp_path / 'p.sqlite'), workers=2,
                              extra_args=['--header-timeout', '1', '--body-timeout', '1'])
    for stall in (b'GET / HTTP/1.1\r\nHost: x\r\n',
                  b'PUT /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{'):
        started = time.monotonic()
        status, error = _status_and_error(_exchange(fast.port, stall, close_write=False))
        assert status == 408, error
        assert time.monotonic() - started < 10


def test_a_malformed_chunk_size_is_400(server):
    status, error = _status_and_error(_exchange(
        server.port, b'POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
        b'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n'
        b'zz\r\n{}\r\n0\r\n\r\n'))
    assert status == 400 and error['detail'] == 'Invalid chunk size.'
    # and a well-formed chunked body is served
    answer = _exchange(
        server.port, b'POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
        b'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n'
        b'Connection: close\r\n\r\n5\r\n{"nam\r\n11\r\ne": "chunked-cn"}\r\n0\r\n\r\n')
    assert answer.startswith(b'HTTP/1.1 201'), answer
    assert 'Traceback' not in server.log()


def test_expect_100_continue_is_answered_once(server):
    # The worker reads the body itself: it says "100 Continue" while
    # reading, and gunicorn must not say it again before the answer.
    with socket.create_connection(('127.0.0.1', server.port), timeout=30) as sock:
        body = b'{"name": "continued-cn"}'
        sock.sendall(b'POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
                     b'Content-Type: application/json\r\nExpect: 100-continue\r\n'
                     b'Connection: close\r\nContent-Length: %d\r\n\r\n' % len(body))
        assert sock.recv(25) == b'HTTP/1.1 100 Continue\r\n\r\n'
        sock.sendall(body)
        answer = b''
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b'HTTP/1.1 201'), answer


def test_unknown_methods_share_one_metrics_label(server):
    for i in range(5):
        resp = requests.request('JUNK%d' % i, server.url + '/', headers=ADMIN, timeout=10)
        assert resp.status_code == 405
    scrape = requests.get(server.metrics_url, timeout=10).text
    assert not re.search(r'method="JUNK', scrape)
    assert re.search(r'^placement_http_requests_total\{method="other",route="unmatched",'
                     r'status="405"\} 5\.0$', scrape, re.M), scrape


def test_a_body_over_the_limit_is_413_unread(server):
    head = (b'POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n'
            b'Content-Type: application/json\r\nContent-Length: %d\r\n\r\n')
    # 100 MB announced: refused at once, nothing of it read
    status, error = _status_and_error(_exchange(server.port, head % (100 << 20)))
    assert status == 413 and str(16 << 20) in error['detail']


def test_the_limits_are_options(placement_servers, tmp_path):
    opened, = placement_servers('sqlite:///%s' % (tmp_path / 'p.sqlite'), workers=2,
                                extra_args=['--limit-request-line', '20000',
                                            '--limit-request-body', '1000'])
    resp = requests.get(opened.url + '/?x=' + 'a' * 16000, headers=ADMIN, timeout=10)
    assert resp.status_code == 200
    resp = requests.post(opened.url + '/resource_providers', headers=ADMIN, timeout=10,
                         json={'name': 'x' * 1000})
    assert resp.status_code == 413
    assert resp.json()['errors'][0]['detail'] == 'The request body is larger than 1000 bytes.'


def test_a_body_shorter_than_its_length_is_no_error(server):
    # The client announces 100 bytes, sends 10, and goes away.
    answer = _exchange(server.port, b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'
                       b'X-Auth-Token: admin\r\nContent-Type: application/json\r\n'
                       b'Content-Length: 100\r\n\r\n{"name": "')
    assert b' 500 ' not in answer
    time.sleep(0.5)
    log = server.log()
    assert 'Traceback' not in log and 'status: 500' not in log


def test_repeated_limit_with_a_bad_first_value_is_400(server):
    resp = requests.get(server.url + '/allocation_candidates?resources=VCPU:1&limit=abc&limit=1',
                        headers=ADMIN, timeout=10)
    assert resp.status_code == 400, resp.text
    assert "'abc'" in resp.json()['errors'][0]['detail']


def test_a_control_character_in_the_path_cannot_forge_a_log_line(server):
    requests.get(server.url + '/x%0Aforged%0D%1B', headers=ADMIN, timeout=10)
    time.sleep(0.5)
    lines = server.log().splitlines()
    assert not [line for line in lines if line.startswith('forged')]
    assert [line for line in lines if '"GET /x%0Aforged%0D%1B" status: 404' in line]


# What each engine stores of the values JSON cannot carry: PostgreSQL all,
# SQLite the infinities (NaN becomes NULL), MariaDB none.
STORABLE = {'postgresql': ['NaN', '-Infinity', 'Infinity'],
            'sqlite': ['-Infinity', 'Infinity'], 'mysql': []}


def test_allocation_ratios_that_are_not_numbers(database, placement_servers):
    server, = placement_servers(database.url, workers=2)
    rp = servers.make_provider(server.url, {'VCPU': {'total': 8}})
    url = '%s/resource_providers/%s/inventories' % (server.url, rp)
    for value in ('NaN', '-Infinity', 'Infinity'):
        resp = requests.put(url, data='{"resource_provider_generation": 1, "inventories": '
                            '{"VCPU": {"total": 8, "allocation_ratio": %s}}}' % value,
                            headers=dict(ADMIN, **{'Content-Type': 'application/json'}),
                            timeout=10)
        assert resp.status_code == 400, resp.text
        assert value in resp.json()['errors'][0]['detail']
    # Stored by other means (SQL, another service): reads still answer.
    stored = STORABLE[database.dialect]
    if not stored:    # MariaDB cannot hold them: nothing to read back
        with pytest.raises(Exception, match='Incorrect double value'):
            with database.engine.begin() as conn:
                conn.execute(sa.text("UPDATE inventories SET allocation_ratio = 'NaN'"))
    for value in stored:
        _set_ratio(database, float(value))
        for path in ['/resource_providers/%s/inventories' % rp,
                     '/resource_providers/%s/inventories/VCPU' % rp,
                     '/resource_providers/%s/usages' % rp,
                     '/resource_providers?resources=VCPU:1',
                     '/allocation_candidates?resources=VCPU:1']:
            resp = requests.get(server.url + path, headers=ADMIN, timeout=10)
            assert resp.status_code == 200, (value, path, resp.text)
            json.loads(resp.text, parse_constant=_not_json)
        resp = requests.put('%s/allocations/%s' % (server.url, uuid.uuid4()), headers=ADMIN,
                            timeout=10, json={
                                'allocations': {rp: {'resources': {'VCPU': 1}}},
                                'project_id': str(uuid.uuid4()),
                                'user_id': str(uuid.uuid4()),
                                'consumer_generation': None, 'consumer_type': 'INSTANCE'})
        assert resp.status_code in (204, 409), (value, resp.json()['errors'][0]['detail'][-300:])
    assert 'Traceback' not in server.log()


def _set_ratio(database, ratio):
    with database.engine.begin() as conn:
        conn.execute(sa.text('UPDATE inventories SET allocation_ratio = :r'), {'r': ratio})


def _not_json(name):
    raise AssertionError('%s in an answer is not JSON' % name)



def test_clients_that_do_not_read_their_answers_do_not_stop_the_others(placement_servers,
                                                                        tmp_path):
    # One worker: what a client that takes nothing holds, it holds from all.
    server, = placement_servers('sqlite:///%s' % (tmp_path / 'p.sqlite'), workers=1,
                                extra_args=['--body-timeout', '3'])
    with requests.Session() as session:
        for i in range(300):
            assert session.post(server.url + '/resource_providers', headers=ADMIN, json={
                'name': '%03d-%s' % (i, 'x' * 190)}).status_code == 200
    one = len(requests.get(server.url + '/resource_providers', headers=ADMIN).content)
    # Each asks for more answers at once (pipelined) than the socket
    # buffers between it and the server hold (~3 MB on loopback).
    asked = 1 + (4 << 20) // one
    takers = []
    try:
        for _ in range(6):        # more than a worker has threads
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.connect(('127.0.0.1', server.port))
            sock.sendall(b'GET /resource_providers HTTP/1.1\r\nHost: x\r\n'
                         b'X-Auth-Token: admin\r\n\r\n' * asked)
            takers.append(sock)
        time.sleep(1)
        _served_within_a_second(server)
        time.sleep(3)             # --body-timeout: then each is let go
        for sock in takers:
            sock.settimeout(10)
            got = 0
            try:
                while chunk := sock.recv(1 << 20):
                    got += len(chunk)
            except ConnectionResetError:
                pass
            assert 0 < got < one * asked
    finally:
        for sock in takers:
            sock.close()


def test_a_client_pipelining_many_requests_gets_every_answer_and_holds_no_one(
        placement_servers, tmp_path):
    # One worker: its loop takes each connection's next request in turn.
    server, = placement_servers('sqlite:///%s' % (tmp_path / 'p.sqlite'), workers=1)
    asked = 3000
    answers = []

    def read_all(sock):
        got = b''
        while got.count(b'HTTP/1.1 200 ') < asked:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            got += chunk
        answers.append(got.count(b'HTTP/1.1 200 '))

    with socket.create_connection(('127.0.0.1', server.port), timeout=60) as sock:
        reader = threading.Thread(target=read_all, args=(sock,))
        reader.start()
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n' * asked)
        _served_within_a_second(server)
        reader.join(60)
    assert answers == [asked]

