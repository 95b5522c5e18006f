"""Hits per section of one memory file, and which sections OpenClaw's bootstrap cut drops (pure).

Built from the file's text as it is now, its hit rows (time, recorded line range, anchor) and,
for a bootstrap file, its cut (:mod:`memoryd.bootstrap_cut`). A hit covering several sections
counts once for each; a hit placed nowhere counts for the file as *unplaced*; a ``memory_get``
of the whole file counts for the file as a *whole-file read*. What no hit can show: a section
in the loaded part of ``MEMORY.md`` is in every new session's context and may be used without
any lookup, so "never looked up" is not "never used"; only a section the cut drops and no
lookup reached is one the agent can never have seen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from .bootstrap_cut import FileCut, js_trim_end, kept_ranges
from .section_map import FileIndex, Placer, Section, utf16_len

DAY = 86400.0
NEVER = "never looked up"
NEVER_UNSEEN = "never looked up, and not in the loaded part"
# A section's place in a new session's bootstrap context.
LOADED, PARTLY, CUT, NOT_LOADED = "loaded", "partly cut", "cut", "not loaded"


class HitRow(NamedTuple):
    ts: float
    start: int | None
    end: int | None
    anchor: str | None


class SectionUse(NamedTuple):
    section: Section
    hits_30d: int
    hits_90d: int
    hits_total: int
    last_hit: float | None
    bootstrap: str | None  # LOADED, PARTLY, CUT, NOT_LOADED; None: not a bootstrap file
    label: str | None  # NEVER, NEVER_UNSEEN, or None (looked up)


class Tally(NamedTuple):
    """The hits of the file that no section got."""

    hits_total: int
    unplaced_total: int
    unplaced_30d: int
    unplaced_90d: int
    whole_file: int  # memory_get of the whole file
    by_lines: int  # placed by the recorded line range alone (counted before anchors)
    last_unplaced: float | None


class SectionsReport(NamedTuple):
    sections: tuple[SectionUse, ...]
    tally: Tally
    chars: int  # the file's length, UTF-16 units (as OpenClaw counts)
    cut: FileCut | None
    loaded: tuple[tuple[int, int], ...]  # the loaded ranges, UTF-16 units


def _where(sec: Section, loaded: tuple[tuple[int, int], ...], cut: FileCut | None) -> str | None:
    if cut is None:
        return None
    if not cut.loaded:
        return NOT_LOADED
    # (a section's trailing blanks past the trimmed end are no text: only its text counts)
    start, end = sec.start, min(sec.end, cut.length)
    if end <= start:
        end = start + 1 if start < cut.length else start
    inside = sum(max(0, min(end, b) - max(start, a)) for a, b in loaded)
    if inside >= end - start:
        return LOADED
    return CUT if inside == 0 else PARTLY


def group_hits(
    rows: Iterable[tuple[float, int | None, int | None, str | None]], upto: float
) -> dict[tuple[str | None, int | None, int | None], list[float]]:
    """The times of the hits up to ``upto``, by what places them: (anchor, start, end).

    Many searches return the same chunk, and a hit's place depends on these three alone, so
    each distinct key is placed once (``rows``: :class:`HitRow` or plain tuples in its order,
    as the state database returns them)."""
    groups: dict[tuple[str | None, int | None, int | None], list[float]] = {}
    get = groups.get
    for ts, start, end, anchor in rows:
        if ts > upto:
            continue
        key = (anchor, start, end)
        times = get(key)
        if times is None:
            groups[key] = [ts]
        else:
            times.append(ts)
    return groups


def sections_report(
    text: str, rows: Iterable[tuple[float, int | None, int | None, str | None]], now: float,
    cut: FileCut | None = None, skew: float = DAY,
) -> SectionsReport:
    """Every section of ``text`` with its hits as of ``now`` (a hit up to ``skew`` after
    ``now`` counts, as :func:`memoryd.store.hit_counts` counts it). ``rows``: :class:`HitRow`
    or plain tuples in its order.

    (A year of hits on a 1 MB MEMORY.md is tens of thousands: the rows are grouped by what
    places them, each group placed once and its times counted in one go; docs/benchmarks.md.)"""
    index = FileIndex(text)
    n = len(index.sections)
    d30, d90, total = [0] * n, [0] * n, [0] * n
    last: list[float | None] = [None] * n
    hits = un = un30 = un90 = whole = by_lines = 0
    last_un: float | None = None
    t30, t90 = now - 30 * DAY, now - 90 * DAY
    placer = Placer(index)
    for (anchor, start, end), times in group_hits(rows, now + skew).items():
        count = len(times)
        hits += count
        p = placer.place(anchor, start, end)
        if p.by_lines:
            by_lines += count
        if p.whole_file:
            whole += count
            continue
        if count == 1:
            newest = times[0]
            c30 = 1 if newest >= t30 else 0
            c90 = 1 if newest >= t90 else 0
        else:
            newest = max(times)
            c30 = c90 = 0
            if newest >= t90:
                c90 = sum(1 for t in times if t >= t90)
                c30 = sum(1 for t in times if t >= t30) if newest >= t30 else 0
        if not p.sections:
            un += count
            un30 += c30
            un90 += c90
            last_un = newest if last_un is None or newest > last_un else last_un
            continue
        for i in p.sections:
            total[i] += count
            d30[i] += c30
            d90[i] += c90
            seen = last[i]
            if seen is None or newest > seen:
                last[i] = newest
    loaded = kept_ranges(js_trim_end(text), cut) if cut is not None else ()
    out = []
    for i, sec in enumerate(index.sections):
        where = _where(sec, loaded, cut)
        label = None
        if total[i] == 0:
            label = NEVER_UNSEEN if where in (CUT, NOT_LOADED) else NEVER
        out.append(SectionUse(sec, d30[i], d90[i], total[i], last[i], where, label))
    tally = Tally(hits, un, un30, un90, whole, by_lines, last_un)
    return SectionsReport(tuple(out), tally, utf16_len(text), cut, loaded)


def report_doc(rep: SectionsReport, iso: Any) -> dict[str, Any]:
    """The report as the ``--json`` document (``iso``: how a time is written)."""
    cut = rep.cut
    return {
        "chars": rep.chars,
        "hits": {
            "total": rep.tally.hits_total,
            "unplaced": rep.tally.unplaced_total,
            "unplaced_30d": rep.tally.unplaced_30d,
            "unplaced_90d": rep.tally.unplaced_90d,
            "last_unplaced": iso(rep.tally.last_unplaced),
            "whole_file_reads": rep.tally.whole_file,
            "placed_by_line_range": rep.tally.by_lines,
        },
        "bootstrap": None
        if cut is None
        else {
            "loaded": cut.loaded,
            "length": cut.length,
            "head": cut.head,
            "tail": cut.tail,
            "dropped": cut.dropped if cut.loaded else cut.length,
            "injected": cut.injected,
            "loaded_ranges": [list(r) for r in rep.loaded],
        },
        "sections": [
            {
                "heading": u.section.heading,
                "level": u.section.level,
                "title": u.section.title,
                "first_line": u.section.first,
                "last_line": u.section.last,
                "start": u.section.start,
                "chars": u.section.chars,
                "hits_30d": u.hits_30d,
                "hits_90d": u.hits_90d,
                "hits_total": u.hits_total,
                "last_hit": iso(u.last_hit),
                "bootstrap": u.bootstrap,
                "label": u.label,
            }
            for u in rep.sections
        ],
    }
