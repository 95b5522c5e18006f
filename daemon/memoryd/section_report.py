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

import bisect
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .bootstrap_cut import FileCut, js_trim_end, kept_ranges
from .section_map import FileIndex, Placer, Section, utf16_len

if TYPE_CHECKING:
    import sqlite3

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
    chars: int  # the text a bootstrap counts (trimmed at its end), UTF-16 units, as OpenClaw
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
    """The times of the hits up to ``upto``, by what places them: (anchor, start, end), so
    each distinct key is placed once (``rows``: :class:`HitRow` or plain tuples in its
    order)."""
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


# One group of a file's hits: (anchor, start, end, hits, of them in 30 days, in 90 days, the
# newest one's time), the hits up to ``now`` + skew that share what places them.
HitGroup = tuple[str | None, int | None, int | None, int, int, int, float]


def count_groups(
    rows: Iterable[tuple[float, int | None, int | None, str | None]], now: float,
    skew: float = DAY,
) -> list[HitGroup]:
    """The hit rows grouped by what places them, each group's counts taken (what
    :func:`load_section_groups` has SQLite do)."""
    t30, t90 = now - 30 * DAY, now - 90 * DAY
    out: list[HitGroup] = []
    for (anchor, start, end), times in group_hits(rows, now + skew).items():
        count = len(times)
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
        out.append((anchor, start, end, count, c30, c90, newest))
    return out


def sections_report(
    text: str, rows: Iterable[tuple[float, int | None, int | None, str | None]], now: float,
    cut: FileCut | None = None, skew: float = DAY,
) -> SectionsReport:
    """Every section of ``text`` with its hits as of ``now`` (a hit up to ``skew`` after
    ``now`` counts, as :func:`memoryd.hit_counts.hit_counts` counts it). ``rows``: :class:`HitRow`
    or plain tuples in its order; grouped by what places them, each group placed once."""
    return report_of_groups(text, count_groups(rows, now, skew), cut)


def report_of_groups(
    text: str, groups: Iterable[HitGroup], cut: FileCut | None = None
) -> SectionsReport:
    """:func:`sections_report` of hits already grouped and counted (:func:`count_groups`,
    :func:`load_section_groups`): each group placed once, its counts added to its sections."""
    index = FileIndex(text)
    n = len(index.sections)
    d30, d90, total = [0] * n, [0] * n, [0] * n
    last: list[float | None] = [None] * n
    hits = un = un30 = un90 = whole = by_lines = 0
    last_un: float | None = None
    placer = Placer(index)
    for anchor, start, end, count, c30, c90, newest in groups:
        hits += count
        p = placer.place(anchor, start, end)
        if p.by_lines:
            by_lines += count
        if p.whole_file:
            whole += count
            continue
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
    return SectionsReport(tuple(out), tally, utf16_len(js_trim_end(text)), cut, loaded)


def _anchor_column(conn: sqlite3.Connection) -> str:
    """``anchor``, or ``NULL`` in a state database from before migration 11 (a read-only open
    of an older one): its hits are placed by their line ranges, as old hits are."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(hits)")}
    return "anchor" if "anchor" in columns else "NULL"


def load_section_groups(
    conn: sqlite3.Connection, rel: str, agents: Sequence[str] | None, now: float,
    skew: float = DAY,
) -> list[HitGroup]:
    """:func:`count_groups` of the hits of ``rel`` (``agents``: theirs only), done by SQLite
    in one walk of migration 13's index (no table, no sort). Raises :class:`sqlite3.Error`
    as the query does."""
    anchor = _anchor_column(conn)
    t30, t90 = now - 30 * DAY, now - 90 * DAY
    sql = (
        f"SELECT {anchor}, start_line, end_line, COUNT(*), SUM(ts >= ?), SUM(ts >= ?), MAX(ts) "
        "FROM hits WHERE memory_path = ? AND ts <= ?"
    )
    params: list[object] = [t30, t90, rel, now + skew]
    if agents is not None:
        sql += f" AND agent IN ({','.join('?' * len(agents))})"
        params += list(agents)
    sql += f" GROUP BY {anchor}, start_line, end_line"
    return conn.execute(sql, params).fetchall()


def load_section_rows(
    conn: sqlite3.Connection, rel: str, agents: Sequence[str] | None = None
) -> list[tuple[float, int | None, int | None, str | None]]:
    """(ts, start, end, anchor) of every hit of ``rel`` (``agents``: theirs only), in
    :class:`HitRow`'s order, as plain tuples. A database from before migration 11 has no
    anchors: its hits are placed by their line ranges. Raises :class:`sqlite3.Error` as the
    query does."""
    anchor = _anchor_column(conn)
    sql = f"SELECT ts, start_line, end_line, {anchor} FROM hits WHERE memory_path = ?"
    params: list[str] = [rel]
    if agents is not None:
        sql += f" AND agent IN ({','.join('?' * len(agents))})"
        params += list(agents)
    return conn.execute(sql, params).fetchall()


class WeeklySections(NamedTuple):
    """Hits per section of a file in consecutive periods (the reflect page's heatmap)."""

    sections: tuple[Section, ...]
    counts: tuple[tuple[int, ...], ...]  # per section, per period (oldest first)
    unplaced: tuple[int, ...]  # per period: hits whose text is no longer in the file
    whole_file: tuple[int, ...]  # per period: memory_get of the whole file
    totals: tuple[int, ...]  # per section: all its hits up to the end, in a period or before


def weekly_section_hits(
    text: str,
    rows: Iterable[tuple[float, int | None, int | None, str | None]],
    starts: Sequence[float],
    end: float,
) -> WeeklySections:
    """Each section's hits in the periods ``[starts[k], starts[k + 1])``, the last one ending
    at ``end`` (``starts`` ascending), placed as :func:`sections_report` places them."""
    index = FileIndex(text)
    periods = len(starts)
    counts = [[0] * periods for _ in index.sections]
    unplaced, whole = [0] * periods, [0] * periods
    totals = [0] * len(index.sections)
    first = starts[0] if starts else end
    placer = Placer(index)
    for (anchor, start, stop), times in group_hits(rows, end).items():
        p = placer.place(anchor, start, stop)
        for i in p.sections:
            totals[i] += len(times)
        if len(times) == 1:  # (most groups: one hit)
            if times[0] < first:
                continue
            ks = [bisect.bisect_right(starts, times[0]) - 1]
        else:
            ks = [bisect.bisect_right(starts, t) - 1 for t in times if t >= first]
            if not ks:
                continue
        targets = [whole] if p.whole_file else [counts[i] for i in p.sections] or [unplaced]
        for k in ks:
            for row in targets:
                row[k] += 1
    return WeeklySections(
        index.sections, tuple(tuple(c) for c in counts), tuple(unplaced), tuple(whole),
        tuple(totals),
    )


def bootstrap_states(
    text: str, sections: Sequence[Section], cut: FileCut | None
) -> list[str | None]:
    """Where each of ``sections`` (of ``text``) lies in a new session's bootstrap context, as
    :func:`sections_report` says it (None for each when ``cut`` is None: no bootstrap file)."""
    loaded = kept_ranges(js_trim_end(text), cut) if cut is not None else ()
    return [_where(sec, loaded, cut) for sec in sections]


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
            "unreadable": cut.unreadable,
            "context_injection_never": cut.never,
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
