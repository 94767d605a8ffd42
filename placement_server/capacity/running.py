"""Cloud-wide sums and per-host text kept across scrapes.

Between two scrapes a few trees change; summing 10000 trees' figures and
joining their text again each time would cost most of a scrape. So the
sums (flavor counts, free capacity) are adjusted by the trees that
changed, the largest free amount is kept as a count of values per class,
and the per-host text is kept in blocks of trees by root id, a block
joined again only when one of its trees changed.
"""
import collections
from collections.abc import Callable

from placement_server.capacity import figures

# Trees per block of per-host text, by root id.
BLOCK = 256


class Running:

    def __init__(self, columns: int) -> None:
        self._columns = columns
        self._seen: dict[int, figures.TreeFigures] = {}
        self.fits: list[int] = []
        self.free: collections.Counter[int] = collections.Counter()
        self._largest: dict[int, collections.Counter[int]] = {}
        self._blocks: dict[int, list[bytes]] = {}

    def update(self, trees: dict[int, figures.TreeFigures],
               text_of: Callable[[figures.TreeFigures], list[bytes]] | None) -> None:
        """Take in the trees' figures; with ``text_of`` (a tree's text, one
        bytes per column), keep their text too."""
        seen = self._seen
        changed = [root for root, tree in trees.items() if seen.get(root) is not tree]
        changed += [root for root in seen if root not in trees]
        if not changed and (self._blocks or text_of is None or not trees):
            return
        for root in changed:
            old = seen.pop(root, None)
            if old is not None:
                self._count(old, -1)
            new = trees.get(root)
            if new is not None:
                self._count(new, 1)
                seen[root] = new
        if text_of is None:
            self._blocks.clear()
            return
        blocks = ({root // BLOCK for root in changed} if self._blocks
                  else {root // BLOCK for root in trees})
        for block in blocks:
            roots = sorted(r for r in range(block * BLOCK, (block + 1) * BLOCK) if r in trees)
            if not roots:
                self._blocks.pop(block, None)
                continue
            columns: list[list[bytes]] = [[] for _ in range(self._columns)]
            for root in roots:
                tree = trees[root]
                if tree.rendered is None:
                    tree.rendered = text_of(tree)
                for column, text in zip(columns, tree.rendered):
                    column.append(text)
            self._blocks[block] = [b''.join(column) for column in columns]

    def _count(self, tree: figures.TreeFigures, sign: int) -> None:
        if not self.fits:
            self.fits = [0] * len(tree.fits)
        for i, n in enumerate(tree.fits):
            self.fits[i] += sign * n
        for rc, n in tree.free.items():
            self.free[rc] += sign * n
        for rc, n in tree.largest.items():
            counts = self._largest.setdefault(rc, collections.Counter())
            counts[n] += sign
            if not counts[n]:
                del counts[n]

    def largest(self) -> dict[int, int]:
        """{class: the largest free amount any provider takes in one allocation}"""
        return {rc: max(counts) for rc, counts in self._largest.items() if counts}

    def column(self, i: int) -> bytes:
        """Column ``i`` of every tree's text, in root order."""
        return b''.join(self._blocks[block][i] for block in sorted(self._blocks))
