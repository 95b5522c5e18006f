"""A memory file's Markdown sections, and which of them a hit's text lies in (pure).

The unit is the *section*: a heading line (ATX, outside fenced code) and every line after it
up to the next heading of any level; the text before the first heading is ``(top)``. Sections
are flat and disjoint, so a hit's credit is never counted twice by nesting.

A hit is anchored on its *text*, not its line numbers, since OpenClaw and dreaming rewrite
``MEMORY.md``: :func:`chunk_anchor` stores fingerprints of a chunk's lines with the hit, and
:func:`place` finds those lines in the file as it is now (docs/sections.md, "How a hit is
credited"); a hit none of whose lines is found is *unplaced*, one stored before anchors is
placed by its line range.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

# A heading: up to three spaces, one to six #, then a space or the end of the line.
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})(.*)")
# Lines shorter than this (without the blanks around them) are too common to say where a
# chunk was.
MIN_LINE_CHARS = 3
# The lines of a chunk looked at for its first line of MIN_LINE_CHARS or more (then only its
# heading lines are taken, at most MAX_PRINTS in all). OpenClaw (citations "auto") ends a
# search snippet with a "Source: PATH#Lx-Ly" line: no file text, left out.
HEAD_LINES = 3
MAX_PRINTS = 24
WHOLE_FILE = "*"  # the anchor of a memory_get that read the whole file
# The recall annotations dreaming ends a promoted entry with, which OpenClaw cuts out of a
# search snippet (``stripMemoryAnnotationCarriers``; docs/sections.md).
_ANNOTATION = re.compile(r"<!--\s*(?:trigger|importance|project)\s*:", re.IGNORECASE)
TOP = "(top)"


class Section(NamedTuple):
    """One section of a file as it is now."""

    heading: str  # the heading's text ("Wireguard"), TOP for the text before the first one
    level: int  # 1..6; 0 for TOP
    first: int  # its first line (1-based, the heading line)
    last: int  # its last line (inclusive)
    start: int  # where it starts in the file, in UTF-16 code units (as OpenClaw counts)
    end: int  # where it ends (exclusive), same units

    @property
    def chars(self) -> int:
        return self.end - self.start

    @property
    def title(self) -> str:
        return TOP if self.level == 0 else f"{'#' * self.level} {self.heading}"


def utf16_len(text: str) -> int:
    """The length JavaScript gives ``text`` (OpenClaw's budgets count UTF-16 code units)."""
    n = len(text)
    if text.isascii():
        return n
    return n + sum(1 for ch in text if ord(ch) > 0xFFFF)


def parse_sections(text: str) -> tuple[Section, ...]:
    """The sections of ``text``, in order; a file without text has none."""
    lines = text.split("\n")
    out: list[Section] = []
    head: tuple[str, int, int, int] | None = None  # heading, level, first line, start
    fence: str | None = None
    offset = 0
    top_has_text = False
    for number, line in enumerate(lines, start=1):
        match = None
        # (a CRLF file's line break and a BOM are text OpenClaw counts, not the line's Markdown)
        probe = line[:-1] if line.endswith("\r") else line
        if number == 1 and probe.startswith("\ufeff"):
            probe = probe[1:]
        m = _FENCE.match(probe)
        if m is not None:
            mark = m.group(1)
            if fence is None:
                fence = mark  # closed by as many or more of its character, nothing after
            elif mark.startswith(fence) and not m.group(2).strip(" \t"):
                fence = None
        elif fence is None and probe.lstrip(" ").startswith("#"):
            match = _HEADING.match(probe)
        if match is not None:
            if head is not None:
                out.append(Section(head[0], head[1], head[2], number - 1, head[3], offset))
            elif top_has_text:
                out.append(Section(TOP, 0, 1, number - 1, 0, offset))
            head = ((match.group(2) or "").strip(), len(match.group(1)), number, offset)
        elif head is None and line.strip():
            top_has_text = True
        offset += utf16_len(line) + (1 if number < len(lines) else 0)
    last = len(lines)
    if head is not None:
        out.append(Section(head[0], head[1], head[2], last, head[3], offset))
    elif top_has_text:
        out.append(Section(TOP, 0, 1, last, 0, offset))
    return tuple(out)


def fingerprint(line: str) -> str | None:
    """A line's fingerprint (its text without the blanks around it), or None for a line too
    short to tell."""
    line = line.strip()
    if len(line) < MIN_LINE_CHARS:
        return None
    return format(zlib.crc32(line.encode("utf-8", "surrogatepass")), "x")


def without_annotations(line: str) -> str:
    """One file line as a search snippet shows it: its recall annotations cut out (every
    ``<!-- trigger|importance|project: … -->`` closed on the line), as OpenClaw does."""
    parts, cursor, at = [], 0, 0
    while (m := _ANNOTATION.search(line, at)) is not None:
        close = line.find("-->", m.end())
        if close < 0:
            break
        parts.append(line[cursor : m.start()])
        cursor = at = close + 3
    if cursor == 0:
        return line
    parts.append(line[cursor:])
    return "".join(parts)


def chunk_anchor(start: int | None, end: int | None, text: str) -> str:
    """What is stored of one chunk of a hit: ``start:end:fp.fp…`` (a range may be empty): the
    fingerprints of its first line of 3 characters or more and of every heading line after
    it, not of every line (a scan makes one for every new hit: docs/sections.md)."""
    crc = zlib.crc32
    prints = []
    at, n = 0, len(text)
    for _ in range(HEAD_LINES):  # the first line that says something (most often the first)
        stop = text.find("\n", at)
        line = (text[at:] if stop < 0 else text[at:stop]).strip()
        if len(line) >= MIN_LINE_CHARS:
            if not line.startswith("Source: "):
                prints.append(format(crc(line.encode("utf-8", "surrogatepass")), "x"))
            break
        if stop < 0:
            break
        at = stop + 1
    # the heading lines after it, found by the C-speed find (most chunks have none)
    nxt = text.find("\n#", at) if at < n else -1
    while nxt >= 0 and len(prints) < MAX_PRINTS:
        at = nxt + 1
        stop = text.find("\n", at)
        line = (text[at:] if stop < 0 else text[at:stop]).strip()
        if len(line) >= MIN_LINE_CHARS:
            prints.append(format(crc(line.encode("utf-8", "surrogatepass")), "x"))
        nxt = text.find("\n#", stop) if stop >= 0 else -1
    s = "" if start is None else str(start)
    e = "" if end is None else str(end)
    return f"{s}:{e}:{'.'.join(prints)}"


def anchor_text(raw: Any) -> str | None:
    """What is stored of a hit's text (the parser's ``ResultPath.anchor``): each chunk's
    :func:`chunk_anchor`, joined by ";"; WHOLE_FILE and None as they are."""
    if raw is None or type(raw) is str:
        return raw
    return ";".join([chunk_anchor(s, e, t) for s, e, t in raw])


class FileIndex:
    """A file as it is now, ready to place many hits: its sections and where each line is."""

    def __init__(self, text: str) -> None:
        self.sections = parse_sections(text)
        lines = text.split("\n")
        self.line_count = len(lines)
        self.lines_of: dict[str, list[int]] = {}
        for number, line in enumerate(lines, start=1):
            fp = fingerprint(line)
            if fp is not None:
                self.lines_of.setdefault(fp, []).append(number)
            if "<!--" in line:  # a promoted entry: also as the snippet shows it
                shown = fingerprint(without_annotations(line))
                if shown is not None and shown != fp:
                    self.lines_of.setdefault(shown, []).append(number)
        # The section of each line (index into sections), for lines 1..line_count.
        self._section_of = [-1] * (self.line_count + 2)
        for i, sec in enumerate(self.sections):
            for n in range(sec.first, min(sec.last, self.line_count) + 1):
                self._section_of[n] = i

    def section_of(self, line: int) -> int | None:
        if 1 <= line <= self.line_count:
            i = self._section_of[line]
            return i if i >= 0 else None
        return None


class Placement(NamedTuple):
    """Where one hit lies in the file as it is now."""

    sections: frozenset[int]  # indexes into FileIndex.sections; empty: unplaced
    whole_file: bool = False  # a memory_get of the whole file: no section in particular
    by_lines: bool = False  # placed by its recorded line range alone (no text stored)


def _nearest(lines: Sequence[int], start: int | None, end: int | None) -> int:
    if start is None:
        return lines[0]
    hi = end if end is not None and end >= start else start
    return min(lines, key=lambda n: 0 if start <= n <= hi else min(abs(n - start), abs(n - hi)))


def _by_range(index: FileIndex, start: int | None, end: int | None) -> Placement:
    """A hit with no text to tell it by (stored before anchors, or no line long enough): its
    recorded line range in the file as it is now is all there is."""
    if start is None:
        return Placement(frozenset(), by_lines=True)
    hi = end if end is not None and end >= start else start
    if hi > index.line_count or start < 1:
        return Placement(frozenset(), by_lines=True)
    found = {index.section_of(n) for n in range(start, hi + 1)}
    return Placement(frozenset(i for i in found if i is not None), by_lines=True)


def place(index: FileIndex, anchor: str | None, start: int | None, end: int | None) -> Placement:
    """The sections a hit covered, found by its stored text in the file as it is now (one hit;
    for many hits of one file, one :class:`Placer` places them all)."""
    return Placer(index).place(anchor, start, end)


class Placer:
    """Places the hits of one file as it is now, remembering what each chunk's lines said:
    what they name does not depend on the recorded range, so it is worked out once per
    distinct set of fingerprints."""

    def __init__(self, index: FileIndex) -> None:
        self.index = index
        # fingerprints of a chunk -> (sections its unique lines name, or the lines of each
        # repeated fingerprint when none is unique: those are placed nearest the range)
        self._prints: dict[str, tuple[tuple[int, ...], tuple[list[int], ...] | None]] = {}
        # the placement of a one-chunk anchor that does not depend on its range
        self._whole: dict[str, Placement] = {}

    def _of_prints(self, prints: str) -> tuple[tuple[int, ...], tuple[list[int], ...] | None]:
        lines_of = self.index.lines_of
        section_of = self.index._section_of
        found: list[int] = []
        unique: list[tuple[int, int]] = []  # (place among the prints, its one line)
        repeated: list[tuple[int, list[int]]] = []  # (place among the prints, its lines)
        for k, fp in enumerate(prints.split(".")):
            at = lines_of.get(fp)
            if at is None:
                continue
            if len(at) == 1:
                i = section_of[at[0]]
                if i >= 0:
                    found.append(i)
                unique.append((k, at[0]))
            else:
                repeated.append((k, at))
        if unique:  # a repeated line is the one between the chunk's unique lines printed
            # before and after it (a chunk is whole lines in a row, its prints in file order):
            # the first after those before it, else the last before those after it
            lo, hi = min(n for _, n in unique), max(n for _, n in unique)
            for k, at in repeated:
                after = max((n for j, n in unique if j < k), default=None)
                upto = min((n for j, n in unique if j > k), default=None)
                between = [n for n in at if (after is None or n > after)
                           and (upto is None or n < upto)]  # fmt: skip
                if not between:
                    n = _nearest(at, lo, hi)  # (edited since: the order no longer holds)
                else:
                    n = min(between) if after is not None else max(between)
                i = section_of[n]
                if i >= 0:
                    found.append(i)
        entry = (tuple(found), None if unique or not repeated else tuple(a for _, a in repeated))
        self._prints[prints] = entry
        return entry

    def place(self, anchor: str | None, start: int | None, end: int | None) -> Placement:
        """The sections a hit covered (see :func:`place`)."""
        if anchor is None:
            return _by_range(self.index, start, end)
        if anchor == WHOLE_FILE:
            return Placement(frozenset(), whole_file=True)
        if ";" not in anchor:
            parts = anchor.split(":", 2)
            done = self._whole.get(parts[2]) if len(parts) == 3 else None
            if done is not None:
                return done
        section_of = self.index._section_of
        cache = self._prints
        found: set[int] = set()
        told = False  # whether any chunk had a line to tell it by
        single: str | None = None
        for piece in anchor.split(";"):
            parts = piece.split(":", 2)
            if len(parts) != 3 or not parts[2]:
                continue
            told = True
            prints = parts[2]
            entry = cache.get(prints)
            if entry is None:
                entry = self._of_prints(prints)
            sections, repeated = entry
            found.update(sections)
            if repeated is None:
                single = prints if single is None else ""
                continue
            single = ""  # (this chunk's place depends on its range)
            s_, e_ = parts[0], parts[1]
            lo = int(s_) if s_.lstrip("-").isdigit() else None
            hi = int(e_) if e_.lstrip("-").isdigit() else None
            for at in repeated:  # only lines the file has several times: nearest the range
                i = section_of[_nearest(at, lo, hi)]
                if i >= 0:
                    found.add(i)
        if not told:
            return _by_range(self.index, start, end)
        placement = Placement(frozenset(found))
        if single and ";" not in anchor:
            self._whole[single] = placement
        return placement
