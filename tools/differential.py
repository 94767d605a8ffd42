#!/usr/bin/env python3
"""Differential run against upstream placement 16.0.0 (tests/differential/).

    tools/differential.py --seeds 20 --calls 300 --engine postgresql

Starts upstream (side virtualenv .venv-upstream) and our placement-server
(--instances of it, --workers each) on scratch databases of the engine,
sends each seed's random calls to both, compares the answers, shrinks each
divergence to its shortest reproduction and prints it. Exit status 1 when
any seed diverged in a way tests/differential/known.py does not explain.
"""
import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.differential import runner  # noqa: E402
from tests.differential import seeds as seeds_mod  # noqa: E402

ENGINE_NAMES = {'sqlite': 'sqlite', 'postgresql': 'postgresql', 'postgres': 'postgresql',
                'mariadb': 'mysql', 'mysql': 'mysql'}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, default=10, help='how many seeds (default 10)')
    parser.add_argument('--first-seed', type=int, default=1000, help='the first seed')
    parser.add_argument('--calls', type=int, default=200, help='calls per seed (default 200)')
    parser.add_argument('--engine', choices=sorted(ENGINE_NAMES), default='sqlite')
    parser.add_argument('--instances', type=int, default=2,
                        help='our placement-server processes (default 2)')
    parser.add_argument('--workers', type=int, default=2,
                        help='workers per instance (default 2)')
    parser.add_argument('--texts', action='store_true',
                        help='an error text alone differing is a divergence too '
                             '(by default such texts are listed at the end)')
    parser.add_argument('--shrink-budget', type=int, default=200,
                        help='replays the shrinker may spend per divergence')
    args = parser.parse_args(argv)
    engine = ENGINE_NAMES[args.engine]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='differential-') as workdir:
        with runner.Pair(engine, workdir, args.instances, args.workers,
                         texts=args.texts) as pair:
            report = seeds_mod.run_seeds(
                pair, range(args.first_seed, args.first_seed + args.seeds), args.calls,
                shrink_budget=args.shrink_budget)
            requests_sent = pair.requests
    minutes = (time.monotonic() - started) / 60
    print('\n%s: %d seeds, %d calls compared (%d requests in all, shrinking included), '
          '%.1f minutes; %d diverged' % (engine, report.seeds, report.calls, requests_sent,
                                         minutes, len(report.divergences)))
    for reason, count in sorted(report.tolerated.items()):
        print('  tolerated %dx: %s' % (count, reason))
    if report.wording:
        print('error texts alone differing (%d kinds):' % len(report.wording))
        seeds_mod.print_wording(report)
    return 1 if report.divergences else 0


if __name__ == '__main__':
    sys.exit(main())
