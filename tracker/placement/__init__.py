"""Everything that speaks HTTP to placement.

``client.ReportClient`` is the one entry point; the other modules each hold
one idea (transport, reads and writes, reshape, allocations) so that it
stays small.
"""
