"""One scrape of the capacity series, in process (issue 27).

placeload's flat cloud (bench/candidates_direct.py's ``load``: every
provider with VCPU, MEMORY_MB and DISK_GB, aggregates and traits) written
straight into the tables, three flavors configured; then the capacity
exporter's text (placement_server.capacity.metrics) timed as a scrape
sees it:

  cold       the first scrape of a worker: its view loaded, every tree computed
  unchanged  nothing written since the last scrape (the view's one statement)
  busy       N claims (each a tree changed) through the API between scrapes

The target: a scrape under 100 ms per worker at 10000 providers.

    .venv/bin/python bench/capacity_scrape.py --engine sqlite --engine postgresql \\
        --engine mysql --providers 10000
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import candidates_direct  # noqa: E402
from placement_server.capacity import flavors  # noqa: E402
from placement_server.capacity import metrics  # noqa: E402
from tests import databases  # noqa: E402
from tests.functional import client as client_mod  # noqa: E402

FLAVORS = ['m1.small: VCPU=1, MEMORY_MB=2048, DISK_GB=20',
           'm1.large: VCPU=4, MEMORY_MB=8192, DISK_GB=80',
           'avx: VCPU=2, MEMORY_MB=4096, trait:HW_CPU_X86_AVX2=required']


def _ms(fn):
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def run(engine, providers, repeat, claims):
    test_db = databases.TestDatabase(engine, tempfile.mkdtemp())
    try:
        candidates_direct.load(test_db.db, providers)
        client = client_mod.Client(client_mod.make_app(test_db.db))
        rps = client.get('/resource_providers', version='1.39').json[
            'resource_providers'][:claims]
        exporter = metrics.Exporter(test_db.db, flavors.parse_all(FLAVORS))
        size = 0

        def scrape():
            nonlocal size
            size = len(exporter.text())
        cold = _ms(scrape)
        unchanged = [_ms(scrape) for _ in range(repeat)]
        busy = []
        for _ in range(repeat):
            for rp in rps:
                resp = client.put('/allocations/%s' % uuid.uuid4(), {
                    'allocations': {rp['uuid']: {'resources': {'VCPU': 1, 'MEMORY_MB': 128}}},
                    'project_id': 'p', 'user_id': 'u', 'consumer_generation': None},
                    version='1.28')
                assert resp.status_int == 204, resp.body
            busy.append(_ms(scrape))
        return {'engine': engine, 'providers': providers, 'bytes': size,
                'cold_ms': round(cold, 1),
                'unchanged_p50_ms': round(statistics.median(unchanged), 1),
                'busy_claims_between': claims,
                'busy_p50_ms': round(statistics.median(busy), 1),
                'busy_max_ms': round(max(busy), 1)}
    finally:
        test_db.drop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--engine', action='append', choices=['sqlite', 'postgresql', 'mysql'])
    parser.add_argument('--providers', type=int, action='append')
    parser.add_argument('--repeat', type=int, default=15)
    parser.add_argument('--claims', type=int, default=10,
                        help='claims (trees changed) between two busy scrapes')
    args = parser.parse_args()
    for engine in args.engine or ['sqlite']:
        for providers in args.providers or [10000]:
            print(json.dumps(run(engine, providers, args.repeat, args.claims)), flush=True)


if __name__ == '__main__':
    main()
