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
