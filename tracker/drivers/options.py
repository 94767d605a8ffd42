"""Options of the discovery drivers. Owner: drivers."""


def list_opts():
    return []
