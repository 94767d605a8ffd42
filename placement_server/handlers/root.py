"""GET /: the version document."""

import webob

from placement_server import microversion
from placement_server import util


def home(req: util.Request) -> webob.Response:
    util.check_accept(req)
    version = {
        'id': 'v%s' % microversion.MIN_VERSION[0] + '.0',
        'max_version': str(microversion.MAX_VERSION),
        'min_version': str(microversion.MIN_VERSION),
        'status': 'CURRENT',
        'links': [{'rel': 'self', 'href': ''}],
    }
    # From 1.15 every GET says Last-Modified; the version document's is now.
    return util.json_response(req, {'versions': [version]}, modified=util.last_modified())
