"""Started by Python in a side virtualenv's test process (this directory is
on its PYTHONPATH): with PLACEMENT_FIXTURE_APP=ours, upstream's unchanged
``PlacementFixture`` serves placement_server instead of upstream's
application; with PLACEMENT_FIXTURE_APP=upstream it serves upstream's, and
either way each application made is noted (see ours_behind_fixture)."""
import os

if os.environ.get('PLACEMENT_FIXTURE_APP') in ('ours', 'upstream'):
    import ours_behind_fixture
    ours_behind_fixture.install(os.environ['PLACEMENT_FIXTURE_APP'])
