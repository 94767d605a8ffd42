"""Upstream placement's side of bench/candidates_direct.py.

Runs in upstream's virtualenv (.venv-upstream, see tests/upstream.py):

    python candidates_upstream_direct.py sync DB_URL
        create upstream's schema (its own alembic migrations);
    python candidates_upstream_direct.py time DB_URL QUERY VERSION REPEAT
        build upstream's WSGI app in process and send GET
        /allocation_candidates?QUERY REPEAT times through it, as
        candidates_direct.py does for ours; print JSON with the candidate
        count and the median wall and CPU milliseconds.
"""
import json
import statistics
import sys
import time

from oslo_config import cfg
from placement import conf as placement_conf
from placement import db_api
from placement import deploy
from placement.db.sqlalchemy import migration
import webob


def make_conf(url):
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    # connection is a required option: set before the options are parsed.
    conf.set_override('connection', url, group='placement_database')
    conf.set_override('auth_strategy', 'noauth2', group='api')
    conf([], project='placement', default_config_files=[])
    return conf


def main():
    mode, url = sys.argv[1], sys.argv[2]
    conf = make_conf(url)
    if mode == 'sync':
        db_api.configure(conf)
        migration.upgrade('head')
        return
    query, version, repeat = sys.argv[3], sys.argv[4], int(sys.argv[5])
    db_api.configure(conf)
    app = deploy.loadapp(conf)

    def call():
        req = webob.Request.blank('/allocation_candidates?' + query)
        req.headers['X-Auth-Token'] = 'admin'
        req.headers['OpenStack-API-Version'] = 'placement %s' % version
        resp = req.get_response(app)
        assert resp.status_int == 200, resp.body
        return resp

    count = len(json.loads(call().body)['allocation_requests'])
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    print(json.dumps({'candidates': count,
                      'request_p50_ms': [round(statistics.median(wall), 2),
                                         round(statistics.median(cpu), 2)]}))


if __name__ == '__main__':
    main()
