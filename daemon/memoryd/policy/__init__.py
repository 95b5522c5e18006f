"""Decisions: one pure module per rule family (expire, score, promote).

Each takes :class:`memoryd.signals.FileSignals` (and, where the rule needs it, the
file's text) plus its config table, and returns decisions that carry the numbers
behind them, so ``memoryd explain`` can print why. Shared here: glob matching
for protect / pin lists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import translate
from functools import lru_cache

_ANY_FOLDERS = "\x00"  # stands for "**/" while fnmatch translates the rest (no name has it)
# "**/" as a whole part of the path (at its start or after a "/"), as .gitignore reads it:
# in "proj**/" the stars are stars, and "proj" is still followed by something, then a "/".
_WHOLE_DOUBLE_STAR = re.compile(r"(?:^|(?<=/))\*\*/")


@lru_cache(maxsize=1024)
def _glob_regex(glob: str) -> re.Pattern[str]:
    """``glob`` as fnmatch reads it, but ``**/`` also matches no folder at all:
    ``memory/**/*.md``, as the docs write every memory file, takes ``memory/x.md`` too."""
    marked = _WHOLE_DOUBLE_STAR.sub(_ANY_FOLDERS, glob)
    if marked != glob:
        rx = translate(marked).replace(_ANY_FOLDERS, "(?:.*/)?")
        try:
            return re.compile(rx)
        except re.error:  # ("**/" inside a [...] class: as fnmatch alone reads it)
            pass
    return re.compile(translate(glob))


def glob_matches(path: str, glob: str) -> bool:
    """Whether ``path`` matches ``glob`` (workspace-relative; ``*`` also matches ``/``,
    ``**/`` any folders or none); a glob that is the path as written (``memory/[x].md``)
    names it too, and one that is a folder's path (``memory/projects``) the files in it, as
    does one written as folders (``memory/*/``: the files in the folders it matches)."""
    glob = glob.removeprefix("./")
    if path == glob or path.startswith(glob.rstrip("/") + "/"):
        return True
    if glob.endswith("/"):
        glob += "*"
    return _glob_regex(glob).match(path) is not None


def matches_any(path: str, globs: Iterable[str]) -> str | None:
    """The first glob (:func:`glob_matches`) that ``path`` matches."""
    for glob in globs:
        if glob and glob_matches(path, glob):
            return glob
    return None
