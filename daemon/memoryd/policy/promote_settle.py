"""What a promotion sub-session wrote, read from the text: pure functions, no files.

memoryd hands each candidate to a sub-session of the user's own agent, which writes one entry
per candidate where it belongs, between memoryd's two markers: an opening comment naming the
run and the source note (:func:`marker`) at the start of the entry's first line, and the
closing one (:func:`closing`) at the end of its last line. memoryd writes no prose; it checks
what landed:

* :func:`landed` finds each entry of the run: the whole lines from the opening marker down to
  its closing marker, nothing else (an entry missing either marker is not counted). Blank
  lines the sub-session set around an entry go with it, so taking every entry out again
  gives the earlier file back byte for byte when nothing else changed it.
* Everything outside the markers is not memoryd's (the user's edit meanwhile, or anything
  else): it is never taken out.
* :func:`over_budget` picks which ``MEMORY.md`` entries to decline so the file fits the
  characters its bootstrap gives it (last written first); never a cut inside an entry.
* :func:`take_out` removes entries, by their recorded text, from a file as it is *now*: each
  must still be there whole, exactly once, at line boundaries (with its blank lines, or else
  just its marked lines); one that is not (the user edited the entry) is left and said.
* :func:`only_scaffold`: whether what is left of a file the run created holds nothing but
  what the run was told to write around its entries (blank lines, a retrospect's heading).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

MARKER_WORD = "memoryd:promoted"
_MARKER = re.compile(r"<!--\s*memoryd:promoted\s+run=(\S+)\s+source=(.+?)\s*-->")
_CLOSING = re.compile(r"<!--\s*/memoryd:promoted\s+run=(\S+)\s+source=(.+?)\s*-->")
# Where an entry may be filed: MEMORY.md, or a skill's retrospect (skills/NAME/docs/retrospect.md).
MEMORY = "MEMORY.md"
RETROSPECT = re.compile(r"^skills/[^/\x00]+/docs/retrospect\.md$")
# The first line the task asks for in a retrospect the sub-session creates.
RETROSPECT_HEADING = "# Retrospect"


def marker(run: str, source: str) -> str:
    """The comment that opens an entry filed for ``source`` in run ``run``."""
    return f"<!-- {MARKER_WORD} run={run} source={source} -->"


def closing(run: str, source: str) -> str:
    """The comment that closes that entry."""
    return f"<!-- /{MARKER_WORD} run={run} source={source} -->"


def markers_in(text: str) -> list[tuple[str, str]]:
    """Every (run, source) opening marker in ``text``, in order."""
    return [(m.group(1), m.group(2)) for m in _MARKER.finditer(text)]


def is_destination(rel: str) -> bool:
    """Whether ``rel`` (workspace-relative, ``/``) is a place a promotion may write."""
    return rel == MEMORY or bool(RETROSPECT.match(rel))


@dataclass(frozen=True)
class Piece:
    """One marked entry as it landed in a file."""

    source: str  # the note it was filed for
    start: int  # its first line (0-based) in the landed text, blank lines before it included
    end: int  # one past its last line, blank lines after it included
    text: str  # those lines, joined (what landed)
    replaced: str = ""  # (an entry never takes the place of anything: always "")


def _lines(text: str | None) -> list[str]:
    return [] if not text else text.splitlines(keepends=True)


def _opening(line: str, run: str) -> str | None:
    """The source of the run's opening marker that starts ``line``, if one does."""
    m = _MARKER.match(line.lstrip())
    return m.group(2) if m and m.group(1) == run else None


def _closes(line: str, run: str, source: str) -> bool:
    found = list(_CLOSING.finditer(line))
    if not found:
        return False
    last = found[-1]
    return (last.group(1), last.group(2)) == (run, source) and not line[last.end():].strip()


def _blocks(lines: list[str], run: str) -> list[tuple[str, int, int]]:
    """(source, first line, one past the last) of each entry of ``run`` with both markers."""
    out = []
    i = 0
    while i < len(lines):
        source = _opening(lines[i], run)
        if source is None:
            i += 1
            continue
        end = None
        for j in range(i, len(lines)):
            if j > i and _opening(lines[j], run) is not None:
                break  # another entry opens first: this one is not closed
            rest = lines[j] if j > i else lines[j][lines[j].find("-->") + 3:]
            if _closes(rest, run, source):
                end = j + 1
                break
        if end is None:
            i += 1
        else:
            out.append((source, i, end))
            i = end
    return out


def landed(before: str | None, after: str, run: str, sources: frozenset[str]) -> list[Piece]:
    """The entries of ``after`` between ``run``'s markers for one of ``sources``, in file
    order; each with the blank lines around it that were not in ``before`` (None: no file)."""
    new = _lines(after)
    blocks = [b for b in _blocks(new, run) if b[0] in sources]
    if not blocks:
        return []
    blocks = _written_anew(_lines(before), new, blocks)
    if not blocks:
        return []
    base: list[str] = []
    at: list[int] = []  # where each entry sat in ``base``
    pos = 0
    for _, b, e in blocks:
        base += new[pos:b]
        at.append(len(base))
        pos = e
    base += new[pos:]
    lead = [0] * len(blocks)
    trail = [0] * len(blocks)
    for op, _i1, _i2, j1, j2 in _opcodes(_lines(before), base):
        if op != "insert" or any(base[j].strip() for j in range(j1, j2)):
            continue
        # Blank lines are all alike: the diff may set them anywhere in their run of blank
        # lines, so they are the entry's when that run reaches the entry.
        r1, r2 = j1, j2
        while r1 > 0 and not base[r1 - 1].strip():
            r1 -= 1
        while r2 < len(base) and not base[r2].strip():
            r2 += 1
        inside = [q for q in at if r1 <= q <= r2]
        if not inside:
            continue
        left = j2 - j1  # spread over the gaps the run's entries leave in that run
        for n, q in enumerate(inside):
            last = len(at) - 1 - at[::-1].index(q)
            gap = (inside[n + 1] if n + 1 < len(inside) else r2) - q - trail[last]
            t = max(0, min(left, gap))
            trail[last] += t
            left -= t
        first = at.index(inside[0])
        lead[first] += max(0, min(left, inside[0] - r1 - lead[first]))
    out = []
    for k, (source, b, e) in enumerate(blocks):
        start, end = b - lead[k], e + trail[k]
        out.append(Piece(source, start, end, "".join(new[start:end])))
    return out


def _written_anew(
    old: list[str], new: list[str], blocks: list[tuple[str, int, int]]
) -> list[tuple[str, int, int]]:
    """The blocks every line of which was added since handoff (a pure insertion against
    ``old``), with text that can be stored as it is. Markers set around (or into) a line the
    user already had make a block of the user's own words, which taking out would take too:
    not the run's entry. Nor is one holding bytes that are not UTF-8 (the journal could not
    hold it byte for byte)."""
    if old and not old[-1].endswith(("\n", "\r")):
        old = [*old[:-1], old[-1] + "\n"]  # (a last line ended since: the same line)
    mine: set[int] = set()
    for _, b, e in blocks:
        mine.update(range(b, e))
    rest = [ln for j, ln in enumerate(new) if j not in mine and ln.strip()]
    if rest == [ln for ln in old if ln.strip()]:
        inserted = [True] * len(new)  # nothing else changed but blank lines: no diff needed
    else:
        inserted = _inserted(old, new)
    out = []
    for source, b, e in blocks:
        if not all(inserted[b:e]):
            continue
        try:
            "".join(new[b:e]).encode("utf-8")
        except UnicodeEncodeError:
            continue
        out.append((source, b, e))
    return out


def _inserted(old: list[str], new: list[str]) -> list[bool]:
    """For each line of ``new``, whether the line diff from ``old`` inserted it."""
    inserted = [False] * len(new)
    for op, _i1, _i2, j1, j2 in _opcodes(old, new):
        if op == "insert":
            for j in range(j1, j2):
                inserted[j] = True
    return inserted


def core(piece: str) -> str:
    """An entry's marked lines, without the blank lines around them."""
    lines = _lines(piece)
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "".join(lines)


def _opcodes(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """A line diff: the common head and tail first (an entry appended or inserted once is
    then exact, however repetitive the file), the middle by difflib."""
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
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return [(str(op), i1 + p, i2 + p, j1 + p, j2 + p) for op, i1, i2, j1, j2 in ops]


def without(after: str, pieces: list[Piece]) -> str:
    """``after`` with ``pieces`` (found in it by :func:`landed`) taken out."""
    new = _lines(after)
    for p in sorted(pieces, key=lambda p: p.start, reverse=True):
        new[p.start:p.end] = []
    return "".join(new)


def over_budget(text: str, pieces: list[Piece], budget: int) -> list[Piece]:
    """The pieces to decline so ``text`` (which holds them) fits ``budget`` characters as
    OpenClaw measures a bootstrap file (UTF-16 units, trailing blanks trimmed): the last
    written first, as few as will do; every piece when even that is not enough."""
    from .retire_plan import measured

    declined: list[Piece] = []
    for p in sorted(pieces, key=lambda p: p.start, reverse=True):
        if measured(without(text, declined)) <= budget:
            break
        declined.append(p)
    return declined


def take_out(text: str, pieces: list[str]) -> tuple[str, list[int]]:
    """``text`` without each recorded entry where it is still there whole and exactly once
    (at line boundaries; with its blank lines when they are still around it, else its marked
    lines alone); the indexes of the entries that were not (left as they are)."""
    missing = []
    for n, piece in enumerate(pieces):
        for form in dict.fromkeys((piece, core(piece))):
            at = _at_line_boundary(text, form)
            if at is not None:
                text = text[:at] + text[at + len(form):]
                break
        else:
            missing.append(n)
    return text, missing


def only_scaffold(text: str, rel: str) -> bool:
    """Whether ``text`` (a file the run created, its entries out) holds nothing but blank
    lines and, in a retrospect, the heading the task asked for."""
    allowed = {"", RETROSPECT_HEADING} if RETROSPECT.match(rel) else {""}
    return all(line.strip() in allowed for line in text.splitlines())


def _at_line_boundary(text: str, piece: str) -> int | None:
    """Where ``piece`` starts in ``text`` when it occurs there exactly once, starting a line
    and ending one."""
    if not piece:
        return None
    found = []
    start = 0
    while (at := text.find(piece, start)) >= 0:
        end = at + len(piece)
        if (at == 0 or text[at - 1] == "\n") and (
            piece.endswith("\n") or end == len(text) or text[end] == "\n"
        ):
            found.append(at)
        start = at + 1
    return found[0] if len(found) == 1 else None
