"""The tracker's configuration: every option, one group per concern.

The options themselves live beside the code that reads them (the agent's
here, placement's connection in ``report_client``, the drivers' in
``drivers.options``); this module gathers them for registration and for
oslo-config-generator.
"""
from oslo_config import cfg

CONF = cfg.CONF


def list_opts():
    """[(group, [opts])] for every option the tracker reads."""
    from tracker import agent_opts
    from tracker import report_client
    from tracker.drivers import options as driver_options
    return (agent_opts.list_opts() + report_client.list_opts()
            + driver_options.list_opts())


def register_opts(conf=CONF):
    for group, opts in list_opts():
        conf.register_opts(opts, group=group)
    return conf


def load(argv=None, conf=None, config_files=None):
    """A ConfigOpts with every option registered and the command line parsed."""
    conf = conf if conf is not None else cfg.ConfigOpts()
    register_opts(conf)
    conf(argv or [], project='tracker',
         default_config_files=config_files)
    return conf
