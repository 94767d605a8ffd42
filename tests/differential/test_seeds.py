"""The differential test's fixed seeds, on every engine this run tests:
upstream placement 16.0.0 and ours (2 instances x 2 workers) on the same
engine must give the same answers to each seed's calls (known.py says
what is tolerated). A divergence fails with its shortest reproduction.
Longer runs: tools/differential.py.
"""
import pytest

from tests import databases
from tests.differential import runner
from tests.differential import seeds

pytestmark = pytest.mark.integration

SEEDS = (1, 2, 3)
CALLS = 150


@pytest.mark.parametrize('engine', databases.BACKENDS)
def test_fixed_seeds_answer_as_upstream(engine, tmp_path):
    lines = []
    with runner.Pair(engine, str(tmp_path)) as pair:
        report = seeds.run_seeds(pair, SEEDS, CALLS, out=lines.append)
    assert not report.divergences, '\n'.join(lines)
    # every call of every seed was compared, and the sequences did something
    assert report.calls == len(SEEDS) * CALLS
    assert report.ok_writes >= 20 * len(SEEDS), report   # 88 when written
    assert report.found_candidates >= len(SEEDS), report
