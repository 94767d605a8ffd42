"""Where an HTTP/1.1 request ends, judged from the bytes received so far.

placement-server's worker reads each request whole before a thread runs
the application (placement_server.cmd.gunicorn_worker): its event loop
must know when the last byte has arrived, and must refuse at once what
can never be served (a request line or body over the limits, a malformed
chunk size). Anything else odd about the head (a Content-Length that is
not a number, two framings) is gunicorn's to judge: the request is handed
over as it is, and gunicorn's parser answers.
"""
import dataclasses
import re

_EXPECT = re.compile(rb'\r\nexpect:[^\r]*', re.I)
# A chunk size line: hex digits, then optional extensions.
_CHUNK_SIZE = re.compile(rb'([0-9A-Fa-f]{1,16})[ \t]*(;[^\r\n]*)?')


@dataclasses.dataclass(frozen=True)
class Refusal:
    """An answer sent without running the application."""
    status: int
    title: str
    detail: str


@dataclasses.dataclass(frozen=True)
class Limits:
    request_line: int        # bytes in the request line, CRLF excluded
    head: int                # bytes in the whole head
    body: int                # bytes in the body (decoded, when chunked)


@dataclasses.dataclass(frozen=True)
class Framing:
    """What is known of the request at the head of the buffer."""
    # Bytes of the buffer the request takes; None: not all received yet.
    end: int | None = None
    head_end: int | None = None      # bytes of the head, None until received
    refusal: Refusal | None = None
    expects_continue: bool = False   # Expect: 100-continue, body still to come
    # Chunked: where the next chunk size line starts, and the body so far
    # (the next judgement resumes there instead of walking every chunk).
    chunk_pos: int = 0
    chunked_size: int = 0


def judge(buf: bytes | bytearray, limits: Limits,
          before: Framing | None = None) -> Framing:
    """The framing of the request starting at ``buf[0]``; ``before`` is the
    judgement of a shorter prefix of ``buf``, if any."""
    head_end = buf.find(b'\r\n\r\n')
    line_end = buf.find(b'\r\n')
    if line_end < 0 and len(buf) > limits.request_line + 1 or line_end > limits.request_line:
        return Framing(refusal=Refusal(414, 'Request-URI Too Long',
                                       'The request line is longer than %d bytes.'
                                       % limits.request_line))
    if head_end < 0:
        if len(buf) > limits.head:
            return Framing(end=len(buf))     # gunicorn refuses an oversized head
        return Framing()
    head_end += 4
    length, chunked, expects = _framing_headers(bytes(buf[line_end + 2:head_end]))
    if length is None and not chunked:
        return Framing(end=head_end, head_end=head_end)
    if length is not None and chunked or length == -1:
        return Framing(end=head_end, head_end=head_end)   # gunicorn refuses
    if length is not None:
        if length > limits.body:
            return Framing(head_end=head_end, refusal=_too_large(limits))
        if len(buf) - head_end >= length:
            return Framing(end=head_end + length, head_end=head_end)
        return Framing(head_end=head_end, expects_continue=expects and len(buf) == head_end)
    return _chunked(buf, head_end, limits, expects, before)


def _framing_headers(head: bytes) -> tuple[int | None, bool, bool]:
    """(Content-Length, -1 when not one number; chunked; Expect: 100-continue)."""
    length: int | None = None
    chunked = expects = False
    for line in head.split(b'\r\n'):
        name, sep, value = line.partition(b':')
        if not sep:
            continue
        name, value = name.strip().lower(), value.strip()
        if name == b'content-length':
            if not value.isdigit() or length is not None:
                return -1, chunked, expects
            length = int(value)
        elif name == b'transfer-encoding':
            codings = [c.strip().lower() for c in value.split(b',')]
            chunked = chunked or codings[-1] == b'chunked'
            if codings[-1] != b'chunked':
                return -1, chunked, expects    # gunicorn answers 501
        elif name == b'expect':
            expects = value.lower() == b'100-continue'
    return length, chunked, expects


def _too_large(limits: Limits) -> Refusal:
    return Refusal(413, 'Request Entity Too Large',
                   'The request body is larger than %d bytes.' % limits.body)


def _chunked(buf: bytes | bytearray, head_end: int, limits: Limits,
             expects: bool, before: Framing | None) -> Framing:
    pos, size = head_end, 0
    if before is not None and before.chunk_pos > head_end:
        pos, size = before.chunk_pos, before.chunked_size

    def waiting() -> Framing:
        return Framing(head_end=head_end, chunk_pos=pos, chunked_size=size)
    while True:
        start = pos
        line_end = buf.find(b'\r\n', pos)
        if line_end < 0:
            if len(buf) - pos > 1024:     # no chunk size line is that long
                return Framing(head_end=head_end, refusal=_bad_chunk())
            return Framing(head_end=head_end, expects_continue=expects and pos == len(buf),
                           chunk_pos=pos, chunked_size=size)
        match = _CHUNK_SIZE.fullmatch(bytes(buf[pos:line_end]))
        if match is None:
            return Framing(head_end=head_end, refusal=_bad_chunk())
        chunk = int(match.group(1), 16)
        if size + chunk > limits.body:
            return Framing(head_end=head_end, refusal=_too_large(limits))
        if chunk == 0:
            pos = line_end + 2
            # Trailers, if any, end with an empty line.
            if buf[pos:pos + 2] == b'\r\n':
                return Framing(end=pos + 2, head_end=head_end)
            trailers_end = buf.find(b'\r\n\r\n', pos)
            if trailers_end < 0:
                pos = start     # the zero chunk's line, judged again
                return waiting()
            return Framing(end=trailers_end + 4, head_end=head_end)
        data = line_end + 2
        if len(buf) < data + chunk + 2:
            return waiting()     # resumes at this chunk's size line
        if buf[data + chunk:data + chunk + 2] != b'\r\n':
            return Framing(head_end=head_end, refusal=Refusal(
                400, 'Bad Request', 'A chunk does not end where its size says.'))
        pos, size = data + chunk + 2, size + chunk


def _bad_chunk() -> Refusal:
    return Refusal(400, 'Bad Request', 'Invalid chunk size.')


def without_expect(head: bytes) -> bytes:
    """``head`` without its Expect header (once 100 Continue was sent)."""
    return _EXPECT.sub(b'', head)
