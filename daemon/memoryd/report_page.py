"""The reflect page: its values gathered from what reflect already has, then written.

:func:`build_page` takes reflect's snapshot (the times of every file's hits, already read
for the expire plan), its document (expire's next plan) and three small reads of its own: the
hit rows of ``MEMORY.md`` with their anchors (migration 13's covering index), the bootstrap
files (for the cut) and the journal's recent runs. :mod:`memoryd.report_html` turns them into
the page; :func:`write_page` writes it atomically beside the report
(``reports/reflect-DAY.html``). Nothing here touches a note.
"""

from __future__ import annotations

import bisect
import gc
import itertools
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any

from .bootstrap import session_cuts
from .bootstrap_cut import OPENCLAW_VERSION
from .clock import iso
from .config import Paths
from .move_journal import MoveRecord, journal_runs
from .report_html import (
    BarSection,
    Budget,
    BudgetFile,
    Entry,
    Heatmap,
    HeatRow,
    Page,
    Restored,
    RunView,
    render_page,
)
from .section_report import (
    WeeklySections,
    bootstrap_states,
    load_section_rows,
    weekly_section_hits,
)
from .store import Store

WEEKS = 26  # the heatmaps' span
FILES_SHOWN = 40  # the busiest files of the span get a row
SECTIONS_SHOWN = 80  # a MEMORY.md of more sections shows its busiest ones, in file order
RUNS_DAYS = 90  # the journal's runs listed
RUNS_SHOWN = 30
MEMORY = "MEMORY.md"


def week_starts(now: float, tz: tzinfo, weeks: int = WEEKS) -> list[float]:
    """The first instant (Monday 00:00 in ``tz``) of each of the last ``weeks`` weeks, the
    one holding ``now`` last."""
    today = datetime.fromtimestamp(now, tz).date()
    monday = today - timedelta(days=today.weekday())
    days = [monday - timedelta(weeks=k) for k in range(weeks - 1, -1, -1)]
    return [datetime.combine(d, time(0), tzinfo=tz).timestamp() for d in days]


def _day(ts: float, tz: tzinfo) -> str:
    return datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d")


def _minute(ts: float | None, tz: tzinfo) -> str:
    if ts is None:
        return "–"
    return datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d %H:%M")


def file_heat(
    hit_times: Mapping[str, Sequence[float]], listed: set[str], starts: Sequence[float],
    now: float, weeks: Sequence[str],
) -> Heatmap:
    """Hits per file per week, the busiest files of the span first (``hit_times``: path →
    the sorted times of its hits)."""
    rows = []
    for path, times in hit_times.items():
        # (each week's count by two bisections of the sorted times, not a step per hit)
        edges = [bisect.bisect_left(times, s) for s in starts]
        edges.append(bisect.bisect_right(times, now))
        counts = [b - a for a, b in itertools.pairwise(edges)]
        if any(counts):
            note = "" if path in listed else "not in the workspace now"
            rows.append(HeatRow(path, tuple(counts), note))
    rows.sort(key=lambda r: (-sum(r.counts), r.label))
    left = len(rows) - FILES_SHOWN
    silent = len(listed - {r.label for r in rows})
    parts = [f"{left:,} more files had hits in these weeks (fewer)"] if left > 0 else []
    if silent:
        parts.append(f"{silent:,} memory files had none")
    more = ", ".join(parts)
    return Heatmap(
        "files", "Use per file, by week",
        f"Hits per memory file in each of the last {len(starts)} weeks (Monday to Sunday),"
        " the busiest files first.",
        tuple(weeks), tuple(rows[:FILES_SHOWN]), more,
    )  # fmt: skip


def section_heat(
    weekly: WeeklySections, weeks: Sequence[str], states: Sequence[str | None]
) -> Heatmap:
    """Hits per section of MEMORY.md per week, in file order (the busiest ones past
    :data:`SECTIONS_SHOWN`), and the hits no section got."""
    out = [
        HeatRow(sec.title, counts, "" if state in (None, "loaded") else str(state))
        for sec, counts, state in zip(weekly.sections, weekly.counts, states, strict=True)
    ]
    more = ""
    if len(out) > SECTIONS_SHOWN:
        busiest = sorted(range(len(out)), key=lambda i: (-sum(out[i].counts), i))
        keep = sorted(busiest[:SECTIONS_SHOWN])
        silent = sum(1 for i in busiest[SECTIONS_SHOWN:] if not any(out[i].counts))
        more = (
            f"{len(out) - SECTIONS_SHOWN:,} more sections, the least used ({silent:,} of them "
            "not looked up in these weeks): memoryd sections MEMORY.md lists all."
        )
        out = [out[i] for i in keep]
    if any(weekly.unplaced):
        out.append(HeatRow("(unplaced: text no longer in the file)", weekly.unplaced))
    if any(weekly.whole_file):
        out.append(HeatRow("(whole-file reads)", weekly.whole_file))
    return Heatmap(
        "sections", "Use per section of MEMORY.md, by week",
        "Hits per section (a heading and its entries), credited by the text each search "
        "returned, wherever edits moved it since; beside a title, where the bootstrap cut "
        "leaves it.", tuple(weeks), tuple(out), more,
    )  # fmt: skip


def _rel(path: str | None, roots: Sequence[Path]) -> str | None:
    if path is None:
        return None
    for root in roots:
        if Path(path).is_relative_to(root):
            return os.path.relpath(path, root)
    return path


def run_views(
    runs: Sequence[Any], tz: tzinfo, roots: Sequence[Path]
) -> tuple[RunView, ...]:
    """The journal's runs as the page lists them (paths relative to the workspace)."""
    out = []
    for run in runs:
        entries = tuple(
            Entry(e.op, _rel(e.src, roots) or "", _rel(e.dst, roots), e.reason, e.state)
            for e in run.entries
        )
        back = []
        for entry, undo in run.restored:
            put: MoveRecord = undo
            back.append(Restored(_rel(put.dst or entry.src, roots) or "",
                                 _minute(put.finished or put.created, tz), put.batch))  # fmt: skip
        out.append(RunView(run.batch, _minute(run.started, tz), entries, tuple(back)))
    return tuple(out)


def build_page(
    paths: Paths, store: Store, snap: Any, doc: Mapping[str, Any], now: float
) -> Page:
    """The page's values (``snap``: reflect's :class:`memoryd.signals.Snapshot`; ``doc``: its
    report document). The cyclic garbage collector is paused meanwhile: the many small
    tuples read hold no cycles, and each pass would walk them all (docs/benchmarks.md)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build_page(paths, store, snap, doc, now)
    finally:
        if collecting:
            gc.enable()


def _build_page(
    paths: Paths, store: Store, snap: Any, doc: Mapping[str, Any], now: float
) -> Page:
    tz = snap.tz
    starts = week_starts(now, tz)
    weeks = [_day(s, tz) for s in starts]
    listed = {s.path for s in snap.signals}
    heatmaps = [file_heat(snap.times_by_path(), listed, starts, now, weeks)]
    ws = paths.workspace
    got = session_cuts(paths.openclaw, paths.agent_of(ws), ws)
    text = got.texts.get(MEMORY)
    files = tuple(
        BudgetFile(c.name, c.length, c.head, c.tail, c.injected, c.loaded, c.unreadable, c.never)
        for c in got.cuts.values()
    )
    memory_cut = got.cuts.get(MEMORY)
    bars: tuple[BarSection, ...] = ()
    if text is not None:
        rows = load_section_rows(store.conn, MEMORY, snap.agents)
        weekly = weekly_section_hits(text, rows, starts, now)
        states = bootstrap_states(text, weekly.sections, memory_cut)
        heatmaps.append(section_heat(weekly, weeks, states))
        bars = tuple(
            BarSection(sec.title, sec.start, sec.end, state or "loaded", total)
            for sec, state, total in zip(weekly.sections, states, weekly.totals, strict=True)
        )
    mem = next((f for f in files if f.name == MEMORY), None)
    budget = Budget(got.file_max, got.total_max, f"OpenClaw {OPENCLAW_VERSION}", files,
                    mem if text is not None else None, bars)  # fmt: skip
    roots = [ws, ws.parent]
    since = now - RUNS_DAYS * 86400.0
    runs = run_views(journal_runs(store, since, RUNS_SHOWN), tz, roots)
    nxt = tuple(
        (a["path"], a.get("to", ""), a.get("reason", "")) for a in doc["expire_next"]["archive"]
    )
    summary = (f"{doc['files']:,} memory files, {doc['hits_30d']:,} hits in the last 30 days.")
    return Page(iso(now) or "", str(ws), summary, tuple(heatmaps), budget, runs,
                _day(since, tz), nxt)  # fmt: skip


def write_page(folder: Path, name: str, page: Page) -> Path:
    """Write ``name``.html atomically (:func:`memoryd.fsutil.write_atomic`)."""
    from .fsutil import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.html"
    # (a name from a transcript may hold a lone surrogate: shown as "?", never a crash)
    write_atomic(path, render_page(page).encode("utf-8", "replace"))
    return path
