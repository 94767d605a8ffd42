"""Memory of one placement-server worker at 10000 and 100000 providers (issue 15).

For each size and shape the rows are written straight into a fresh
database, as bench/candidates_direct.py writes them (flat: placeload's
providers with inventories, aggregates, traits and 99 allocations; nested:
the gate's trees of 7 providers). Then a fresh process (one worker: our
WSGI application in process, no gunicorn) sends, three times each and in
this order:

  list        GET /resource_providers
  limit 1000  GET /allocation_candidates?<the gate's query>&limit=1000
              (nova asks with limit, max_placement_results = 1000)
  unlimited   GET /allocation_candidates?<the gate's query>

and reports its resident memory when the application is up and after each
kind of request (what it holds on to), and each kind's peak (VmHWM, reset
between kinds: what it needed at most; not ``ru_maxrss``, which Linux
carries over from the parent process across exec). The answers are not
decoded in the worker's process (that would be the client's memory).

    .venv/bin/python bench/worker_memory.py --engine sqlite \\
        --providers 10000 --providers 100000 --shape flat --shape nested

prints a Markdown table and writes bench/results/worker_memory.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import psutil  # noqa: E402

from bench import candidates_direct  # noqa: E402
from bench import harness  # noqa: E402

PHASES = (('list', '/resource_providers'),
          ('limit 1000', '/allocation_candidates?%s&limit=1000'),
          ('unlimited', '/allocation_candidates?%s'))
QUERIES = {'flat': candidates_direct.QUERY, 'nested': candidates_direct.NESTED_QUERY}
REPEAT = 3


def _mib(value):
    return round(value / 2 ** 20, 1)


def _peak_mib():
    with open('/proc/self/status') as f:
        kib = next(int(line.split()[1]) for line in f if line.startswith('VmHWM:'))
    return round(kib / 1024, 1)


def _reset_peak():
    # Linux: writing 5 to clear_refs resets VmHWM, so each phase's peak is
    # its own.
    with open('/proc/self/clear_refs', 'w') as f:
        f.write('5')


def worker(url, shape):
    """The child: one worker's application on ``url``; JSON on stdout."""
    from placement_server.db import api
    from tests.functional import client as client_mod
    client = client_mod.Client(client_mod.make_app(api.Database(url)))
    me = psutil.Process()
    client.get('/', version='1.39')
    found = {'up': {'rss_mib': _mib(me.memory_info().rss), 'peak_mib': _peak_mib()}}
    _reset_peak()
    for phase, path in PHASES:
        path = path % QUERIES[shape] if '%s' in path else path
        seconds = []
        for _ in range(REPEAT):
            start = time.perf_counter()
            resp = client.get(path, version='1.39')
            seconds.append(time.perf_counter() - start)
            if resp.status_int != 200:
                raise RuntimeError('%s: %s %s' % (path, resp.status, resp.body[:300]))
        found[phase] = {'rss_mib': _mib(me.memory_info().rss), 'peak_mib': _peak_mib(),
                        'body_mib': _mib(len(resp.body)),
                        'median_s': round(sorted(seconds)[len(seconds) // 2], 3),
                        # Counted in the bytes: decoding a 100000-provider
                        # answer would take this process hundreds of MiB.
                        'items': resp.body.count(b'"generation":' if phase == 'list'
                                                 else b'"allocations":')}
        del resp
        _reset_peak()
    print(json.dumps(found))


def measure(engine, providers, shape):
    from tests import databases
    test_db = databases.TestDatabase(engine, tempfile.mkdtemp())
    try:
        start = time.perf_counter()
        (candidates_direct.load if shape == 'flat' else candidates_direct.load_nested)(
            test_db.db, providers)
        load_s = round(time.perf_counter() - start, 1)
        test_db.db.dispose()
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), '--child',
                               test_db.url, shape], capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError('worker failed: %s' % proc.stderr[-2000:])
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        return dict(result, engine=engine, providers=providers, shape=shape, load_s=load_s)
    finally:
        test_db.drop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--engine', action='append', choices=harness.ENGINES)
    parser.add_argument('--providers', action='append', type=int)
    parser.add_argument('--shape', action='append', choices=sorted(QUERIES))
    parser.add_argument('--child', nargs=2, metavar=('URL', 'SHAPE'), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return worker(*args.child)
    results = []
    print('| engine | shape | providers | up MiB | list: items, RSS / peak MiB | '
          'limit 1000: RSS / peak MiB | unlimited: candidates, body MiB, RSS / peak MiB |')
    print('|---|---|---|---|---|---|---|')
    for engine in args.engine or ['sqlite']:
        for shape in args.shape or ['flat']:
            for providers in args.providers or [10000]:
                r = measure(engine, providers, shape)
                results.append(r)
                lst, lim, full = r['list'], r['limit 1000'], r['unlimited']
                print('| %s | %s | %d | %s | %d, %s / %s | %s / %s | %d, %s, %s / %s |' % (
                    engine, shape, providers, r['up']['rss_mib'], lst['items'],
                    lst['rss_mib'], lst['peak_mib'], lim['rss_mib'], lim['peak_mib'],
                    full['items'], full['body_mib'], full['rss_mib'], full['peak_mib']),
                    flush=True)
    harness.save(os.path.join(harness.TOP, 'bench', 'results', 'worker_memory.json'), results)


if __name__ == '__main__':
    main()
