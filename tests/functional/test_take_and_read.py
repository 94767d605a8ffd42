"""``providers.take_and_read``: the generation compare-and-swap with the
read a replace compares against (one statement on PostgreSQL, two
elsewhere), on every backend."""
import pytest
import sqlalchemy as sa

from placement_server import errors
from placement_server.db import providers
from placement_server.db import tables
from tests.functional import client as client_mod

RPT = tables.resource_provider_traits
TRAITS = tables.traits
# the provider's trait names (the read's first column is never NULL)
READ = (sa.select(TRAITS.c.name, TRAITS.c.id)
        .join(RPT, RPT.c.trait_id == TRAITS.c.id)
        .where(RPT.c.resource_provider_id == sa.bindparam('provider_id'),
               TRAITS.c.name.in_(sa.bindparam('names', expanding=True))))


@pytest.fixture
def rp(database):
    api = client_mod.Client(client_mod.make_app(database))
    uuid = client_mod.make_provider(api, 'cn1')
    resp = api.put('/resource_providers/%s/traits' % uuid, {
        'resource_provider_generation': 0, 'traits': ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2']},
        version='1.6')
    assert resp.status_int == 200, resp.body
    return uuid     # at generation 1


def _generation(database, uuid):
    with database.reader() as conn:
        return providers.get(conn, uuid)['generation']


def test_takes_the_provider_and_reads_for_it(database, rp):
    with database.writer() as conn:
        provider, rows = providers.take_and_read(
            conn, rp, 1, READ, {'names': ['HW_CPU_X86_AVX2', 'STORAGE_DISK_SSD']})
        assert provider['uuid'] == rp and provider['generation'] == 2
        assert [row['name'] for row in rows] == ['HW_CPU_X86_AVX2']
    assert _generation(database, rp) == 2


def test_a_read_that_finds_nothing_still_takes(database, rp):
    with database.writer() as conn:
        provider, rows = providers.take_and_read(conn, rp, 1, READ, {'names': ['CUSTOM_NONE']})
        assert rows == [] and provider['generation'] == 2
    assert _generation(database, rp) == 2


def test_another_generation_is_a_conflict_and_takes_nothing(database, rp):
    with pytest.raises(providers.ConcurrentUpdate) as raised:
        with database.writer() as conn:
            providers.take_and_read(conn, rp, 0, READ, {'names': ['HW_CPU_X86_AVX2']})
    assert str(raised.value) == 'resource provider generation conflict'
    assert _generation(database, rp) == 1


def test_an_unknown_provider_is_not_found(database, rp):
    with pytest.raises(errors.NotFound):
        with database.writer() as conn:
            providers.take_and_read(conn, '4f0b2c8e-0000-4000-8000-000000000000', 0, READ,
                                    {'names': ['HW_CPU_X86_AVX2']})
