"""Many seeds through one Pair: what CI and tools/differential.py run."""
import collections
import dataclasses

from tests.differential import generator
from tests.differential import shrink


@dataclasses.dataclass
class Report:
    seeds: int = 0
    calls: int = 0
    divergences: list = dataclasses.field(default_factory=list)   # (seed, shrunk Result)
    tolerated: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    ok_writes: int = 0              # writes both servers accepted
    found_candidates: int = 0       # candidates answers proposing something
    # error texts alone differing: (method, route, status) -> (count, an example Exchange)
    wording: dict = dataclasses.field(default_factory=dict)


def print_wording(report, out=print):
    for (method, route, status), (count, ex) in sorted(report.wording.items()):
        out('  %dx %s %s %d: %s' % (count, method, route, status, ex.sent))
        out('      upstream: %r' % _detail(ex.want))
        out('      ours:     %r' % _detail(ex.got))


def _detail(answer):
    return [e.get('detail') for e in answer[1]['errors']]


def run_seeds(pair, seeds, count, out=print, shrink_budget=200):
    """Each seed's ``count`` calls on ``pair``; a divergence is shrunk and
    printed, and the seed's run stops there."""
    report = Report()
    for seed in seeds:
        calls = generator.calls(seed, count)
        result = pair.run(calls)
        report.seeds += 1
        report.calls += len(result.exchanges)
        for ex in result.exchanges:
            if ex.call.is_write() and ex.want[0] < 300 and ex.got[0] < 300:
                report.ok_writes += 1
            if (ex.call.path.startswith('/allocation_candidates') and ex.want[0] == 200
                    and ex.want[1]['allocation_requests']):
                report.found_candidates += 1
            if ex.tolerated:
                report.tolerated[ex.tolerated] += 1
            elif ex.wording:
                key = shrink.signature(ex)[:3]
                seen, example = report.wording.get(key, (0, ex))
                report.wording[key] = (seen + 1, example)
        if result.divergence is None:
            out('seed %d: %d calls, same answers' % (seed, len(result.exchanges)))
            continue
        out('seed %d: diverges at call %d of %d; shrinking'
            % (seed, result.divergence + 1, count))
        shortest, replay = shrink.shrink(pair, calls, budget=shrink_budget)
        out('seed %d: shortest reproduction, %d calls:' % (seed, len(shortest)))
        shrink.show(replay, out)
        report.divergences.append((seed, replay))
    return report
