"""A divergent sequence made as short as it goes, and printed.

The sequence is cut after its first divergence; then chunks of calls
(halves, quarters, ... single calls) are dropped while a replay still
diverges the same way: the same call diverging, with the same pair of
statuses. Every replay starts from empty servers (runner.Pair.run).
"""
import json
import re

UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')


def signature(exchange):
    """What makes two divergences the same: the call's route and method,
    and both statuses."""
    route = UUID.sub('{uuid}', exchange.call.path.split('?')[0])
    return (exchange.call.method, route, exchange.want[0], exchange.got[0])


def shrink(pair, calls, budget=200):
    """(shortest calls found, its replay Result)."""
    result = pair.run(calls)
    index = result.divergence
    if index is None:
        return calls, result
    wanted = signature(result.exchanges[index])
    calls = calls[:index + 1]

    def still(candidate):
        replay = pair.run(candidate)
        i = replay.divergence
        if i is not None and signature(replay.exchanges[i]) == wanted:
            return candidate[:i + 1], replay
        return None, None

    best = result
    chunks = 2
    while len(calls) > 1 and budget > 0:
        size = max(1, len(calls) // chunks)
        dropped = False
        # the diverging call itself is never dropped
        for start in range(len(calls) - 1 - size, -1, -size):
            budget -= 1
            found, replay = still(calls[:start] + calls[start + size:])
            if found is not None:
                calls, best, dropped = found, replay, True
                chunks = max(chunks - 1, 2)
                break
            if budget <= 0:
                break
        if not dropped:
            if size == 1:
                break
            chunks = min(chunks * 2, len(calls))
    if best.divergence is None or len(best.exchanges) != len(calls):
        best = pair.run(calls)
    return calls, best


def show(result, out=print):
    """Print a replay: every call with both statuses, the last in full."""
    for n, ex in enumerate(result.exchanges):
        mark = '!=' if ex.diverges else '=='
        out('%2d. %s' % (n + 1, ex.sent))
        out('    upstream %s %s ours %s' % (ex.want[0], mark, ex.got[0]))
    last = result.exchanges[-1]
    if last.diverges:
        out('    upstream: %s' % json.dumps(last.want[1], sort_keys=True))
        out('    ours:     %s' % json.dumps(last.got[1], sort_keys=True))
