"""Policy defaults (upstream placement's current rules) and overrides."""
import os
import re
import subprocess
import sys

from oslo_config import cfg
import pytest

from placement_server import context
from placement_server import errors
from placement_server import policies
from placement_server import policy

HANDLERS = os.path.join(os.path.dirname(policies.__file__), '..', 'handlers')
BIN = os.path.dirname(sys.executable)


@pytest.fixture(autouse=True)
def fresh_enforcer():
    policy._ENFORCER = None
    yield
    policy._ENFORCER = None


def ctx(roles, project='p1', system=None):
    return context.RequestContext(user_id='u1', project_id=None if system else project,
                                  system_scope=system, roles=roles)


def allowed(context_, action, project='p1'):
    try:
        context_.can(action, {'project_id': project, 'user_id': 'u1'})
    except errors.Forbidden:
        return False
    return True


def test_every_name_a_handler_asks_for_has_a_rule():
    asked = set()
    for name in os.listdir(HANDLERS):
        if name.endswith('.py'):
            with open(os.path.join(HANDLERS, name)) as f:
                asked.update(re.findall(r"\.can\(\s*'([^']+)'", f.read()))
    known = {rule.name for rule in policies.list_rules()}
    assert asked, 'no handler asks for a policy check'
    assert asked <= known, sorted(asked - known)


@pytest.mark.parametrize('roles, expected', [
    (['admin'], True),
    (['service'], True),
    (['member', 'reader'], False),
    (['reader'], False),
    ([], False),
])
def test_most_calls_need_admin_or_service(roles, expected):
    for action in ('placement:resource_providers:create', 'placement:allocations:update',
                   'placement:resource_classes:list', 'placement:allocation_candidates:list'):
        assert allowed(ctx(roles), action) is expected, action


def test_a_project_reader_sees_only_its_own_usages():
    reader = ctx(['reader'], project='p1')
    assert allowed(reader, 'placement:usages', project='p1')
    assert not allowed(reader, 'placement:usages', project='p2')
    assert allowed(ctx(['admin'], project='p1'), 'placement:usages', project='p2')


def test_only_the_service_role_may_reshape():
    assert allowed(ctx(['service']), 'placement:reshaper:reshape')
    assert not allowed(ctx(['admin']), 'placement:reshaper:reshape')


def test_system_scoped_tokens_are_refused():
    # Every rule is project-scoped, and scope is enforced.
    assert not allowed(ctx(['admin'], system='all'), 'placement:resource_providers:list')


def test_denial_is_forbidden_naming_the_action():
    with pytest.raises(errors.Forbidden) as info:
        ctx(['member']).can('placement:traits:update')
    assert info.value.status == 403
    assert 'placement:traits:update' in info.value.detail


def _init_with_policy_file(tmp_path, rules):
    """The process's enforcer bound to a placement.conf naming a policy
    file holding ``rules``; returns the policy file."""
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text(rules)
    conf_file = tmp_path / 'placement.conf'
    conf_file.write_text('[oslo_policy]\npolicy_file = %s\n' % policy_file)
    conf = cfg.ConfigOpts()
    policy.register_opts(conf)
    conf([], project='placement', default_config_files=[str(conf_file)])
    policy.init(conf)
    return policy_file


def test_a_policy_file_overrides_the_defaults(tmp_path):
    _init_with_policy_file(tmp_path, '"placement:resource_providers:list": "role:reader"\n'
                                     '"placement:resource_providers:delete": "!"\n')
    assert allowed(ctx(['reader']), 'placement:resource_providers:list')
    assert not allowed(ctx(['admin']), 'placement:resource_providers:delete')
    assert allowed(ctx(['admin']), 'placement:resource_providers:create')   # untouched


def test_an_edited_policy_file_applies_at_the_next_look(tmp_path, monkeypatch):
    policy_file = _init_with_policy_file(
        tmp_path, '"placement:resource_providers:list": "role:reader"\n')
    assert allowed(ctx(['reader']), 'placement:resource_providers:list')
    assert not allowed(ctx(['member']), 'placement:resource_providers:list')
    policy_file.write_text('"placement:resource_providers:list": "role:member"\n')
    later = policy_file.stat().st_mtime + 10   # a newer mtime, however fast the edit
    os.utime(policy_file, (later, later))
    monkeypatch.setattr(policy, 'RELOAD_EVERY', 0)   # the next look is now
    assert not allowed(ctx(['reader']), 'placement:resource_providers:list')
    assert allowed(ctx(['member']), 'placement:resource_providers:list')


def test_sample_generator_entry_point():
    result = subprocess.run([os.path.join(BIN, 'oslopolicy-sample-generator'),
                             '--namespace', 'placement_server'],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert '#"placement:reshaper:reshape": "rule:service_api"' in result.stdout
    assert '# POST  /allocations' in result.stdout


def test_policy_generator_entry_point_reads_the_operator_file(tmp_path):
    (tmp_path / 'policy.yaml').write_text('"placement:traits:list": "role:reader"\n')
    conf_file = tmp_path / 'placement.conf'
    conf_file.write_text('[oslo_policy]\npolicy_file = %s\n' % (tmp_path / 'policy.yaml'))
    result = subprocess.run([os.path.join(BIN, 'oslopolicy-policy-generator'),
                             '--namespace', 'placement_server',
                             '--config-file', str(conf_file)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert '"placement:traits:list": "role:reader"' in result.stdout
    assert '"placement:traits:show": "rule:admin_or_service_api"' in result.stdout


def test_the_committed_policy_sample_is_current(tmp_path):
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = tmp_path / 'policy.yaml.sample'
    result = subprocess.run([os.path.join(BIN, 'oslopolicy-sample-generator'),
                             '--config-file',
                             os.path.join(top, 'etc/placement-policy-generator.conf'),
                             '--output-file', str(out)],
                            capture_output=True, text=True, timeout=60, cwd=top)
    assert result.returncode == 0, result.stderr
    with open(os.path.join(top, 'etc/policy.yaml.sample')) as f:
        assert out.read_text() == f.read(), (
            'etc/policy.yaml.sample is stale: run oslopolicy-sample-generator '
            '--config-file etc/placement-policy-generator.conf')


def test_a_decisions_key_tells_credentials_apart():
    admin = {'user_id': 'u', 'project_id': 'p', 'roles': ['admin', 'reader']}
    reader = dict(admin, roles=['reader'])
    key = policy._key('placement:resource_providers:list', {'project_id': 'p'}, admin)
    assert key == policy._key('placement:resource_providers:list', {'project_id': 'p'},
                              dict(reversed(list(admin.items()))))
    assert key != policy._key('placement:resource_providers:list', {'project_id': 'p'}, reader)
    assert key != policy._key('placement:resource_providers:list', {'project_id': 'q'}, admin)
    assert key != policy._key('placement:resource_providers:create', {'project_id': 'p'}, admin)
    # a value that cannot be part of a key: no key, so no cached decision
    assert policy._key('x', {'project_id': {'nested': 1}}, admin) is None


def test_our_policy_defaults_stay_on_our_configuration():
    """Another configuration in the same process keeps its [oslo_policy]
    defaults: upstream's PlacementFixture, which nova's functional tests
    load this application behind, sets enforce_new_defaults = False for
    the whole process (oslo.policy's set_defaults changes the shared option
    objects), and nova's own policy checks rely on it."""
    from oslo_policy import opts as policy_opts
    theirs, ours = cfg.ConfigOpts(), cfg.ConfigOpts()
    policy_opts.set_defaults(theirs, enforce_new_defaults=False)
    try:
        policy.register_opts(ours)
        policy._make_enforcer(ours)    # oslo.policy registers its options again
        ours([], default_config_files=[])
        theirs([], default_config_files=[])
        assert (ours.oslo_policy.enforce_new_defaults, ours.oslo_policy.policy_file) == (
            True, 'policy.yaml')
        assert theirs.oslo_policy.enforce_new_defaults is False
    finally:
        policy_opts.set_defaults(theirs, enforce_new_defaults=True)   # as it was
