"""GET /allocation_candidates (1.10+): where a request for resources fits."""

import logging

import webob

from placement_server import candidates
from placement_server import util
from placement_server.candidates import render
from placement_server.candidates import request as candidates_request
from placement_server.schemas import allocation_candidate as schema

LOG = logging.getLogger(__name__)


@util.since('1.10')
def list_allocation_candidates(req: util.Request) -> webob.Response:
    req.context.can('placement:allocation_candidates:list')
    util.check_accept(req)
    util.query_params(req, schema.for_version(req.version))
    request = candidates_request.parse(req.GET, req.version)
    opts = req.conf.placement
    # The same query at the same version asks the same. With randomize the
    # limit only samples the shuffled answer: queries that differ in it
    # alone share one kept answer.
    asked = tuple(sorted((name, value) for name, value in req.GET.items()
                         if not (name == 'limit' and opts.randomize_allocation_candidates)))
    with candidates.paused_gc():
        with req.db.reader() as conn:
            result = candidates.find(conn, request,
                                     randomize=opts.randomize_allocation_candidates,
                                     max_candidates=opts.max_allocation_candidates,
                                     strategy=opts.allocation_candidates_generation_strategy,
                                     seconds=opts.allocation_candidates_time_limit or None,
                                     key=(req.version, asked))
        if result.cut:
            LOG.warning('GET /allocation_candidates?%s: cut after %s s '
                        '([placement] allocation_candidates_time_limit) with %d candidates',
                        req.query_string, opts.allocation_candidates_time_limit,
                        len(result.candidates))
        body = render.render(result, request)
        # Free the big structures before collection resumes, or its first
        # pass walks them all.
        del result
        # The answer is computed now, so it was last modified now.
        resp = util.json_response(req, body, modified=util.last_modified())
        del body
    return resp


ROUTES = [
    ('/allocation_candidates', {'GET': list_allocation_candidates}),
]
