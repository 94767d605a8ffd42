"""Differential test: ours against upstream placement 16.0.0.

``generator.calls(seed, count)`` makes a seeded random sequence of API
calls over the whole API at every microversion (1.0-1.39), with uuids and
names the client chooses; ``runner.Pair`` sends each call to upstream (a
real process) and to ours (several ``placement-server`` instances with
several workers each, on a database of the same engine: every read goes to
another instance than the write before it) and compares the answers once
normalised (``compare.py``); ``shrink.shrink`` drops calls from a
divergent sequence while it still diverges and ``shrink.show`` prints the
shortest reproduction. ``known.py`` lists what is tolerated: upstream's
own bugs and the open candidates differences.

CI runs a few seeds per engine (``tests/integration/test_differential.py``);
longer runs: ``tools/differential.py --seeds N --calls M --engine E``.
"""
