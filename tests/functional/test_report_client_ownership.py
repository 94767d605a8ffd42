"""Traits and aggregates the tracker wrote stay its own across a restart.

Each "restart" is a new ReportClient, as a new agent process would build;
the state file is the only thing the two share.
"""
import json

from tests.functional.report_client_fixtures import AGG  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import NUMA0  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import ROOT  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import V  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import custom_trait  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import generation  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import get  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import host  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import placement  # noqa: F401 (placement: fixture)
from tests.functional.report_client_fixtures import put  # noqa: F401 (placement: fixture)

OTHER_AGG = '2a7b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d'


def traits(placement, uuid):
    return get(placement, '/resource_providers/%s/traits' % uuid)['traits']


def aggregates(placement, uuid):
    return get(placement, '/resource_providers/%s/aggregates' % uuid)['aggregates']


def add_foreign(placement):
    """Another writer's trait on the root and aggregate on NUMA0."""
    custom_trait(placement, 'CUSTOM_OTHER')
    resp = put(placement, '/resource_providers/%s/traits' % ROOT, {
        'resource_provider_generation': generation(placement, ROOT),
        'traits': traits(placement, ROOT) + ['CUSTOM_OTHER']})
    assert resp.status_code == 200, resp.text
    resp = put(placement, '/resource_providers/%s/aggregates' % NUMA0, {
        'resource_provider_generation': generation(placement, NUMA0),
        'aggregates': aggregates(placement, NUMA0) + [OTHER_AGG]})
    assert resp.status_code == 200, resp.text


def first_life(placement, **kwargs):
    desired = host()
    desired[1].aggregates = {AGG}
    result = placement.client(**kwargs).sync(desired)
    assert result.errors == []
    add_foreign(placement)


def second_life(placement, **kwargs):
    """The host no longer reports CUSTOM_TRACKER nor NUMA0's aggregate."""
    desired = host()
    desired[0].traits.discard('CUSTOM_TRACKER')
    result = placement.client(**kwargs).sync(desired)
    assert result.errors == []
    return result


def test_what_the_tracker_wrote_goes_after_a_restart_what_others_wrote_stays(
        placement, tmp_path):
    state = str(tmp_path / 'state' / 'ownership-test-host.json')
    first_life(placement, state_file=state)
    with open(state) as f:
        saved = json.load(f)['providers']
    assert saved[ROOT]['traits'] == ['CUSTOM_TRACKER', 'HW_CPU_X86_AVX2']
    assert saved[NUMA0]['aggregates'] == [AGG]

    assert second_life(placement, state_file=state).updated == {
        ROOT: ['traits'], NUMA0: ['aggregates']}
    assert traits(placement, ROOT) == ['CUSTOM_OTHER', 'HW_CPU_X86_AVX2']
    assert aggregates(placement, NUMA0) == [OTHER_AGG]
    with open(state) as f:
        saved = json.load(f)['providers']
    assert saved[ROOT]['traits'] == ['HW_CPU_X86_AVX2']
    assert saved[NUMA0]['aggregates'] == []


def test_without_a_state_file_a_restart_keeps_everything(placement):
    """The trade-off of [tracker] state_path = '': after a restart the
    tracker cannot tell its own traits from others', so it removes none."""
    first_life(placement)
    assert second_life(placement).updated == {}
    assert traits(placement, ROOT) == ['CUSTOM_OTHER', 'CUSTOM_TRACKER', 'HW_CPU_X86_AVX2']
    assert aggregates(placement, NUMA0) == sorted([AGG, OTHER_AGG])
