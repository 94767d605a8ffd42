"""The report client's parts: transport, reads and writes, reshape, allocations.

``tracker.report_client.ReportClient`` is the one entry point; these modules
each hold one idea so that it stays small.
"""
