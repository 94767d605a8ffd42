"""Reshape planning: which moves, and where the allocations go (no HTTP)."""
import pytest

from tracker.drivers.base import Instance
from tracker.placement import errors
from tracker.placement import reshape
from tracker.providers import diff as diff_mod
from tracker.providers.provider import Provider
from tracker.providers.provider import inventory
from tracker.providers.tree import ProviderTree


def trees(gpu_totals=(2, 2)):
    known = ProviderTree([Provider('r', 'cn', inventories={
        'VCPU': inventory(8), 'VGPU': inventory(4)}, generation=7)])
    desired = ProviderTree([Provider('r', 'cn', inventories={'VCPU': inventory(8)})]
                           + [Provider('g%d' % i, 'gpu%d' % i, 'r',
                                       inventories={'VGPU': inventory(total)})
                              for i, total in enumerate(gpu_totals)])
    return known, desired


def consumer(amounts, generation=1):
    return {'allocations': {'r': dict(amounts)}, 'project_id': 'p', 'user_id': 'u',
            'consumer_generation': generation, 'consumer_type': 'INSTANCE'}


def test_only_classes_lost_here_and_gained_there_are_moves():
    known, desired = trees()
    moves = reshape.candidate_moves(diff_mod.diff(desired, known), desired)
    assert [(m.source, m.rc, m.targets) for m in moves] == [('r', 'VGPU', ['g0', 'g1'])]
    desired.update('g0', inventories={})
    desired.update('g1', inventories={})
    assert reshape.candidate_moves(diff_mod.diff(desired, known), desired) == []


def test_allocations_fill_the_first_target_with_room():
    known, desired = trees()
    moves = reshape.candidate_moves(diff_mod.diff(desired, known), desired)
    body = reshape.plan(moves, desired, known, {
        'c1': consumer({'VCPU': 1, 'VGPU': 1}), 'c2': consumer({'VGPU': 2}, 4)})
    assert body['allocations']['c1']['allocations'] == {
        'r': {'resources': {'VCPU': 1}}, 'g0': {'resources': {'VGPU': 1}}}
    # g0 has one left: c2's two are split over g0 and g1
    assert body['allocations']['c2']['allocations'] == {
        'g0': {'resources': {'VGPU': 1}}, 'g1': {'resources': {'VGPU': 1}}}
    assert body['allocations']['c2']['consumer_generation'] == 4
    assert body['inventories']['r'] == {'resource_provider_generation': 7,
                                        'inventories': {'VCPU': inventory(8)}}
    assert body['inventories']['g0']['inventories'] == {'VGPU': inventory(2)}


def test_instances_say_where_their_resources_are():
    known, desired = trees()
    moves = reshape.candidate_moves(diff_mod.diff(desired, known), desired)
    seen = [Instance('c1', allocations={'r': {'VCPU': 1}, 'g1': {'VGPU': 1}})]
    body = reshape.plan(moves, desired, known, {'c1': consumer({'VCPU': 1, 'VGPU': 1})},
                        seen)
    assert body['allocations']['c1']['allocations'] == {
        'r': {'resources': {'VCPU': 1}}, 'g1': {'resources': {'VGPU': 1}}}


def test_no_room_for_the_moved_allocations_is_inventory_in_use():
    known, desired = trees(gpu_totals=(1, 1))
    moves = reshape.candidate_moves(diff_mod.diff(desired, known), desired)
    with pytest.raises(errors.InventoryInUse, match='lack the room'):
        reshape.plan(moves, desired, known, {'c1': consumer({'VGPU': 3})})


def test_a_provider_that_grows_takes_only_its_growth():
    known, desired = trees(gpu_totals=(2,))
    known.add(Provider('g0', 'gpu0', 'r', inventories={'VGPU': inventory(2)}, generation=3))
    desired.update('g0', inventories={'VGPU': inventory(5)})
    moves = reshape.candidate_moves(diff_mod.diff(desired, known), desired)
    assert [(m.source, m.rc, m.targets) for m in moves] == [('r', 'VGPU', ['g0'])]
    body = reshape.plan(moves, desired, known, {'c1': consumer({'VGPU': 3})})
    assert body['allocations']['c1']['allocations'] == {'g0': {'resources': {'VGPU': 3}}}
    assert body['inventories']['g0'] == {'resource_provider_generation': 3,
                                         'inventories': {'VGPU': inventory(5)}}
    with pytest.raises(errors.InventoryInUse):
        reshape.plan(moves, desired, known, {'c1': consumer({'VGPU': 4})})
