"""Where a request ends, judged by placement-server's worker before any
thread runs it (placement_server.cmd.request_framing)."""
import pytest

from placement_server.cmd import request_framing as framing

LIMITS = framing.Limits(request_line=40, head=400, body=100)
HEAD = b'POST /resource_providers HTTP/1.1\r\nHost: x\r\n'


def judge(data):
    return framing.judge(data, LIMITS)


@pytest.mark.parametrize('request_bytes', [
    b'GET / HTTP/1.1\r\nHost: x\r\n\r\n',
    HEAD + b'Content-Length: 2\r\n\r\n{}',
    HEAD + b'Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
    HEAD + b'Transfer-Encoding: chunked\r\n\r\n2;x=y\r\n{}\r\n0\r\nT: 1\r\n\r\n',
    # framings gunicorn refuses: handed over with the head
    HEAD + b'Content-Length: many\r\n\r\n',
    HEAD + b'Transfer-Encoding: gzip\r\n\r\n',
])
@pytest.mark.parametrize('pipelined', [b'', b'GET / HTTP/1.1\r\n'])
def test_a_whole_request_ends_where_its_framing_says(request_bytes, pipelined):
    judged = judge(request_bytes + pipelined)
    assert judged.refusal is None
    assert judged.end == len(request_bytes)


@pytest.mark.parametrize('data', [
    b'GET / HTTP/1.1\r\nHost: x\r\n',
    HEAD + b'Content-Length: 2\r\n\r\n{',
    HEAD + b'Transfer-Encoding: chunked\r\n\r\n2\r\n{',
    HEAD + b'Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nT: 1\r\n',
])
def test_a_request_still_arriving_has_no_end(data):
    judged = judge(data)
    assert judged.end is None and judged.refusal is None


def test_expect_continue_is_noted_while_the_body_is_awaited():
    head = HEAD + b'Expect: 100-continue\r\nContent-Length: 2\r\n\r\n'
    assert judge(head).expects_continue
    assert not judge(head + b'{').expects_continue


@pytest.mark.parametrize('data, status', [
    (b'GET /' + b'a' * 40 + b' HTTP/1.1\r\n', 414),
    (b'GET /' + b'a' * 40, 414),                       # no end of line yet
    (HEAD + b'Content-Length: 101\r\n\r\n', 413),
    (HEAD + b'Transfer-Encoding: chunked\r\n\r\n65\r\n', 413),
    (HEAD + b'Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', 400),
    (HEAD + b'Transfer-Encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n', 400),
])
def test_what_can_never_be_served_is_refused_at_once(data, status):
    assert judge(data).refusal.status == status


def test_the_expect_header_goes_once_100_continue_is_sent():
    head = HEAD + b'Expect: 100-continue\r\nContent-Length: 2\r\n\r\n'
    assert framing.without_expect(head) == HEAD + b'Content-Length: 2\r\n\r\n'


@pytest.mark.parametrize('request_bytes', [
    HEAD + b'Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n1\r\n \r\n0\r\n\r\n',
    HEAD + b'Transfer-Encoding: chunked\r\n\r\n2;x=y\r\n{}\r\n0\r\nT: 1\r\n\r\n',
    HEAD + b'Content-Length: 2\r\n\r\n{}',
])
def test_a_request_judged_as_it_arrives_byte_by_byte(request_bytes):
    # The worker judges again on every read, from where it left off.
    judged = framing.Framing()
    for i in range(1, len(request_bytes)):
        judged = framing.judge(request_bytes[:i], LIMITS, judged)
        assert judged.end is None and judged.refusal is None, i
    judged = framing.judge(request_bytes, LIMITS, judged)
    assert judged.end == len(request_bytes)
