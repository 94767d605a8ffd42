"""Placement's policy in code: the defaults an operator's file overrides.

``list_rules`` is the ``oslo.policy.policies`` entry point that
oslopolicy-sample-generator and oslopolicy-policy-generator read.
"""
from oslo_policy import policy

from placement_server.policies import api
from placement_server.policies import base
from placement_server.policies import extensions


def list_rules() -> list[policy.RuleDefault]:
    return base.rules + api.rules + extensions.rules
