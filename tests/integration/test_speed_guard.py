"""The speed guard's short form (issue 40): no gate cell costs more than
20% more CPU per request than in the previous release (bench/baseline.txt).

bench/regression.py runs the baseline's tree and this one side by side,
each in its own process on its own fresh database, interleaved ABBA, and
compares the process CPU time per request (not wall time: the machine's
other load stretches wall time, barely a process's own CPU), the median
over the rounds. docs/bench/placement-server.md shows it failing on a
deliberately slowed build.
"""
import pytest

from bench import regression

pytestmark = pytest.mark.integration


def test_no_gate_cell_is_slower_than_the_previous_release(capsys):
    code = regression.main(['--engine', 'sqlite', '--engine', 'postgresql'])
    out = capsys.readouterr().out
    print(out)
    assert code == 0, out
