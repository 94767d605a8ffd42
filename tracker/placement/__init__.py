"""Everything that speaks HTTP to placement.

``client.ReportClient`` is the one entry point. It owns the wire
(``http.Transport``) and what the agent knows of placement
(``known.KnownPlacement``), and lends both to the modules that each hold
one idea: ``sync`` (providers), ``consumers`` (allocations), ``watch`` (the
steady-state check) and ``membership`` (aggregates by host name), which send
their requests through ``resources`` and ``allocations`` and plan a reshape
with ``reshape``.
"""
