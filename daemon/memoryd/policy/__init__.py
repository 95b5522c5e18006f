"""Decisions: one pure module per rule family (expire, score, promote).

Each takes :class:`memoryd.signals.FileSignals` (and, where the rule needs it, the
file's text) plus its config table, and returns decisions that carry the numbers
behind them, so ``memoryd explain`` can print why. Shared here: glob matching
for protect / pin lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase


def matches_any(path: str, globs: Iterable[str]) -> str | None:
    """The first glob (workspace-relative; ``*`` also matches ``/``) that ``path`` matches."""
    for glob in globs:
        if glob and fnmatchcase(path, glob.removeprefix("./")):
            return glob
    return None
