"""Which sections of a memory file to retire into the archive, and what the file and its
archive hold after (pure: a function of the file's text, each section's use, the budget and
the user's pins).

The file must fit ``budget`` characters (UTF-16 units after its trailing blanks, as OpenClaw
measures a bootstrap file). Sections go least used first, only as many as it takes to fit;
some are never taken (:data:`KEEP_REASONS`): pinned, dreaming's (its managed blocks, its
markers, a promotion's lines: dreaming may rewrite them), looked up within ``min_idle_days``,
and the file's title. The order and those rules are docs/sections.md's ("Retiring stale
sections"). Sections are the flat units of :mod:`memoryd.section_map`.

Also here, because it is the inverse: :func:`put_back`, the text of a file with its retired
sections back when the file was edited since (``restore --last``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from ..bootstrap_cut import js_trim_end
from ..section_map import TOP, Section, parse_sections, utf16_len
from . import glob_matches

DAY = 86400.0
PIN_MARK = "<!-- memoryd:pin -->"
# dreaming's managed blocks (headings it owns) and the markers of what it wrote
DREAMING_HEADINGS = frozenset(
    {"Light Sleep", "REM Sleep", "Deep Sleep", "Memory Consolidation History"}
)
_DREAMING_LINE = re.compile(
    r"<!--\s*(?:openclaw:dreaming:|openclaw-memory-(?:promotion|lineage):|trigger:|importance:\s*\d)"
)
# why a section stays, however little it is used
PINNED, DREAMING, RECENT, TITLE = "pinned", "dreaming", "looked up lately", "title"
KEEP_REASONS = (PINNED, DREAMING, RECENT, TITLE)


class Use(NamedTuple):
    """What the evidence says of one section (from :mod:`memoryd.section_report`)."""

    section: Section
    hits_30d: int
    hits_90d: int
    hits_total: int
    last_hit: float | None
    hidden: bool  # wholly in the part OpenClaw's bootstrap cut drops (or the file not loaded)


class Taken(NamedTuple):
    """One section the plan retires: where its text is in the file the plan read."""

    title: str
    first_line: int
    last_line: int
    begin: int  # Python string offsets of its text in the file
    end: int
    chars: int  # UTF-16 units, as OpenClaw counts
    hits_90d: int
    hits_total: int
    last_hit: float | None


class RetirePlan(NamedTuple):
    taken: tuple[Taken, ...]  # in file order
    kept: tuple[tuple[str, str], ...]  # (title, reason) of the sections never taken
    new_text: str  # the file without them
    chars_before: int  # measured as the budget is (trailing blanks trimmed)
    chars_after: int
    budget: int

    @property
    def fits(self) -> bool:
        return self.chars_after <= self.budget




def measured(text: str) -> int:
    """A file's length as OpenClaw measures a bootstrap file: trailing blanks trimmed (JS
    ``trimEnd``), UTF-16 units."""
    return utf16_len(js_trim_end(text))


def line_offsets(text: str) -> list[int]:
    """Where each line starts (index 0 is line 1), and the text's length at the end."""
    out = [0]
    at = text.find("\n")
    while at >= 0:
        out.append(at + 1)
        at = text.find("\n", at + 1)
    out.append(len(text))
    return out


def section_text_span(offsets: Sequence[int], sec: Section) -> tuple[int, int]:
    """The Python offsets of ``sec``'s lines, its line break included."""
    n = len(offsets) - 1
    return offsets[min(sec.first - 1, n)], offsets[min(sec.last, n)]


def pinned_headings(file_rel: str, pins: Iterable[str]) -> list[str]:
    """The heading globs of the pins ``FILE#HEADING`` that name ``file_rel``."""
    out = []
    for pin in pins:
        path, sep, heading = pin.partition("#")
        if sep and heading and glob_matches(file_rel, path):
            out.append(heading.strip())
    return out


def heading_matches(heading: str, glob: str) -> bool:
    """Whether a section's ``heading`` is the one a section pin's heading ``glob`` names: as
    written (``[WIP] launch``, brackets and all), or as a glob (``Project *``); case counts."""
    return heading == glob or fnmatch.fnmatchcase(heading, glob)


def dreaming_marked(body: str) -> bool:
    """Whether a section's text carries one of dreaming's markers."""
    return bool(_DREAMING_LINE.search(body))


def why_kept(sec: Section, body: str, heading_pins: Sequence[str], recent: bool) -> str | None:
    """Why ``sec`` is never retired (a :data:`KEEP_REASONS` entry), or None."""
    if PIN_MARK in body or any(heading_matches(sec.heading, g) for g in heading_pins):
        return PINNED
    if sec.heading in DREAMING_HEADINGS or _DREAMING_LINE.search(body):
        return DREAMING
    if sec.level <= 1 or sec.heading == TOP:
        return TITLE
    if recent:
        return RECENT
    return None


def _order(u: Use) -> tuple[int, int, int, float, int, int]:
    """Least used first; among equals, one the cut hides, then the earlier one in the file
    (a section just written, with no evidence yet, is most often at the end)."""
    return (
        u.hits_90d,
        u.hits_30d,
        u.hits_total,
        u.last_hit if u.last_hit is not None else float("-inf"),
        0 if u.hidden else 1,
        u.section.first,
    )


def plan_retire(
    text: str,
    uses: Sequence[Use],
    budget: int,
    now: float,
    *,
    heading_pins: Sequence[str] = (),
    min_idle_days: float = 30.0,
) -> RetirePlan:
    """The sections of ``text`` to retire so that it fits ``budget``, least used first.
    ``uses``: every section as :func:`memoryd.section_map.parse_sections` finds it, in order.
    A file that cannot be brought under its budget loses every section that may go, and the
    plan says it does not fit."""
    before = measured(text)
    offsets = line_offsets(text)
    idle_since = now - min_idle_days * DAY
    kept: list[tuple[str, str]] = []
    free: list[tuple[Use, int, int]] = []
    for u in uses:
        begin, end = section_text_span(offsets, u.section)
        recent = u.last_hit is not None and u.last_hit >= idle_since
        reason = why_kept(u.section, text[begin:end], heading_pins, recent)
        if reason is not None:
            kept.append((u.section.title, reason))
        else:
            free.append((u, begin, end))
    chosen: list[tuple[Use, int, int]] = []
    if before > budget:
        # (counted whole: the trailing blanks OpenClaw trims can only make the file shorter)
        full = utf16_len(text)
        for item in sorted(free, key=lambda f: _order(f[0])):
            chosen.append(item)
            full -= item[0].section.chars  # (its lines' UTF-16 length, line break included)
            if full <= budget:
                break
    chosen.sort(key=lambda c: c[1])
    taken = tuple(
        Taken(
            u.section.title,
            u.section.first,
            u.section.last,
            b,
            e,
            u.section.chars,
            u.hits_90d,
            u.hits_total,
            u.last_hit,
        )
        for u, b, e in chosen
    )
    new_text = cut_spans(text, [(t.begin, t.end) for t in taken])
    return RetirePlan(taken, tuple(kept), new_text, before, measured(new_text), budget)


def cut_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` without the (disjoint) spans."""
    out, at = [], 0
    for b, e in sorted(spans):
        out.append(text[at:b])
        at = e
    out.append(text[at:])
    return "".join(out)


def archive_entry(source: str, when: str, batch: str, text: str, taken: Sequence[Taken]) -> str:
    """What a retire adds to the source's archive file: each section as it was, under a line
    saying where it came from and when (an HTML comment, so the Markdown reads as before)."""
    parts = []
    for t in taken:
        body = text[t.begin : t.end]
        if not body.endswith("\n"):
            body += "\n"
        parts.append(
            f"<!-- memoryd retired from {source} lines {t.first_line}-{t.last_line} "
            f"on {when} ({batch}) -->\n{body}\n"
        )
    return "".join(parts)


def archive_header(source: str) -> str:
    """The first line of a new archive file."""
    return f"# Sections of {source} retired by memoryd\n\n"


def put_back(current: str, original: str, spans: Sequence[tuple[int, int]]) -> str:
    """``current`` (the file edited since the retire) with each retired section of
    ``original`` (its ``spans``) back where it was: right after the section that preceded it
    in ``original``, found in ``current`` by its heading line; else before the section that
    followed it; else at the end. A section ``current`` holds already (put back by hand) is
    not added twice; nothing of ``current`` is removed or changed."""
    secs = parse_sections(original)
    offsets = line_offsets(original)
    where = [section_text_span(offsets, s) for s in secs]
    out = current
    for b, e in sorted(spans):
        body = original[b:e]
        if not body.strip() or f"\n{body.rstrip(chr(10))}\n" in f"\n{out}\n":
            continue  # (there already, as whole lines)
        i = next((k for k, (sb, _se) in enumerate(where) if sb == b), None)
        pos = None
        if i is not None:  # the nearest section before it that is there, else after it
            pos = next(
                (
                    p
                    for k in range(i - 1, -1, -1)
                    if (p := _after_heading(out, secs[k])) is not None
                ),
                None,
            )
            if pos is None:
                pos = next(
                    (
                        p
                        for k in range(i + 1, len(secs))
                        if (p := _at_heading(out, secs[k])) is not None
                    ),
                    None,
                )
        if pos is None:
            pos = 0 if i == 0 else len(out)
        if pos > 0 and not out[:pos].endswith("\n"):
            body = "\n" + body
        if not body.endswith("\n") and pos < len(out):
            body += "\n"
        out = out[:pos] + body + out[pos:]
    return out


def _heading_index(text: str, sec: Section) -> tuple[tuple[Section, ...], int] | None:
    """The sections of ``text`` and the index of the one with ``sec``'s heading (the only
    one: a heading the file has twice says nothing of where)."""
    now = parse_sections(text)
    found = [k for k, s in enumerate(now) if s.title == sec.title]
    return (now, found[0]) if len(found) == 1 else None


def _after_heading(text: str, sec: Section) -> int | None:
    """Where the section titled as ``sec`` ends in ``text`` (None: not there once)."""
    got = _heading_index(text, sec)
    if got is None:
        return None
    now, k = got
    return section_text_span(line_offsets(text), now[k])[1]


def _at_heading(text: str, sec: Section) -> int | None:
    """Where the section titled as ``sec`` begins in ``text`` (None: not there once)."""
    got = _heading_index(text, sec)
    if got is None or sec.level == 0:
        return None
    now, k = got
    return section_text_span(line_offsets(text), now[k])[0]
