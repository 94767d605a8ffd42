"""Our application behind upstream placement's own test fixture.

nova and osc-placement test against
``placement.tests.functional.fixtures.placement.PlacementFixture``: it
configures placement (noauth2, ``[oslo_policy] enforce_new_defaults =
False``), makes a database, then asks ``placement.deploy.loadapp(conf)``
for the WSGI application it intercepts requests to. ``install()`` changes
only that one call, once ``placement.deploy`` is imported: the fixture
stays as upstream ships it, and each fixture gets placement_server
configured from the fixture's options, on a fresh SQLite database for each
fixture configuration (fixtures sharing one share upstream's database).

Each application made is noted, one line ("ours" or "upstream", the
process, the database), in $PLACEMENT_FIXTURE_LOG, so the caller can tell
the swap took place for every fixture; ``install('upstream')`` only notes.
"""
import importlib.abc
import importlib.machinery
import itertools
import os
import shutil
import sys
import tempfile
import threading
import weakref

TARGET = 'placement.deploy'
# Options never taken from the fixture: our database is our own, and the
# fixture's policy file is a path under upstream's state directory.
NOT_COPIED = {('placement_database', 'connection'), ('oslo_policy', 'policy_file')}
# Copied whatever they are: how the fixture authenticates and authorizes.
ALWAYS_COPIED = ('api', 'oslo_policy')

_lock = threading.Lock()
_state = {}
_serial = itertools.count()


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` right after ``name`` is first executed."""

    def __init__(self, name, then):
        self.name = name
        self.then = then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            self.then(module)
        spec.loader.exec_module = exec_module
        return spec


def install(app='ours'):
    # Test bases point tempfile at a directory per test and remove it
    # after the test: the databases live in one chosen now.
    _state['base'] = os.environ.get('PLACEMENT_FIXTURE_DBDIR') or tempfile.gettempdir()
    if TARGET in sys.modules:
        (_swap if app == 'ours' else _note)(sys.modules[TARGET])
    else:
        sys.meta_path.insert(0, _AfterImport(TARGET, _swap if app == 'ours' else _note))


def _swap(module):
    module.loadapp = loadapp


def _note(module):
    upstream_loadapp = module.loadapp

    def loadapp(config, *args, **kwargs):
        app = upstream_loadapp(config, *args, **kwargs)
        _log('upstream', config.placement_database.connection)
        return app
    module.loadapp = loadapp


def _log(app, database):
    log = os.environ.get('PLACEMENT_FIXTURE_LOG')
    if log:
        with open(log, 'a') as f:
            f.write('%s %d %s\n' % (app, os.getpid(), database))


def _template():
    """A synced empty database, made once per process, copied per fixture."""
    with _lock:
        if 'template' not in _state:
            from placement_server.db import api as db_api
            from placement_server.db import migration
            workdir = tempfile.mkdtemp(prefix='ours-behind-fixture-', dir=_state['base'])
            path = os.path.join(workdir, 'template.sqlite')
            db = db_api.Database('sqlite:///%s' % path)
            migration.sync(db)
            db.engine.dispose()
            _state['workdir'], _state['template'] = workdir, path
            import atexit
            atexit.register(shutil.rmtree, workdir, True)
        return _state['workdir'], _state['template']


def _opt_default(conf, name, group):
    return conf._get_opt_info(name, group)['opt'].default


def _copy_options(source, target):
    """The fixture's settings onto our configuration, by group and name:
    every option both define that the fixture set away from its default,
    and all of [api] and [oslo_policy]."""
    from oslo_config import cfg
    for group in _groups(target):
        for name in list(getattr(target, group)):
            if (group, name) in NOT_COPIED:
                continue
            try:
                value = getattr(getattr(source, group), name)
                default = _opt_default(source, name, group)
            except (cfg.NoSuchOptError, cfg.NoSuchGroupError, AttributeError):
                continue
            if group in ALWAYS_COPIED or value != default:
                try:
                    target.set_override(name, value, group)
                except (ValueError, cfg.NoSuchOptError):
                    continue


def _groups(conf):
    from oslo_config import cfg
    return [name for name in conf if isinstance(getattr(conf, name), cfg.ConfigOpts.GroupAttr)]


def loadapp(config, project_name=None):
    """placement_server's whole application for the fixture's ``config``."""
    from oslo_config import cfg

    from placement_server import conf as our_conf
    from placement_server import deploy
    from placement_server import policy
    from placement_server.db import api as db_api

    conf = cfg.ConfigOpts()
    our_conf.register_opts(conf)
    policy.register_opts(conf)
    conf([], project='placement', default_config_files=[])
    _copy_options(config, conf)
    path = _database_of(config)
    db = db_api.Database('sqlite:///%s' % path)
    app = deploy.init_application(conf, db)
    weakref.finalize(app, db.engine.dispose)
    _log('ours', path)
    return app


def _database_of(config):
    """The database file of the fixture's configuration: a copy of the
    template for each new one. Fixtures given the same configuration
    (``PlacementFixture(conf_fixture=..., db=False)``, one after another
    in a test) share upstream's database, so they share ours too; it goes
    with the configuration."""
    workdir, template = _template()
    with _lock:
        path = _state.setdefault('databases', {}).get(id(config))
        if path is None:
            path = os.path.join(workdir, '%d.sqlite' % next(_serial))
            shutil.copyfile(template, path)
            _state['databases'][id(config)] = path
            weakref.finalize(config, _drop, id(config), path)
        return path


def _drop(key, path):
    with _lock:
        _state['databases'].pop(key, None)
    for suffix in ('', '-wal', '-shm'):
        try:
            os.unlink(path + suffix)
        except OSError:
            pass
