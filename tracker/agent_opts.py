"""Options of the agent itself ([tracker] group). Owner: agent."""


def list_opts():
    return []
