"""GET /: the version document."""
from placement_server import microversion
from placement_server import util


def home(req):
    util.check_accept(req)
    version = {
        'id': 'v%s' % microversion.MIN_VERSION[0] + '.0',
        'max_version': str(microversion.MAX_VERSION),
        'min_version': str(microversion.MIN_VERSION),
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }
    return util.json_response(req, {'versions': [version]})
