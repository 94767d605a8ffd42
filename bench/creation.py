"""Provider creation under placeload, and where its time goes.

placeload (the gate's loader, 200 requests in flight) creates N providers,
each with inventory, aggregates and traits: four writes. Three servers
take it in turn, in the order A B C then C B A so that a machine that
drifts weighs on each alike, each under the same gunicorn command line
(2 workers, bench.harness.WORKER) on a fresh database of the engine:

  floor     a WSGI app that answers every call 200 and does nothing: what
            placeload, gunicorn and the two CPUs cost by themselves
  ours      this tree's placement server
  upstream  openstack-placement, from its side virtualenv

For each run: the wall time and the CPU seconds spent by placeload, by
the server's workers and by the database's processes (all of them: the
machine runs nothing else).

    PLACEMENT_UPSTREAM_VENV=.venv-upstream .venv/bin/python bench/creation.py \\
        --engine postgresql --engine mysql --providers 1000 [--rounds 3]

writes bench/results/creation-<engine>-<n>.json and prints a table.
"""
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402
from bench.allocation_candidates import PLACELOAD_IN_FLIGHT  # noqa: E402
from tests import upstream  # noqa: E402

ORDER = ('floor', 'ours', 'upstream')
DATABASE_PROCESSES = {'postgresql': ('postgres',), 'mysql': ('mariadbd', 'mysqld'),
                      'sqlite': ()}


SERVERS = harness.SERVERS


def _cpu(processes):
    total = 0.0
    for p in processes:
        with contextlib.suppress(psutil.Error):
            times = p.cpu_times()
            total += times.user + times.system
    return total


def _database_processes(engine):
    names = DATABASE_PROCESSES[engine]
    return [p for p in psutil.process_iter(['name']) if p.info['name'] in names]


def _placeload(url, count, in_flight):
    result = subprocess.run([upstream.venv_bin('placeload'), url, str(count), str(in_flight)],
                            env=upstream.clean_env(), capture_output=True, text=True)
    failures = sum(result.stdout.count(c) for c in 'RIATC')
    if result.returncode or failures:
        raise RuntimeError('placeload failed (%d failed calls): %s'
                           % (failures, result.stdout[-500:] + result.stderr[-500:]))


def run_once(engine, name, providers, workers):
    """One server, one fresh database, one placeload run: its figures."""
    workdir = tempfile.mkdtemp(prefix='bench-creation-')
    # Upstream refuses concurrent writers on SQLite: one at a time there.
    in_flight = 1 if engine == 'sqlite' else PLACELOAD_IN_FLIGHT
    with contextlib.ExitStack() as stack:
        db = stack.enter_context(harness.ScratchDatabase(engine, workdir, name))
        server = stack.enter_context(
            SERVERS[name](db.url, os.path.join(workdir, name), workers=workers))
        _placeload(server.url, 10, in_flight)   # warm up, as the gate does
        pool = psutil.Process(server.proc.pid).children()
        database = _database_processes(engine)
        before = (_cpu(pool), _cpu(database), resource.getrusage(resource.RUSAGE_CHILDREN))
        start = time.perf_counter()
        _placeload(server.url, providers, in_flight)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {'seconds': round(wall, 2),
                'placeload_cpu': round(after.ru_utime + after.ru_stime
                                       - before[2].ru_utime - before[2].ru_stime, 2),
                'workers_cpu': round(_cpu(pool) - before[0], 2),
                'database_cpu': round(_cpu(_database_processes(engine)) - before[1], 2)}


def main():
    parser = harness.side_by_side_parser(__doc__, servers=SERVERS)
    parser.add_argument('--providers', type=int, default=1000)
    parser.add_argument('--rounds', type=int, default=1,
                        help='times to run the order and its reverse (the machine drifts)')
    args = parser.parse_args()
    order = [s for s in ORDER if s in (args.server or ORDER)]
    for engine in args.engine or ['postgresql']:
        runs = {name: [] for name in order}
        for _ in range(args.rounds):
            for name in order + order[::-1]:
                runs[name].append(run_once(engine, name, args.providers, args.workers))
                print(engine, name, runs[name][-1], flush=True)
        summary = {name: {key: statistics.mean(r[key] for r in got) for key in got[0]}
                   for name, got in runs.items()}
        harness.save(os.path.join(harness.TOP, 'bench', 'results', 'creation-%s-%d.json'
                                  % (engine, args.providers)),
                     {'runs': runs, 'mean': summary, 'workers': args.workers})
        print('\n%s, %d providers, %d workers (mean of %d runs each)'
              % (engine, args.providers, args.workers, 2 * args.rounds))
        print('| server | seconds | placeload CPU | workers CPU | database CPU |')
        print('|---|---|---|---|---|')
        for name, figures in summary.items():
            print('| %s | %.1f | %.1f | %.1f | %.1f |' % (
                name, figures['seconds'], figures['placeload_cpu'],
                figures['workers_cpu'], figures['database_cpu']))
        if 'ours' in summary and 'upstream' in summary:
            print('upstream / ours: %.2fx' % (summary['upstream']['seconds']
                                             / summary['ours']['seconds']))
            # each run of ours against the upstream run next to it
            print('run by run: %s' % ', '.join(
                '%.2fx' % (theirs['seconds'] / mine['seconds'])
                for mine, theirs in zip(runs['ours'], runs['upstream'])))


if __name__ == '__main__':
    main()
