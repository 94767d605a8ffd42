"""The speed guard: the previous release against this tree, cell by cell (issue 40).

The previous release is the commit named in bench/baseline.txt. Each side
is a tree: the baseline exported from git (``git archive``, cached under
the temporary directory by commit), the other this work tree (or any
commit given with ``--tree``). Per engine each tree gets a fresh database
and its own process (bench/cpu_cells.py) running the application as
deployed, in process, filled through the API; the gate cells (GET /, flat
and nested candidates, list providers, PUT /allocations, POST
/resource_providers) are then sent to the two processes in ABBA order
(BAAB the next round), and each batch's process CPU time is read. CPU,
not wall: on a shared machine the other processes' load stretches wall
time, barely what a process itself spends. Per cell the report gives the
median CPU-ms per request of each side over the rounds and the median of
the rounds' ratios (new / old, above 1 is slower) with their spread; the
command exits 1 when any cell's median ratio is above ``--threshold``
(1.20: 20% worse).

    .venv/bin/python bench/regression.py                       # SQLite + PostgreSQL, short
    .venv/bin/python bench/regression.py --engine mysql --flat 1000 --trees 250 --rounds 30
    .venv/bin/python bench/regression.py --baseline d69859b --tree ef43f45

The short form (the default sizes) is what tests/test_speed_guard.py runs
in the README's test command. The baseline runs with this virtualenv: a
baseline whose dependencies differ needs its own (``--python``).
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if TOP not in sys.path:
    sys.path.insert(0, TOP)

from bench import cpu_cells  # noqa: E402
from bench import harness  # noqa: E402

BASELINE_FILE = os.path.join(TOP, 'bench', 'baseline.txt')
CELLS_SCRIPT = os.path.join(TOP, 'bench', 'cpu_cells.py')
# CPU per batch: long enough that the clock's tick and a stray collection
# do not weigh, short enough for many rounds.
BATCH_CPU = 0.02


def baseline_commit():
    with open(BASELINE_FILE) as f:
        return next(line.split()[0] for line in f if line.strip() and not line.startswith('#'))


def tree_of(commit):
    """A directory holding ``commit``'s files (exported once, then reused)."""
    sha = subprocess.run(['git', '-C', TOP, 'rev-parse', '--verify', commit + '^{commit}'],
                         check=True, capture_output=True, text=True).stdout.strip()
    cache = os.path.join(tempfile.gettempdir(), 'placement-bench-trees')
    tree = os.path.join(cache, sha)
    if not os.path.isdir(tree):
        os.makedirs(cache, exist_ok=True)
        scratch = tempfile.mkdtemp(dir=cache)
        archive = subprocess.run(['git', '-C', TOP, 'archive', sha], check=True,
                                 capture_output=True).stdout
        subprocess.run(['tar', '-x', '-C', scratch], input=archive, check=True)
        try:
            os.rename(scratch, tree)
        except OSError:       # another run exported it meanwhile
            subprocess.run(['rm', '-rf', scratch], check=True)
    return tree


class Side:
    """One tree's cpu_cells process on its own database."""

    def __init__(self, label, tree, url, flat, trees, python):
        self.label = label
        self.proc = subprocess.Popen(
            [python, CELLS_SCRIPT, '--tree', tree, '--url', url,
             '--flat', str(flat), '--trees', str(trees)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, PYTHONPATH=tree))

    def ready(self):
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit('%s: the cells process ended (%s)' % (self.label, self.proc.wait()))
        assert json.loads(line) == {'ready': True}

    def run(self, cell, n):
        self.proc.stdin.write(json.dumps({'cell': cell, 'n': n}) + '\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit('%s: the cells process ended on %s (%s)'
                             % (self.label, cell, self.proc.wait()))
        return json.loads(line)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def compare(engine, old_tree, new_tree, flat, trees, rounds, python, served=None):
    """{cell: (old CPU-ms per request, new, new/old, old/new wall)}: lists, one
    item per round. ``served``: (workers, concurrency) to measure the trees'
    placement-server processes instead of the application in process."""
    workdir = tempfile.mkdtemp(prefix='speed-guard-',
                               dir=None if served else _memory_dir())
    with harness.ScratchDatabase(engine, workdir, 'old') as old_db, \
            harness.ScratchDatabase(engine, workdir, 'new') as new_db:
        sides = []
        try:
            for label, tree, db in (('baseline', old_tree, old_db), ('tree', new_tree, new_db)):
                if served:
                    from bench import served_cells
                    sides.append(served_cells.ServedSide(label, tree, db.url, workdir, *served,
                                                         python=python))
                else:
                    sides.append(Side(label, tree, db.url, flat, trees, python))
            for side in sides:
                side.ready(flat, trees) if served else side.ready()
            samples = _rounds(*sides, rounds, BATCH_CPU * 10 if served else BATCH_CPU,
                              50 if served else 10)
        finally:
            for side in sides:
                side.close()
    shutil.rmtree(workdir, ignore_errors=True)
    return samples


def _memory_dir():
    # SQLite's file in memory when the machine has /dev/shm: its commits
    # wait on no disk (the databases are thrown away anyway)
    return '/dev/shm' if os.path.isdir('/dev/shm') else None


def _rounds(old, new, rounds, batch_cpu, calibrating):
    """ABBA rounds of every cell, each batch ~``batch_cpu`` seconds of CPU."""
    sizes = {}
    for cell in cpu_cells.CELLS:    # batch sizes from one calibrating batch
        cpu = max(old.run(cell, calibrating)['cpu'],
                  new.run(cell, calibrating)['cpu']) / calibrating
        sizes[cell] = max(2, min(1000, math.ceil(batch_cpu / max(cpu, 1e-4))))
    samples = {cell: ([], [], [], []) for cell in cpu_cells.CELLS}
    for r in range(rounds):
        order = (old, new, new, old) if r % 2 == 0 else (new, old, old, new)
        for cell in cpu_cells.CELLS:
            cpu = {old: 0.0, new: 0.0}
            wall = {old: 0.0, new: 0.0}
            for side in order:
                took = side.run(cell, sizes[cell])
                cpu[side] += took['cpu']
                wall[side] += took['wall']
            a, b = (cpu[s] / (2 * sizes[cell]) * 1000 for s in (old, new))
            samples[cell][0].append(a)
            samples[cell][1].append(b)
            samples[cell][2].append(b / a)
            samples[cell][3].append(wall[old] / wall[new])
    return samples


def _spread(values):
    q = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return '%.2f-%.2f' % (q[0], q[2])


def report(engine, samples, threshold, throughput_threshold=None, log=print,
           where='in the application'):
    """Print the table; the cells over a threshold: (engine, cell, what, ratio)."""
    log('%s: CPU-ms per request %s, median over %d ABBA rounds'
        % (engine, where, len(next(iter(samples.values()))[0])))
    log('| cell | baseline CPU-ms | tree CPU-ms | tree/baseline CPU | spread (25th-75th) '
        '| throughput tree/baseline (wall) | spread |')
    log('|---|---|---|---|---|---|---|')
    worse = []
    for cell, (a, b, ratios, speed) in samples.items():
        ratio, faster = statistics.median(ratios), statistics.median(speed)
        log('| %s | %.3f | %.3f | %.2fx | %s | %.2fx | %s |' % (
            cell, statistics.median(a), statistics.median(b), ratio, _spread(ratios),
            faster, _spread(speed)))
        if ratio > threshold:
            worse.append((engine, cell, 'CPU per request', ratio))
        if throughput_threshold and faster < 1 / throughput_threshold:
            worse.append((engine, cell, 'throughput', 1 / faster))
    return worse


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--baseline', help='commit (default: bench/baseline.txt)')
    parser.add_argument('--tree', help='commit or directory to compare (default: this work tree)')
    parser.add_argument('--engine', action='append', choices=harness.ENGINES)
    parser.add_argument('--flat', type=int, default=100, help='flat providers')
    parser.add_argument('--trees', type=int, default=20, help='nested trees (7 providers)')
    parser.add_argument('--rounds', type=int, default=12)
    parser.add_argument('--threshold', type=float, default=1.20,
                        help='CPU per request: tree/baseline above this fails')
    parser.add_argument('--throughput-threshold', type=float,
                        help='also fail when baseline/tree throughput (wall) is above '
                             'this: only on a quiet machine, wall time is noise otherwise')
    parser.add_argument('--python', default=sys.executable)
    parser.add_argument('--served', action='store_true',
                        help="each tree's placement-server instead: server CPU per "
                             'request (from /proc) and throughput under --concurrency')
    parser.add_argument('--workers', type=int, default=2)
    parser.add_argument('--concurrency', type=int, default=10)
    args = parser.parse_args(argv)
    baseline = args.baseline or baseline_commit()
    old_tree = tree_of(baseline)
    if args.tree and os.path.isdir(args.tree):
        new_tree = os.path.abspath(args.tree)
    else:
        new_tree = tree_of(args.tree) if args.tree else TOP
    print('baseline %s (%s) against %s' % (baseline, old_tree, args.tree or TOP), flush=True)
    worse = []
    for engine in args.engine or ['sqlite', 'postgresql']:
        started = time.monotonic()
        samples = compare(engine, old_tree, new_tree, args.flat, args.trees, args.rounds,
                          args.python, (args.workers, args.concurrency) if args.served else None)
        worse += report(engine, samples, args.threshold, args.throughput_threshold,
                        where="in the servers' processes (%d workers, %d clients at once)"
                        % (args.workers, args.concurrency) if args.served
                        else 'in the application')
        print('(%s: %.0f s)' % (engine, time.monotonic() - started), flush=True)
    for engine, cell, what, ratio in worse:
        print('SLOWER: %s on %s: %s %.2fx worse than the baseline' % (cell, engine, what, ratio))
    return 1 if worse else 0


if __name__ == '__main__':
    sys.exit(main())
