"""GET /extensions/candidates/explain: why each root provider fits an
allocation candidates query or not. An extension of this server, not part
of upstream placement's API: no microversion names it, the version
document does not list it, and only the policy rule
``placement:extensions:candidates:explain`` (admin by default) lets a
caller in.

The query string is GET /allocation_candidates' own, read at the
request's microversion (1.10 and later, as that route), checked by the
same schema and parser, so a query placement refuses is refused here with
the same 400 and, where placement's has none, this route's code. Its
searches are bounded as that route's are ([placement]
allocation_candidates_time_limit); a cut explanation says so (``cut``).
"""

import webob

from placement_server import errors
from placement_server import util
from placement_server.capacity import explain
from placement_server.schemas import allocation_candidate as schema

PATH = '/extensions/candidates/explain'
# A refused query whose error has no code of its own.
BAD_QUERY = 'placement.extensions.candidates.bad_query'


@util.since('1.10')
def explain_candidates(req: util.Request) -> webob.Response:
    req.context.can('placement:extensions:candidates:explain')
    util.check_accept(req)
    try:
        util.query_params(req, schema.for_version(req.version))
        with req.db.reader() as conn:
            found = explain.explain(
                conn, req.query_string, str(req.version),
                seconds=req.conf.placement.allocation_candidates_time_limit or None)
    except errors.BadRequest as e:
        if e.code == errors.UNDEFINED:
            e.code = BAD_QUERY
        raise
    return util.json_response(req, found.as_dict(per_root=True), modified=util.last_modified())


ROUTES = [
    (PATH, {'GET': explain_candidates}),
]
