"""What every tracker command shares: options, logging, one-line errors."""
import argparse
from collections.abc import Callable
import logging as std_logging
import os
import signal
import sys
from typing import NoReturn
import warnings

from oslo_config import cfg
from oslo_log import log as logging

from tracker import conf as tracker_conf

# oslo.messaging imports oslo.service's eventlet backend, which warns at
# import; the tracker never uses eventlet, and its commands keep stderr for
# their own one-line errors.
warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
warnings.filterwarnings('ignore', category=DeprecationWarning)


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write('%s: error: %s\n' % (self.prog, message))
        sys.exit(2)


def add_config_args(parser: argparse.ArgumentParser) -> None:
    # SUPPRESS: given before or after a subcommand, the value is kept.
    parser.add_argument('--config-file', action='append',
                        default=argparse.SUPPRESS, metavar='PATH',
                        help='configuration file (repeatable)')
    parser.add_argument('--config-dir', metavar='DIR', default=argparse.SUPPRESS,
                        help='directory of *.conf files, read after the files')
    parser.add_argument('--debug', action='store_true',
                        default=argparse.SUPPRESS, help='debug logging')


def load_conf(args: argparse.Namespace, prog: str, daemon: bool = False) -> cfg.ConfigOpts:
    """The process's ConfigOpts with every tracker option, from ``args``.

    The global cfg.CONF: oslo.messaging registers some of its options
    (tracing, metrics) on that one only.
    """
    conf = tracker_conf.CONF
    logging.register_options(conf)
    # Commands print their results on stdout; logs go to stderr.
    conf.set_default('use_stderr', True)
    conf.set_default('default_log_levels', logging.get_default_log_levels()
                     + ['oslo_service=WARN', 'stevedore=WARN'])
    argv: list[str] = []
    for path in getattr(args, 'config_file', []):
        argv += ['--config-file', path]
    if getattr(args, 'config_dir', None):
        argv += ['--config-dir', args.config_dir]
    files = None if argv else cfg.find_config_files('tracker')
    tracker_conf.load(argv, conf=conf, config_files=files)
    if getattr(args, 'debug', False):
        conf.set_override('debug', True)
    logging.setup(conf, prog)
    if not daemon and not getattr(args, 'debug', False):
        # A one-shot command says what went wrong in its own one line;
        # --debug shows the logs behind it.
        std_logging.disable(std_logging.ERROR)
    return conf


def run(main: Callable[[list[str] | None], int], prog: str,
        argv: list[str] | None = None) -> int:
    """Call ``main(argv)``; any failure is one line on stderr and exit 1."""
    try:
        status = main(argv)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # The reader went away (``| head -1``): what it wanted is printed.
        # Point stdout at /dev/null so the interpreter's own final flush
        # does not fail again, and end as a tool killed by SIGPIPE would.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except KeyboardInterrupt:
        return 130
    except cfg.Error as exc:
        return fail(prog, 'configuration: %s' % exc)
    except Exception as exc:
        return fail(prog, '%s' % (exc or type(exc).__name__))


def fail(prog: str, message: object, code: int = 1) -> int:
    sys.stderr.write('%s: %s\n' % (prog, ' '.join(str(message).split())))
    return code
