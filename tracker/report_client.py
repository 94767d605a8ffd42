"""Everything that speaks HTTP to placement. Owner: report client."""


def list_opts():
    return []
