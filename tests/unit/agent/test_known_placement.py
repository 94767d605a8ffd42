"""KnownPlacement: what the report client trusts between two reads."""
from tracker.placement.known import KnownPlacement
from tracker.providers.provider import Provider
from tracker.providers.tree import ProviderTree

ROOT, CHILD, OTHER = 'r' * 8, 'c' * 8, 'o' * 8


def test_a_tree_never_read_is_stale_and_a_read_one_is_not():
    known = KnownPlacement(refresh_interval=300)
    assert known.tree_stale(ROOT) and known.consumers_stale(ROOT)
    known.learn_tree(ROOT, ProviderTree([Provider(ROOT, 'host')]))
    known.learn_sharing(ROOT, [])
    known.learn_consumers(ROOT, {})
    assert not known.tree_stale(ROOT) and not known.consumers_stale(ROOT)
    known.mark_tree_stale(ROOT)
    known.mark_consumers_stale(ROOT)
    assert known.tree_stale(ROOT) and known.consumers_stale(ROOT)


def test_the_interval_passing_makes_the_tree_stale_unless_it_is_zero():
    for interval, stale in ((300, True), (0, False)):
        known = KnownPlacement(refresh_interval=interval)
        known.learn_sharing(ROOT, [])
        known.read_at[ROOT] -= 301
        assert known.tree_stale(ROOT) is stale


def test_a_provider_read_in_another_tree_moves_into_it():
    known = KnownPlacement()
    known.learn_tree(OTHER, ProviderTree([Provider(OTHER, 'other'),
                                          Provider(CHILD, 'gpu', OTHER)]))
    known.learn_tree(ROOT, ProviderTree([Provider(ROOT, 'host'),
                                         Provider(CHILD, 'gpu', ROOT, generation=4)]))
    assert known.tree_uuids(ROOT) == {ROOT, CHILD}
    assert known.tree_uuids(OTHER) == {OTHER}
    known.learn_generations({CHILD: 5, 'gone': 1})
    assert known.tree.get(CHILD).generation == 5 and 'gone' not in known.tree


def test_managed_providers_are_the_tree_and_its_sharing_providers():
    known = KnownPlacement()
    known.learn_tree(ROOT, ProviderTree([Provider(ROOT, 'host')]))
    known.learn_sharing(ROOT, [Provider(OTHER, 'nfs')])
    assert known.managed_providers(ROOT) == {ROOT, OTHER}
    assert known.managed_providers('unknown') == set()
