"""What a worker's refresh costs per request, in process (issue 35).

The gate's flat workload (bench/candidates_direct.py's ``load``: placeload's
providers with their inventories, aggregates, traits and 99 allocations),
then ``--writes`` inventory writes through the API, so that the change
rows a refresh reads through are there. Then, each ``--repeat`` times, the
median of:

- ``refresh``: ``ResourceView.refresh`` when nothing changed, in a reader
  transaction of its own (what every list and candidates request sends
  first: one statement);
- ``list``: GET /resource_providers?name=rp7 through the whole WSGI stack
  in process (its refresh included);
- ``write + refresh``: one PUT of a provider's VCPU inventory (its change
  record), then the refresh that reloads that provider.

    .venv/bin/python bench/view_refresh.py --engine sqlite --engine postgresql \\
        --engine mysql --providers 1000

Before and after a change: run it from each tree (e.g. ``git archive main``
unpacked beside, with this file copied in), alternating.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import candidates_direct  # noqa: E402
from placement_server import view as view_mod  # noqa: E402
from tests import databases  # noqa: E402
from tests.functional import client as client_mod  # noqa: E402


def timed(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def run(engine, providers, writes, repeat, workdir):
    test_db = databases.TestDatabase(engine, workdir)
    try:
        db = test_db.db
        candidates_direct.load(db, providers)
        api = client_mod.Client(client_mod.make_app(db), version='1.39')
        rps = [p['uuid'] for p in api.get('/resource_providers').json['resource_providers']]

        def write(n=[0]):
            rp = rps[n[0] % len(rps)]
            n[0] += 1
            gen = api.get('/resource_providers/%s' % rp).json['generation']
            resp = api.put('/resource_providers/%s/inventories/VCPU' % rp, {
                'resource_provider_generation': gen, 'total': 32 + n[0] % 5, 'max_unit': 16})
            assert resp.status_int == 200, resp.body
        for _ in range(writes):
            write()
        view = view_mod.ResourceView()
        with db.reader() as conn:
            view.refresh(conn)

        def refresh():
            with db.reader() as conn:
                view.refresh(conn)

        def listing():
            resp = api.get('/resource_providers?name=rp7')
            assert resp.status_int == 200, resp.body

        def write_and_refresh():
            write()
            refresh()
        listing()
        return {'refresh_us': round(timed(refresh, repeat), 1),
                'list_us': round(timed(listing, repeat), 1),
                'write_refresh_us': round(timed(write_and_refresh, max(repeat // 10, 20)), 1)}
    finally:
        test_db.drop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--engine', action='append', choices=['sqlite', 'postgresql', 'mysql'])
    parser.add_argument('--providers', type=int, default=1000)
    parser.add_argument('--writes', type=int, default=500)
    parser.add_argument('--repeat', type=int, default=1000)
    args = parser.parse_args()
    import tempfile
    with tempfile.TemporaryDirectory() as workdir:
        for engine in args.engine or ['sqlite']:
            print(json.dumps(dict(engine=engine, providers=args.providers,
                                  **run(engine, args.providers, args.writes, args.repeat,
                                        workdir))), flush=True)


if __name__ == '__main__':
    main()
