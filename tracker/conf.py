"""The tracker's configuration: every option, one group per concern.

The options themselves live beside the code that reads them (the agent's
in ``agent_opts``, placement's connection in ``placement.options``, the
drivers' own in ``drivers.options``, those shared with nova-compute under
nova's names in ``nova_opts``); this module gathers them for registration
and for oslo-config-generator.
"""
import os

from oslo_config import cfg

CONF = cfg.CONF


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """[(group, [opts])] for every option the tracker reads."""
    from tracker import agent_opts
    from tracker import nova_opts
    from tracker.drivers import options as driver_options
    from tracker.placement import options as placement_options
    return (nova_opts.list_opts() + agent_opts.list_opts()
            + placement_options.list_opts() + driver_options.list_opts())


def register_opts(conf: cfg.ConfigOpts = CONF) -> cfg.ConfigOpts:
    for group, opts in list_opts():
        conf.register_opts(opts, group=None if group == 'DEFAULT' else group)
    return conf


def load(argv: list[str] | None = None, conf: cfg.ConfigOpts | None = None,
         config_files: list[str] | None = None) -> cfg.ConfigOpts:
    """A ConfigOpts with every option registered and the command line parsed."""
    conf = conf if conf is not None else cfg.ConfigOpts()
    register_opts(conf)
    conf(argv or [], project='tracker',
         default_config_files=config_files)
    return conf


def searched_files(project: str = 'tracker') -> list[str]:
    """Where oslo.config looks for ``<project>.conf`` when no --config-file
    is given (its documented order)."""
    name = project + '.conf'
    return [os.path.expanduser(os.path.join('~', '.' + project, name)),
            os.path.expanduser(os.path.join('~', name)),
            os.path.join('/etc', project, name), os.path.join('/etc', name)]


def sources(conf: cfg.ConfigOpts) -> str:
    """Where ``conf`` came from, for error messages: the files read, or
    where they were looked for."""
    files = list(conf.config_file or []) + list(getattr(conf, 'config_dir', None) and
                                                 [conf.config_dir] or [])
    if files:
        return 'read from %s' % ', '.join(files)
    return ('no configuration file found; looked for %s (give --config-file)'
            % ', '.join(searched_files()))
