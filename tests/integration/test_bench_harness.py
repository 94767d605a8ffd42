"""The benchmark workloads, tiny, on both servers: they run, and ours
answers them exactly as upstream does (same statuses, same counts)."""
import socket
import time

import pytest
import requests

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


@pytest.mark.parametrize('name', ['ours', 'upstream', 'floor'])
def test_every_server_of_the_creation_bench_runs_under_the_same_worker(tmp_path, name):
    from bench import creation
    with harness.ScratchDatabase('sqlite', str(tmp_path), name) as db, \
            creation.SERVERS[name](db.url, str(tmp_path / name), workers=1) as server:
        assert server.proc.args[server.proc.args.index('--worker-class') + 1] == harness.WORKER
        # and it is that worker which serves: one client that keeps its
        # socket open after its answer does not hold the only worker
        with socket.create_connection(('127.0.0.1', server.port), timeout=10) as sock:
            sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
            while sock.recv(65536):
                pass
            started = time.monotonic()
            assert requests.get(server.url + '/', timeout=10).status_code == 200
            assert time.monotonic() - started < 1.0
        # one call at a time: on SQLite upstream refuses concurrent writers,
        # and the threaded worker would run two at once
        creation._placeload(server.url, 3, 1)
