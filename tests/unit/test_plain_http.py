"""The worker's plain path (placement_server/cmd/plain_http.py) answers
as gunicorn's own path would: the same requests sent through a real worker
with the plain path on and off give the same bytes and the same environ,
and whatever is outside the plain subset still goes gunicorn's way."""
import concurrent.futures
import json
import re
import socket

from gunicorn import config as gunicorn_config
from gunicorn import glogging
from gunicorn.workers import gthread
import pytest

from placement_server.cmd import gunicorn_worker

SERVER = ('127.0.0.1', 8778)
CLIENT = ('127.0.0.1', 40000)


def app(environ, start_response):
    """Shows what it was given; answers as the path asks."""
    path = environ['PATH_INFO']
    if path == '/raise':
        raise RuntimeError('the application failed')
    seen = {k: v for k, v in environ.items()
            if isinstance(v, (str, bool, int, tuple)) and k != 'wsgi.early_hints'}
    seen['body'] = environ['wsgi.input'].read().decode()
    body = json.dumps(seen, sort_keys=True).encode()
    if path == '/chunks':       # no Content-Length: gunicorn chunks it
        start_response('200 OK', [('Content-Type', 'application/json')])
        return [body[:10], b'', body[10:]]
    if path == '/no-content':
        start_response('204 No Content', [('Content-Length', '0'), ('X-Thing', ' a ')])
        return []
    if path == '/hop-by-hop':
        start_response('200 OK', [('Content-Length', str(len(body))),
                                  ('Connection', 'close'), ('Keep-Alive', '5')])
        return [body]
    if path == '/bad-header':
        start_response('200 OK', [('Bad Name', 'x')])
        return [body]
    start_response('200 OK', [('Content-Type', 'application/json'),
                              ('Content-Length', str(len(body) + 3))])
    return [body, b'...and more than it said']


def _worker(plain, threads):
    cfg = gunicorn_config.Config()
    cfg.set('threads', threads)
    worker = gunicorn_worker.Worker(1, 1, [], None, 30, cfg, glogging.Logger(cfg))
    worker.poller = gthread.selectors.DefaultSelector()
    worker.wsgi = app
    worker.plain = plain and worker.plain
    if threads > 1:
        # a thread's run, here and now: its outcome as the loop gets it
        def enqueue_req(conn):
            outcome = concurrent.futures.Future()
            outcome.set_result(worker.handle(conn))
            worker.finish_request(conn, outcome)
        worker.enqueue_req = enqueue_req
    return worker


def _send(worker, request):
    """``request``'s answer, raw, and how many requests the plain path took."""
    served = []
    serve_plain = worker._serve_plain
    worker._serve_plain = lambda *args: served.append(1) or serve_plain(*args)
    ours, theirs = socket.socketpair()
    conn = gthread.TConn(worker.cfg, ours, CLIENT, SERVER)
    worker.nr_conns += 1
    theirs.sendall(request)
    theirs.shutdown(socket.SHUT_WR)     # (a close waits for nothing)
    worker._start_reading(conn, b'')
    worker._take(conn, received=False)
    while worker.ready:                  # pipelined requests, in turn
        pipelined = worker.ready.popleft()
        worker._read(pipelined, pipelined.sock, received=True)
    theirs.settimeout(0.05)     # (the loop wrote what it had)
    answer = b''
    try:
        while chunk := theirs.recv(65536):
            answer += chunk
    except TimeoutError:
        pass                             # kept alive
    theirs.close()
    if conn in worker.keepalived_conns:
        worker.poller.unregister(conn.sock)
        worker.keepalived_conns.remove(conn)
    conn.sock.close()
    # (the date and an error's request id differ from one answer to the next)
    answer = re.sub(rb'req-[0-9a-f-]{36}', b'req-x', re.sub(rb'Date: [^\r]*', b'Date: -', answer))
    return answer, len(served)


def _both(request, threads=1):
    gunicorns, plain_taken = _send(_worker(False, threads), request)
    ours, plain = _send(_worker(True, threads), request)
    assert not plain_taken
    assert ours == gunicorns
    return ours, plain


PUT = (b'PUT /resource_providers/%C3%A9t%C3%A9/inventories?a=1&b=%20 HTTP/1.1\r\n'
       b'Host: placement:8778\r\nContent-Type: application/json\r\n'
       b'OpenStack-API-Version: placement 1.39\r\nX-Auth-Token: admin\r\n'
       b'Accept: a\r\naccept:  b \r\nContent-Length: 11\r\n\r\n{"a": true}')

PLAIN = {
    'put with a body, duplicate headers': PUT,
    'get': b'GET / HTTP/1.1\r\nHost: x\r\n\r\n',
    'no headers at all': b'GET /resource_providers HTTP/1.1\r\n\r\n',
    'http/1.0': b'GET / HTTP/1.0\r\n\r\n',
    'http/1.0 kept alive': b'GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    'close asked': b'GET / HTTP/1.1\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n',
    'head': b'HEAD / HTTP/1.1\r\nHost: x\r\n\r\n',
    'chunked answer': b'GET /chunks HTTP/1.1\r\n\r\n',
    'chunked answer, http/1.0': b'GET /chunks HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
    '204': b'DELETE /no-content HTTP/1.1\r\n\r\n',
    'hop-by-hop answer headers': b'GET /hop-by-hop HTTP/1.1\r\n\r\n',
    'the application fails': b'GET /raise HTTP/1.1\r\n\r\n',
    'a bad answer header': b'GET /bad-header HTTP/1.1\r\n\r\n',
}


@pytest.mark.parametrize('threads', [1, 4])
@pytest.mark.parametrize('request_bytes', PLAIN.values(), ids=PLAIN)
def test_a_plain_request_is_answered_as_gunicorn_answers_it(request_bytes, threads):
    _, plain = _both(request_bytes, threads)
    assert plain == 1


def test_what_the_application_sees():
    answer, _ = _both(PUT)
    head, _, body = answer.partition(b'\r\n\r\n')
    assert head.startswith(b'HTTP/1.1 200 OK\r\nServer: gunicorn\r\nDate: -\r\n'
                           b'Connection: keep-alive\r\n')
    seen = json.loads(body[:-3])      # (cut at the Content-Length it gave)
    assert body.endswith(b'...')
    assert seen['PATH_INFO'] == '/resource_providers/\xc3\xa9t\xc3\xa9/inventories'
    assert seen['QUERY_STRING'] == 'a=1&b=%20'
    assert seen['HTTP_ACCEPT'] == 'a,b'
    assert seen['CONTENT_LENGTH'] == '11' and seen['body'] == '{"a": true}'
    assert (seen['REMOTE_ADDR'], seen['SERVER_PORT']) == ('127.0.0.1', '8778')


@pytest.mark.parametrize('threads', [1, 4])
def test_pipelined_requests_each_take_the_plain_path(threads):
    answer, plain = _both(b'GET /a HTTP/1.1\r\n\r\n' + PUT + b'GET /b HTTP/1.1\r\n\r\n', threads)
    assert plain == 3
    assert answer.count(b'HTTP/1.1 200 OK') == 3


GUNICORNS = {
    'chunked request': b'PUT /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n'
                       b'2\r\n{}\r\n0\r\n\r\n',
    'proxy headers': b'GET / HTTP/1.1\r\nX-Forwarded-Proto: https\r\n\r\n',
    'underscore in a name': b'GET / HTTP/1.1\r\nX_Auth_Token: admin\r\n\r\n',
    'lower-case method': b'get / HTTP/1.1\r\n\r\n',
    'fragment': b'GET /a#b HTTP/1.1\r\n\r\n',
    'double slash': b'GET //a HTTP/1.1\r\n\r\n',
    'absolute form': b'GET http://x/a HTTP/1.1\r\n\r\n',
    'not a number': b'PUT /x HTTP/1.1\r\nContent-Length: 2x\r\n\r\n',
    'two lengths': b'PUT /x HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}',
    'folded header': b'GET / HTTP/1.1\r\nAccept: a\r\n b\r\n\r\n',
    'space before the colon': b'GET / HTTP/1.1\r\nAccept : a\r\n\r\n',
    'control character': b'GET / HTTP/1.1\r\nAccept: a\x01\r\n\r\n',
    'http/2 upgrade': b'GET / HTTP/1.1\r\nUpgrade: h2c\r\nHTTP2-Settings: AAAA\r\n\r\n',
}


@pytest.mark.parametrize('request_bytes', GUNICORNS.values(), ids=GUNICORNS)
def test_anything_else_goes_gunicorns_way(request_bytes):
    _, plain = _both(request_bytes)
    assert plain == 0


def test_settings_that_add_to_each_request_turn_it_off(monkeypatch):
    assert _worker(True, 1).plain
    for name, value in (('accesslog', '-'), ('keyfile', 'k'), ('certfile', 'c'),
                        ('proxy_protocol', 'v1')):
        cfg = gunicorn_config.Config()
        cfg.set(name, value)
        assert not gunicorn_worker.plain_http.available(cfg), name
    monkeypatch.setenv('SCRIPT_NAME', '/placement')
    assert not gunicorn_worker.plain_http.available(gunicorn_config.Config())
