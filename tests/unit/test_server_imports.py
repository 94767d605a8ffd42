"""An API host installs the server extra only: nothing the server loads may
need the agent's libraries (setup.cfg: the agent extra)."""
import pkgutil
import subprocess
import sys

import placement_server

AGENT_ONLY = ('libvirt', 'pyudev', 'psutil', 'oslo_messaging', 'oslo_service', 'cotyledon',
              'tracker')


def test_the_server_loads_no_agent_library():
    # (alembic's scripts run under alembic; wsgi_app builds the configured app)
    modules = [m.name for m in pkgutil.walk_packages(placement_server.__path__,
                                                     'placement_server.')
               if not m.name.startswith(('placement_server.db.migrations.',
                                         'placement_server.wsgi_app'))]
    assert 'placement_server.wsgi' in modules and 'placement_server.cmd.server' in modules
    script = ('import importlib, sys\n'
              'for name in %r: importlib.import_module(name)\n'
              'print(" ".join(sorted(m for m in %r if m in sys.modules)))'
              % (modules, AGENT_ONLY))
    result = subprocess.run([sys.executable, '-c', script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == []
