"""How a statement is sent as a PostgreSQL prepared statement."""
from placement_server.db import prepared

STATEMENT = ('UPDATE t SET g = g + %(one)s WHERE u = %(uuid)s AND g = %(expected)s '
             "AND note LIKE 'a%%' AND v = %(one)s")


def test_first_prepared_then_only_executed():
    info = {}
    text, name = prepared.as_prepared(info, STATEMENT)
    assert text == ("PREPARE placement_1 AS UPDATE t SET g = g + $1 WHERE u = $2 AND g = $3 "
                    "AND note LIKE 'a%%' AND v = $1;"
                    'EXECUTE placement_1(%(one)s,%(uuid)s,%(expected)s)')
    assert name == 'placement_1'
    prepared.ran(info, STATEMENT, name)
    assert prepared.as_prepared(info, STATEMENT) == (
        'EXECUTE placement_1(%(one)s,%(uuid)s,%(expected)s)', None)


def test_a_statement_without_parameters():
    info = {}
    text, name = prepared.as_prepared(info, 'SELECT 1')
    assert text == 'PREPARE placement_1 AS SELECT 1;EXECUTE placement_1'
    prepared.ran(info, 'SELECT 1', name)
    assert prepared.as_prepared(info, 'SELECT 1') == ('EXECUTE placement_1', None)


def test_a_name_whose_round_trip_failed_is_never_used_again():
    # Its PREPARE may have run before the failure: that name is taken.
    info = {}
    _, first = prepared.as_prepared(info, STATEMENT)
    text, second = prepared.as_prepared(info, STATEMENT)
    assert first != second
    assert text.startswith('PREPARE %s AS ' % second)


def test_each_connection_names_its_own():
    one, other = {}, {}
    for info in (one, other):
        prepared.ran(info, STATEMENT, prepared.as_prepared(info, STATEMENT)[1])
    assert prepared.as_prepared(one, STATEMENT)[0].startswith('EXECUTE placement_1(')
    assert prepared.as_prepared(other, STATEMENT)[0].startswith('EXECUTE placement_1(')


def test_past_the_limit_statements_run_as_they_come():
    info = {}
    for i in range(prepared.MAX_PER_CONNECTION):
        statement = 'SELECT %d' % i
        prepared.ran(info, statement, prepared.as_prepared(info, statement)[1])
    assert prepared.as_prepared(info, 'SELECT -1') == ('SELECT -1', None)


class _Error(Exception):
    def __init__(self, pgcode):
        self.pgcode = pgcode


def test_a_plan_that_no_longer_fits_its_tables_forgets_them_all():
    info = {}
    prepared.ran(info, STATEMENT, prepared.as_prepared(info, STATEMENT)[1])
    prepared.failed(info, _Error('23505'))      # a duplicate: plans are fine
    assert prepared.as_prepared(info, STATEMENT)[1] is None
    prepared.failed(info, _Error('0A000'))      # cached plan must not change result type
    text, name = prepared.as_prepared(info, STATEMENT)
    assert text.startswith('PREPARE placement_2 AS ') and name == 'placement_2'
