"""GET /allocation_candidates (1.10+): where a request for resources fits."""
from placement_server import util
from placement_server.db import candidates
from placement_server.db import candidates_render
from placement_server.db import candidates_request
from placement_server.schemas import allocation_candidate as schema


@util.since('1.10')
def list_allocation_candidates(req):
    req.context.can('placement:allocation_candidates:list')
    util.check_accept(req)
    util.query_params(req, schema.for_version(req.version))
    request = candidates_request.parse(req.GET, req.version)
    opts = req.conf.placement
    with candidates.paused_gc():
        with req.db.reader() as conn:
            result = candidates.find(conn, request,
                                     randomize=opts.randomize_allocation_candidates,
                                     max_candidates=opts.max_allocation_candidates)
        # The answer is computed now, so it was last modified now.
        return util.json_response(req, candidates_render.render(result, request),
                                  modified=util.last_modified())


ROUTES = [
    ('/allocation_candidates', {'GET': list_allocation_candidates}),
]
