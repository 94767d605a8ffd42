"""placement under uWSGI as Kolla-Ansible runs it, against placement-server.

Both up at once, each on its own fresh database, the same workload
(bench/core_calls.py's: create, inventory, aggregates, claims, lists),
call by call alternating between them: uWSGI with Kolla's ini
(tests/integration/uwsgi.py: lazy-apps, enable-threads, thunder-lock,
Connection: close; ``--workers`` processes) and placement-server with as
many workers. Besides each call's latency, the CPU the server spent per
request (user + system over its master and workers, from /proc), which
the machine's other load disturbs less than latency does.

    .venv/bin/python bench/uwsgi_kolla.py --engine postgresql --providers 200 --workers 2

prints a Markdown table per engine and writes bench/results/uwsgi_kolla-<engine>.json.
"""
import contextlib
import os
import sys
import tempfile

import psutil

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import core_calls  # noqa: E402
from bench import harness  # noqa: E402
from tests.integration import servers  # noqa: E402
from tests.integration import uwsgi  # noqa: E402

NAMES = ('placement-server', 'uwsgi-kolla')


def cpu_seconds(pid):
    """User + system CPU of a process and all its descendants."""
    root = psutil.Process(pid)
    total = 0.0
    for proc in [root] + root.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def run(engine, providers, list_repeats, workers):
    workdir = tempfile.mkdtemp(prefix='bench-uwsgi-')
    with contextlib.ExitStack() as stack:
        made = {}
        for name in NAMES:
            label = name.replace('-', '_')   # a database name
            db = stack.enter_context(harness.ScratchDatabase(engine, workdir, label))
            where = os.path.join(workdir, name)
            if name == 'placement-server':
                server = servers.Server(db.url, where, workers=workers, sync_db=True).start()
            else:
                server = uwsgi.UwsgiServer(db.url, where, processes=workers).start()
            stack.callback(server.stop)
            made[name] = server
        clients = {name: harness.Client(server) for name, server in made.items()}
        before = {name: cpu_seconds(server.proc.pid) for name, server in made.items()}
        results = core_calls.workload(providers, list_repeats)(clients)
        for name, server in made.items():
            count = sum(s.get('n', 0) for s in results[name].values())
            spent = cpu_seconds(server.proc.pid) - before[name]
            results[name]['requests'] = count
            results[name]['cpu_ms_per_request'] = round(spent * 1000 / count, 2)
    return results


def table(results):
    rows = ['| call | placement-server p50 ms | uWSGI (Kolla) p50 ms | '
            'placement-server p99 | uWSGI p99 |', '|---|---|---|---|---|']
    for call in core_calls.CALLS:
        cells = [results[name].get(call, {}) for name in NAMES]
        rows.append('| %s | %s | %s | %s | %s |' % (
            call, cells[0].get('p50'), cells[1].get('p50'),
            cells[0].get('p99'), cells[1].get('p99')))
    rows.append('| CPU per request, ms | %s | %s | | |' % tuple(
        results[name]['cpu_ms_per_request'] for name in NAMES))
    return '\n'.join(rows)


def main(argv=None):
    parser = harness.side_by_side_parser(__doc__, servers=NAMES)
    parser.add_argument('--providers', type=int, default=200)
    parser.add_argument('--list-repeats', type=int, default=20)
    args = parser.parse_args(argv)
    for engine in args.engine or ['postgresql']:
        results = run(engine, args.providers, args.list_repeats, args.workers)
        harness.save(os.path.join(harness.TOP, 'bench', 'results',
                                  'uwsgi_kolla-%s.json' % engine), results)
        print('\n### %s, %d providers, %d workers / processes\n'
              % (engine, args.providers, args.workers))
        print(table(results))


if __name__ == '__main__':
    main()
