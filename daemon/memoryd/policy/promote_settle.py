"""What a promotion sub-session wrote, read from the text: pure functions, no files.

memoryd hands each candidate to a sub-session of the user's own agent, which writes one entry
per candidate where it belongs and ends it with memoryd's marker, an HTML comment naming the
run and the source note (:func:`marker`). memoryd writes no prose; it checks what landed:

* :func:`landed` compares a destination file as it was when the run was handed over with the
  file as it is now (a line diff) and returns each *piece* of the change that carries one of
  the run's markers: the changed lines from the start of the change (or the line after the
  previous marker) down to the marker's line; the last piece of a change also takes the lines
  after its marker (a blank line the agent added). A piece knows the lines it replaced (only
  the first piece of a change replaced any), so taking it out again restores them.
* Changes that carry no marker of the run are not memoryd's (the user's edit meanwhile, or
  anything else): they are never taken out.
* :func:`over_budget` picks which ``MEMORY.md`` pieces to decline so the file fits the
  characters its bootstrap gives it (last written first); never a cut inside an entry.
* :func:`take_out` removes pieces from a text as it is *now*: each piece must still be there,
  whole, exactly once, at line boundaries; one that is not (the user edited the entry) is left
  and said. The rest of the file, and any edit the user made elsewhere, stays.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

MARKER_WORD = "memoryd:promoted"
_MARKER = re.compile(r"<!--\s*memoryd:promoted\s+run=(\S+)\s+source=(.+?)\s*-->")
# Where an entry may be filed: MEMORY.md, or a skill's retrospect (seed 004).
MEMORY = "MEMORY.md"
RETROSPECT = re.compile(r"^skills/[^/\x00]+/docs/retrospect\.md$")


def marker(run: str, source: str) -> str:
    """The comment that ends an entry filed for ``source`` in run ``run``."""
    return f"<!-- {MARKER_WORD} run={run} source={source} -->"


def markers_in(text: str) -> list[tuple[str, str]]:
    """Every (run, source) marker in ``text``, in order."""
    return [(m.group(1), m.group(2)) for m in _MARKER.finditer(text)]


def is_destination(rel: str) -> bool:
    """Whether ``rel`` (workspace-relative, ``/``) is a place a promotion may write."""
    return rel == MEMORY or bool(RETROSPECT.match(rel))


@dataclass(frozen=True)
class Piece:
    """One marked entry as it landed in a file."""

    source: str  # the note it was filed for
    start: int  # its first line (0-based) in the landed text
    end: int  # one past its last line
    text: str  # those lines, joined (what landed)
    replaced: str  # the lines of the earlier file it took the place of ("" mostly)


def _lines(text: str | None) -> list[str]:
    return [] if not text else text.splitlines(keepends=True)


def landed(before: str | None, after: str, run: str, sources: frozenset[str]) -> list[Piece]:
    """The pieces of ``after`` that carry a marker of ``run`` for one of ``sources`` and were
    not in ``before`` (None: the file did not exist), in file order."""
    old, new = _lines(before), _lines(after)
    out: list[Piece] = []
    for op, i1, i2, j1, j2 in _opcodes(old, new):
        if op not in ("insert", "replace"):
            continue
        marks = []
        for j in range(j1, j2):
            found = [(r, s) for r, s in markers_in(new[j]) if r == run and s in sources]
            if found:
                marks.append((j, found[0][1]))
        start = j1
        for n, (j, source) in enumerate(marks):
            end = j2 if n == len(marks) - 1 else j + 1
            replaced = "".join(old[i1:i2]) if n == 0 else ""
            out.append(Piece(source, start, end, "".join(new[start:end]), replaced))
            start = end
    return out


_EXACT_CELLS = 250_000  # the middle of a diff this small is diffed exactly (an LCS)


def _opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """A line diff, minimal where it matters: the common head and tail first (an entry
    appended or inserted once is then exact, however repetitive the file), the middle by a
    longest common subsequence when small, else by difflib."""
    p = 0
    while p < len(old) and p < len(new) and old[p] == new[p]:
        p += 1
    s = 0
    while s < min(len(old), len(new)) - p and old[-1 - s] == new[-1 - s]:
        s += 1
    a, b = old[p:len(old) - s], new[p:len(new) - s]
    if not a and not b:
        return []
    if not a or not b:
        return [("insert" if not a else "delete", p, p + len(a), p, p + len(b))]
    if len(a) * len(b) <= _EXACT_CELLS:
        ops = _lcs_opcodes(a, b)
    else:
        ops = [(str(op), i1, i2, j1, j2) for op, i1, i2, j1, j2
               in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()]  # fmt: skip
    return [(op, i1 + p, i2 + p, j1 + p, j2 + p) for op, i1, i2, j1, j2 in ops]


def _lcs_opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    pairs = []
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    ops: list[tuple[str, int, int, int, int]] = []
    pi = pj = 0
    for i, j in [*pairs, (n, m)]:
        if i > pi or j > pj:
            kind = "replace" if i > pi and j > pj else ("delete" if i > pi else "insert")
            ops.append((kind, pi, i, pj, j))
        if (i, j) != (n, m):
            ops.append(("equal", i, i + 1, j, j + 1))
        pi, pj = i + 1, j + 1
    return ops


def without(after: str, pieces: list[Piece]) -> str:
    """``after`` with ``pieces`` (found in it by :func:`landed`) put back to what they
    replaced: the earlier file again when every change was a marked piece."""
    new = _lines(after)
    for p in sorted(pieces, key=lambda p: p.start, reverse=True):
        new[p.start:p.end] = [p.replaced] if p.replaced else []
    return "".join(new)


def over_budget(text: str, pieces: list[Piece], budget: int) -> list[Piece]:
    """The pieces to decline so ``text`` (which holds them) fits ``budget`` characters: the
    last written first, as few as will do; every piece when even that is not enough."""
    declined: list[Piece] = []
    size = len(text)
    for p in sorted(pieces, key=lambda p: p.start, reverse=True):
        if size <= budget:
            break
        declined.append(p)
        size -= len(p.text) - len(p.replaced)
    return declined


def take_out(text: str, pieces: list[tuple[str, str]]) -> tuple[str, list[int]]:
    """``text`` with each (landed, replaced) piece put back to ``replaced``, where the landed
    lines are still there whole and exactly once (at line boundaries); the indexes of the
    pieces that were not (left as they are)."""
    missing = []
    for n, (piece, replaced) in enumerate(pieces):
        at = _at_line_boundary(text, piece)
        if at is None:
            missing.append(n)
            continue
        text = text[:at] + replaced + text[at + len(piece):]
    return text, missing


def _at_line_boundary(text: str, piece: str) -> int | None:
    """Where ``piece`` starts in ``text`` when it occurs there exactly once starting a line."""
    if not piece:
        return None
    found = []
    start = 0
    while (at := text.find(piece, start)) >= 0:
        if at == 0 or text[at - 1] == "\n":
            found.append(at)
        start = at + 1
    return found[0] if len(found) == 1 else None
