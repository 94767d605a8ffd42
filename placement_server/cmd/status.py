"""placement-status upgrade check [--json]: is this database ready for this code?

Through oslo.upgradecheck, as every OpenStack ``*-status`` command: its
table (or JSON) and its exit status, 0 all checks passed, 1 a warning, 2 a
failure (the service would not work), 255 the check itself could not run
(no database configured, or unreachable: one line on stderr). Read-only:
it never creates a database.
"""
import sys
from typing import NoReturn

import os_resource_classes
import os_traits
from oslo_config import cfg
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa

from placement_server import cmd
from placement_server import conf as conf_mod
from placement_server.db import api as db_api
from placement_server.db import migration
from placement_server.db import tables
from placement_server.db import takeover

CANNOT_RUN = 255
Code = upgradecheck.Code
Result = upgradecheck.Result


class Checks(upgradecheck.UpgradeCommands):

    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self.db: db_api.Database | None = None

    @property
    def _db(self) -> db_api.Database:
        assert self.db is not None, 'the checks run inside check(), which opens it'
        return self.db

    def _schema(self) -> Result:
        try:
            migration.check(self._db)
        except takeover.UnknownRevision as e:
            return Result(Code.FAILURE, str(e))
        schema, want = migration.found(self._db), migration.head()
        if schema.ours == want:
            return Result(Code.SUCCESS, 'schema revision %s is current' % want)
        return Result(Code.FAILURE, 'schema revision is %s, this code needs %s: run '
                                    '"placement-manage db sync"' % (schema.ours or 'none', want))

    def _standard_names(self) -> Result:
        if migration.found(self._db).ours is None:
            return Result(Code.FAILURE, 'no schema to look into: run "placement-manage db sync"')
        with self._db.reader() as conn:
            classes = set(conn.scalars(sa.select(tables.resource_classes.c.name)))
            traits = set(conn.scalars(sa.select(tables.traits.c.name)))
        missing = (len(set(os_resource_classes.STANDARDS) - classes)
                   + len(set(os_traits.get_traits()) - traits))
        if not missing:
            return Result(Code.SUCCESS, 'all standard resource classes and traits are present')
        return Result(Code.WARNING, '%d standard resource classes or traits are missing: '
                                    'run "placement-manage db sync"' % missing)

    _upgrade_checks = (('Database schema', _schema),
                       ('Standard resource classes and traits', _standard_names))

    # CANNOT_RUN is an exit status upgradecheck has no Code for: upgradecheck.run
    # exits with whatever this returns.
    def check(self) -> int:   # type: ignore[override]
        try:
            self.db = cmd.open_database(self.conf, create=False)
        except cmd.CommandError as e:
            print('placement-status: %s' % e, file=sys.stderr)
            return CANNOT_RUN
        try:
            return super().check()
        finally:
            self._db.dispose()


def _main(argv: list[str]) -> int:
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    checks = Checks(conf)
    upgradecheck.register_cli_options(conf, checks)
    try:
        conf(argv, project='placement', version=cmd.version(),
             default_config_files=cmd.default_config_files())
    except cfg.Error as e:
        raise cmd.CommandError('placement-status: bad configuration: %s'
                               % str(e).strip().splitlines()[0])
    # check() reads --json from the library's module-level CONF, which
    # upgradecheck.main sets; main itself cannot pass --version.
    upgradecheck.CONF = conf
    return upgradecheck.run(conf)


def main(argv: list[str] | None = None) -> NoReturn:
    sys.exit(cmd.run(_main, argv, error_status=CANNOT_RUN))


if __name__ == '__main__':
    main()
