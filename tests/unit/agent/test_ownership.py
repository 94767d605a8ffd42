"""The ownership state file: round trip, and failures that lose nothing."""
import logging
import os

from tracker.placement import ownership


def test_round_trip_and_no_rewrite_when_unchanged(tmp_path):
    path = str(tmp_path / 'deep' / 'ownership-h.json')
    owned = {'rp-1': {'traits': {'HW_B', 'HW_A'}, 'aggregates': set()}}
    ownership.OwnershipFile(path).save(owned)
    again = ownership.OwnershipFile(path)
    assert again.load() == {'rp-1': {'traits': {'HW_A', 'HW_B'}, 'aggregates': set()}}
    stamp = os.stat(path).st_mtime_ns
    os.utime(path, ns=(0, 0))
    again.save(owned)                      # unchanged: not written
    assert os.stat(path).st_mtime_ns == 0 != stamp


def test_a_corrupt_file_is_forgotten_with_a_warning(tmp_path, caplog):
    path = tmp_path / 'ownership-h.json'
    path.write_text('{"providers": [')
    with caplog.at_level(logging.WARNING):
        assert ownership.OwnershipFile(str(path)).load() == {}
    assert 'ignoring' in caplog.text


def test_an_unwritable_place_warns_once(tmp_path, caplog):
    blocker = tmp_path / 'not-a-dir'
    blocker.write_text('')
    state = ownership.OwnershipFile(str(blocker / 'ownership-h.json'))
    with caplog.at_level(logging.WARNING):
        state.save({'rp': {'traits': {'HW_A'}, 'aggregates': set()}})
        state.save({'rp': {'traits': {'HW_B'}, 'aggregates': set()}})
    assert [r.levelname for r in caplog.records] == ['WARNING']


def test_no_state_path_no_file():
    assert ownership.path_for('', 'h') is None
    assert ownership.path_for('/var/lib/tracker', 'h') == '/var/lib/tracker/ownership-h.json'
