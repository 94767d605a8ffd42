"""etc/*.conf.sample are what oslo-config-generator makes of the code's
options today; tools/gen-config.sh regenerates them."""
import os
import subprocess
import sys

import pytest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
GENERATOR = os.path.join(os.path.dirname(sys.executable), 'oslo-config-generator')


@pytest.mark.parametrize('name', ['tracker', 'placement'])
def test_sample_is_current(name, tmp_path):
    generated = tmp_path / ('%s.conf.sample' % name)
    subprocess.run(
        [GENERATOR, '--config-file',
         os.path.join(TOP, 'etc', '%s-config-generator.conf' % name),
         '--output-file', str(generated)],
        cwd=TOP, check=True, capture_output=True)
    with open(os.path.join(TOP, 'etc', '%s.conf.sample' % name)) as f:
        committed = f.read()
    assert generated.read_text() == committed, (
        'etc/%s.conf.sample is stale: run tools/gen-config.sh' % name)


def test_sample_documents_the_agent_options():
    with open(os.path.join(TOP, 'etc', 'tracker.conf.sample')) as f:
        sample = f.read()
    for option in ('#interval = 60', '#jitter = 10', '#metrics_port = 0',
                   '#driver = <None>', '#host = <current_hostname>',
                   '#cpu_dedicated_set = <None>',
                   '#initial_cpu_allocation_ratio = 4.0'):
        assert option in sample
