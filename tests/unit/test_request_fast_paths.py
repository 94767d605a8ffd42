"""The per-request shortcuts of issue 40 answer as the slow paths do: the
negotiated-version memo and the Accept headers taken without parsing."""
import pytest

from placement_server import errors
from placement_server import microversion
from placement_server import util


def test_a_remembered_version_is_the_one_negotiated():
    for header in ('placement 1.39', 'placement latest', 'compute 2.1, placement 1.10',
                   'PLACEMENT 1.2', 'compute 2.1'):
        first = microversion.negotiate(header)
        assert microversion.negotiate(header) == first == microversion._negotiate(header)


@pytest.mark.parametrize('header, refusal', [
    ('placement 1.x', microversion.InvalidVersion),
    ('placement 9.99', microversion.UnacceptableVersion),
])
def test_a_refused_version_is_refused_every_time(header, refusal):
    for _ in range(3):
        with pytest.raises(refusal):
            microversion.negotiate(header)


def test_clients_cannot_grow_the_memo_without_bound():
    for minor in range(2000):
        microversion.negotiate('placement 1.10, compute 2.%d' % minor)
    assert len(microversion._NEGOTIATED) <= microversion._NEGOTIATED_MAX


@pytest.mark.parametrize('accept', [None, '', 'application/json', '*/*',
                                    'application/*', 'text/html, application/json;q=0.5'])
def test_json_is_acceptable(accept):
    req = util.Request.blank('/', headers={'Accept': accept} if accept is not None else {})
    util.check_accept(req)


@pytest.mark.parametrize('accept', ['text/html', 'application/json;q=0', 'image/png'])
def test_json_is_not_acceptable(accept):
    req = util.Request.blank('/', headers={'Accept': accept})
    with pytest.raises(errors.NotAcceptable):
        util.check_accept(req)


@pytest.mark.parametrize('query, refused', [
    ('name=%00', True), ('name=a%00b', True), ('name=%%00', True), ('name=\x00', True),
    ('name=%2500', False), ('name=%0', False), ('name=100%25', False), ('name=a', False),
])
def test_a_nul_in_the_query_is_refused_before_routing(query, refused):
    """The dispatcher looks for %00 instead of decoding the query string:
    the same verdict as decoding it (a NUL is refused, a %25-escaped one is
    a name like another)."""
    from urllib.parse import unquote_to_bytes

    from placement_server import wsgi

    assert (b'\x00' in unquote_to_bytes(query)) is refused
    environ = {'REQUEST_METHOD': 'GET', 'PATH_INFO': '/resource_providers',
               'QUERY_STRING': query, 'openstack.request_id': 'req-x'}
    dispatcher = wsgi.Dispatcher.__new__(wsgi.Dispatcher)
    dispatcher.db = dispatcher.conf = None

    class Routed(Exception):
        pass

    class Router:
        def match(self, method, path):
            raise Routed()
    dispatcher.router = Router()
    with pytest.raises(errors.BadRequest if refused else Routed):
        dispatcher(environ, None)
