"""The benchmark workloads, tiny, on both servers: they run, and ours
answers them exactly as upstream does (same statuses, same counts)."""
import pytest

from bench import allocation_candidates
from bench import core_calls
from bench import harness
from bench import worker_memory

pytestmark = pytest.mark.integration


def _same_statuses(results, calls):
    for call in calls:
        ours, theirs = results['ours'][call], results['upstream'][call]
        assert ours['n'] > 0, (call, ours)
        assert ours['statuses'] == theirs['statuses'], (call, ours, theirs)
        assert all(200 <= code < 300 for code in ours['statuses']), (call, ours)


@pytest.mark.parametrize('engine', harness.ENGINES)
def test_core_calls_side_by_side(engine):
    results = harness.side_by_side(engine, core_calls.workload(5, 2), workers=1)
    assert 'error' not in results['ours'] and 'error' not in results['upstream'], results
    _same_statuses(results, core_calls.CALLS)
    assert results['ours']['rss_mib_per_worker'][0] > 10


@pytest.mark.parametrize('shape, providers', [('flat', 5), ('nested', 14)])
def test_allocation_candidates_side_by_side(shape, providers):
    results = harness.side_by_side(
        'sqlite', allocation_candidates.workload(shape, providers, allocations=2, requests=10),
        workers=1, options={('placement', 'randomize_allocation_candidates'): 'true'})
    ours, theirs = results['ours'], results['upstream']
    assert 'error' not in ours and 'error' not in theirs, results
    assert ours['providers'] == theirs['providers'] >= providers
    assert ours['candidates'] == theirs['candidates'] > 0
    _same_statuses(results, ('timed candidates', 'allocation writes', 'candidates under load'))
    assert ours['throughput_rps'] > 0


@pytest.mark.parametrize('shape', ['flat', 'nested'])
def test_worker_memory_runs(shape):
    result = worker_memory.measure('sqlite', 14, shape)
    assert result['list']['items'] >= 14
    assert result['unlimited']['items'] > 0
    for phase in ('list', 'limit 1000', 'unlimited'):
        assert result[phase]['peak_mib'] >= result['up']['rss_mib'] > 10
