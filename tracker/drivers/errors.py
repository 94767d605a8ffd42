"""The one error drivers raise for anything the operator can fix."""


class DiscoveryError(Exception):
    """Discovery failed: bad configuration, unreadable or malformed source.

    The message is one line meant for the operator.
    """
