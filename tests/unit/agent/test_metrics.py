import socket

import requests

from tracker import metrics


def _sample(exposition, name):
    for line in exposition.splitlines():
        if line.startswith(name + ' '):
            return float(line.split()[1])
    raise AssertionError('%s not in metrics' % name)


def test_a_synced_cycle_is_recorded():
    m = metrics.Metrics()
    m.cycle_done(duration=0.4, writes=3, conflicts=1, finished_at=1700000000.0)
    text = m.exposition()
    assert _sample(text, 'tracker_last_successful_sync_timestamp_seconds') == 1700000000.0
    assert _sample(text, 'tracker_writes_last_cycle') == 3
    assert _sample(text, 'tracker_writes_total') == 3
    assert _sample(text, 'tracker_conflicts_last_cycle') == 1
    assert _sample(text, 'tracker_placement_reachable') == 1
    assert _sample(text, 'tracker_cycle_duration_seconds_count') == 1
    assert 'tracker_cycles_total{result="synced"} 1.0' in text


def test_a_failed_cycle_keeps_the_last_success_time():
    m = metrics.Metrics()
    m.cycle_done(0.1, 0, 0, 1700000000.0)
    m.cycle_failed(0.1, reachable=False)
    text = m.exposition()
    assert _sample(text, 'tracker_placement_reachable') == 0
    assert _sample(text, 'tracker_last_successful_sync_timestamp_seconds') == 1700000000.0
    assert 'tracker_cycles_total{result="failed"} 1.0' in text


def test_two_agents_do_not_share_counters():
    a, b = metrics.Metrics(), metrics.Metrics()
    a.cycle_done(0.1, 5, 0, 1.0)
    assert _sample(b.exposition(), 'tracker_writes_total') == 0


def test_served_over_http():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    m = metrics.Metrics()
    m.drift.set(2)
    server, thread = m.serve(port)
    try:
        body = requests.get('http://127.0.0.1:%d/metrics' % port, timeout=5).text
        assert _sample(body, 'tracker_drift_items') == 2
    finally:
        server.shutdown()
