# These modules run in nova's functional virtualenv (tests/integration/
# test_nova_framework.py starts them there): pytest in ours does not collect them.
collect_ignore_glob = ['*.py']
