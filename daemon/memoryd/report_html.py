"""The reflect page as HTML: one self-contained file, plain values in, text out (pure).

What it shows (docs/report-page.md): a heatmap of hits per file and per section of
``MEMORY.md`` over the weeks, OpenClaw's bootstrap budget (what a new session gets of each
bootstrap file, where ``MEMORY.md`` is cut and which sections lie in the cut), and what the
journaled runs (expire, organize, recalls, any later command's) decided and what was put
back since.

Self-contained: inline CSS and SVG, no script, no font, no image, no link to anything; a
Content-Security-Policy in the page itself forbids loading anything even if a browser were
asked to. Every string that comes from the user's notes (file names, headings, paths in the
journal, reasons) is data: it goes through :func:`esc` wherever it lands, text or attribute,
so a hostile file name shows as its text and never becomes markup.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import NamedTuple

# Heat levels: no hit, then four steps up to the busiest cell of the map.
HEAT_COLOURS = ("#ebedf0", "#c6e48b", "#7bc96f", "#239a3b", "#196127")
LOADED_COLOUR = "#3b7dd8"  # the part of a bootstrap file a new session gets
CUT_COLOUR = "#d1495b"  # the part OpenClaw drops
PARTLY_COLOUR = "#edae49"
FREE_COLOUR = "#e3e6ea"  # budget left unused
FILE_COLOURS = ("#5b8def", "#7aa6f2", "#98bdf5", "#b6d3f8", "#8f9fd9", "#a7b3e2")
ENTRIES_SHOWN = 60  # a run's entries listed; past that "and N more"
CUT_LISTED = 200  # sections of the cut part listed by name
TICKS_MAX = 200  # section boundaries drawn on the MEMORY.md bar (past that the bar is all ticks)


def esc(value: object) -> str:
    """Text safe as HTML text or inside a double-quoted attribute."""
    return html.escape(str(value), quote=True)


class HeatRow(NamedTuple):
    label: str  # a file's path or a section's title
    counts: tuple[int, ...]  # hits per week, oldest first
    note: str = ""  # shown beside the label ("cut", "not in the workspace now")


class Heatmap(NamedTuple):
    key: str  # the section's id in the page ("files", "sections")
    title: str
    caption: str
    weeks: tuple[str, ...]  # each week's first day, YYYY-MM-DD
    rows: tuple[HeatRow, ...]
    more: str = ""  # what was left out, in words


class BudgetFile(NamedTuple):
    name: str
    length: int  # characters (UTF-16 units) after trailing blanks
    head: int
    tail: int
    injected: int  # of the total budget
    loaded: bool
    unreadable: bool = False  # over OpenClaw's read bound (memoryd.bootstrap.OPENCLAW_READ_MAX)
    never: bool = False  # contextInjection "never"


class BarSection(NamedTuple):
    title: str
    start: int  # UTF-16 units in the file
    end: int
    state: str  # loaded, partly cut, cut, not loaded
    hits: int  # all-time hits (0: never looked up)


class Budget(NamedTuple):
    file_max: int
    total_max: int
    rules_of: str  # "OpenClaw 2026.9.6"
    files: tuple[BudgetFile, ...]  # in prompt order
    memory: BudgetFile | None
    sections: tuple[BarSection, ...]  # MEMORY.md's


class Entry(NamedTuple):
    op: str
    src: str
    dst: str | None
    reason: str | None
    state: str


class Restored(NamedTuple):
    path: str  # where the note is back
    when: str
    by: str  # the batch of the undo


class RunView(NamedTuple):
    batch: str
    when: str
    entries: tuple[Entry, ...]
    restored: tuple[Restored, ...]


class Page(NamedTuple):
    generated: str
    workspace: str
    summary: str
    heatmaps: tuple[Heatmap, ...]
    budget: Budget | None
    runs: tuple[RunView, ...]
    runs_since: str  # the first day the runs listed cover
    next_archive: tuple[tuple[str, str, str], ...]  # (path, to, why) of expire's next run


def level(count: int, top: int) -> int:
    """A cell's heat level, 0 (no hit) to 4 (the busiest cells of the map)."""
    if count <= 0 or top <= 0:
        return 0
    return min(4, 1 + (4 * count - 1) // top)


def _heatmap(hm: Heatmap) -> str:
    top = max((c for r in hm.rows for c in r.counts), default=0)
    head = "".join(
        f'<th class="wk" title="week of {esc(w)}">{esc(w[5:]) if i % 4 == 0 else ""}</th>'
        for i, w in enumerate(hm.weeks)
    )
    body = []
    for row in hm.rows:
        cells = []
        for w, n in zip(hm.weeks, row.counts, strict=True):
            # (a tooltip on the cells with hits only: a page of 100 rows stays small)
            word = "hit" if n == 1 else "hits"
            tip = f' title="week of {esc(w)}: {n} {word}"' if n else ""
            cells.append(
                f'<td class="l{level(n, top)}" data-hits="{n}" data-week="{esc(w)}"{tip}></td>'
            )
        note = f' <span class="note">{esc(row.note)}</span>' if row.note else ""
        total = sum(row.counts)
        body.append(
            f'<tr data-label="{esc(row.label)}"><th scope="row" title="{esc(row.label)}">'
            f'<span class="name">{esc(row.label)}</span>{note}</th>{"".join(cells)}'
            f'<td class="sum">{total}</td></tr>'
        )
    rows = "".join(body) or (
        f'<tr><td class="empty" colspan="{len(hm.weeks) + 2}">no hits in these weeks</td></tr>'
    )
    legend = "".join(f'<i class="l{i}"></i>' for i in range(5))
    more = f'<p class="more">{esc(hm.more)}</p>' if hm.more else ""
    return (
        f'<section id="heat-{esc(hm.key)}"><h2>{esc(hm.title)}</h2>'
        f'<p class="cap">{esc(hm.caption)} <span class="legend">fewer {legend} more '
        f"(busiest cell: {top})</span></p>"
        f'<div class="scroll"><table class="heat"><thead><tr><th></th>{head}'
        f'<th class="sum">total</th></tr></thead><tbody>{rows}</tbody></table></div>{more}'
        "</section>"
    )


def _rect(x: float, w: float, y: int, h: int, fill: str, title: str, cls: str) -> str:
    return (
        f'<rect class="{cls}" x="{x:.2f}" y="{y}" width="{max(w, 0.0):.2f}" height="{h}" '
        f'fill="{fill}"><title>{esc(title)}</title></rect>'
    )


_STATE_COLOUR = {"loaded": LOADED_COLOUR, "partly cut": PARTLY_COLOUR, "cut": CUT_COLOUR,
                 "not loaded": CUT_COLOUR}  # fmt: skip


def _budget(b: Budget) -> str:
    width = 1000.0
    used = sum(f.injected for f in b.files if f.loaded)
    scale = width / max(b.total_max, used, 1)
    parts, x = [], 0.0
    legend = []
    for i, f in enumerate(f for f in b.files if f.loaded and f.injected):
        colour = FILE_COLOURS[i % len(FILE_COLOURS)]
        w = f.injected * scale
        parts.append(_rect(x, w, 0, 28, colour, f"{f.name}: {f.injected:,} characters", "file"))
        legend.append(
            f'<li><i style="background:{colour}"></i>{esc(f.name)} {f.injected:,}'
            + (f" of {f.length:,} (cut)" if f.head + f.tail < f.length else "")
            + "</li>"
        )
        x += w
    if x < width:
        parts.append(_rect(x, width - x, 0, 28, FREE_COLOUR, "unused budget", "free"))
    total_bar = (
        f'<svg class="bar" id="bar-total" viewBox="0 0 {width:.0f} 28" preserveAspectRatio="none"'
        f' role="img" aria-label="bootstrap budget">{"".join(parts)}</svg>'
    )
    out = [
        '<section id="budget"><h2>Bootstrap budget</h2>',
        f'<p class="cap">What a new main session gets of each bootstrap file ({esc(b.rules_of)}'
        f" rules; bootstrapMaxChars {b.file_max:,}, bootstrapTotalMaxChars {b.total_max:,}):"
        f" {used:,} of {b.total_max:,} characters.</p>",
        total_bar,
        f'<ul class="keys">{"".join(legend)}</ul>',
    ]
    m = b.memory
    if m is not None:
        out.append(_memory_bar(m, b.sections, width))
    out.append("</section>")
    return "".join(out)


def _memory_bar(m: BudgetFile, sections: Sequence[BarSection], width: float) -> str:
    scale = width / max(m.length, 1)
    parts = []
    if not m.loaded:
        parts.append(_rect(0, width, 0, 40, CUT_COLOUR, "MEMORY.md: not loaded at all", "cut"))
        words = (
            'not loaded at all: contextInjection is "never", no session gets a bootstrap file.'
            if m.never
            else "not loaded at all: OpenClaw reads no bootstrap file over 2 MiB; a session "
            "gets one [UNREADABLE] line instead."
            if m.unreadable
            else "not loaded at all: the files before it take the whole total budget."
        )
    else:
        cut_from, cut_to = m.head, m.length - m.tail
        parts.append(_rect(0, m.head * scale, 0, 40, LOADED_COLOUR,
                           f"loaded: the first {m.head:,} characters", "loaded"))  # fmt: skip
        if cut_to > cut_from:
            parts.append(_rect(cut_from * scale, (cut_to - cut_from) * scale, 0, 40, CUT_COLOUR,
                               f"cut: {cut_to - cut_from:,} characters", "cut"))  # fmt: skip
            parts.append(_rect(cut_to * scale, m.tail * scale, 0, 40, LOADED_COLOUR,
                               f"loaded: the last {m.tail:,} characters", "loaded"))  # fmt: skip
            words = (f"a new session gets the first {m.head:,} and the last {m.tail:,} "
                     f"characters; {cut_to - cut_from:,} in between are cut.")  # fmt: skip
        else:
            words = "loaded whole in every new session."
    if len(sections) <= TICKS_MAX:
        for s in sections:
            x, w = s.start * scale, max((s.end - s.start) * scale, 0)
            parts.append(
                f'<rect class="section" x="{x:.2f}" y="40" width="{w:.2f}"'
                f' height="12" fill="{_STATE_COLOUR.get(s.state, FREE_COLOUR)}" stroke="#fff"'
                f' stroke-width="1"><title>{esc(s.title)}: {s.end - s.start:,} characters, '
                f"{esc(s.state)}, {s.hits} hits</title></rect>"
            )
    cut = [s for s in sections if s.state in ("cut", "not loaded")]
    partly = [s for s in sections if s.state == "partly cut"]
    items = "".join(
        f'<li data-state="{esc(s.state)}"><span class="name">{esc(s.title)}</span> '
        f"{s.end - s.start:,} characters, "
        + ("never looked up: the agent has never seen it" if s.hits == 0 else f"{s.hits} hits")
        + "</li>"
        for s in [*partly, *cut][:CUT_LISTED]
    )
    more = len(partly) + len(cut) - CUT_LISTED
    listed = (
        f'<ul class="cutlist">{items}</ul>'
        + (f'<p class="more">and {more:,} more</p>' if more > 0 else "")
        if items
        else "<p>No section lies in the cut part.</p>"
    )
    height = 52 if len(sections) <= TICKS_MAX else 40
    return (
        f'<h3>MEMORY.md: {m.length:,} characters</h3><p class="cap">{esc(words)} '
        f"{len(cut)} sections wholly cut, {len(partly)} partly.</p>"
        f'<svg class="bar" id="bar-memory" viewBox="0 0 {width:.0f} {height}"'
        f' preserveAspectRatio="none" role="img" aria-label="MEMORY.md loaded and cut">'
        f'{"".join(parts)}</svg><ul class="keys"><li><i style="background:{LOADED_COLOUR}"></i>'
        f'loaded</li><li><i style="background:{CUT_COLOUR}"></i>cut</li>'
        f'<li><i style="background:{PARTLY_COLOUR}"></i>partly cut</li></ul>'
        f"<h4>Sections a new session does not get (all or part)</h4>{listed}"
    )


def _runs(page: Page) -> str:
    out = [
        '<section id="runs"><h2>What the runs decided, and what came back</h2>',
        f'<p class="cap">Every journaled run since {esc(page.runs_since)}, newest first; a '
        "note put back since (<code>memoryd restore</code>, a restore on demand) is listed under"
        " the run that moved it.</p>",
    ]
    if not page.runs:
        out.append('<p class="empty">No run moved a note in this time.</p>')
    for run in page.runs:
        counts: dict[str, int] = {}
        for e in run.entries:
            counts[f"{e.op} {e.state}"] = counts.get(f"{e.op} {e.state}", 0) + 1
        said = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        rows = "".join(
            f'<tr class="entry" data-state="{esc(e.state)}"><td>{esc(e.op)}</td>'
            f'<td class="path">{esc(e.src)}</td><td class="path">{esc(e.dst or "–")}</td>'
            f"<td>{esc(e.reason or '')}</td><td>{esc(e.state)}</td></tr>"
            for e in run.entries[:ENTRIES_SHOWN]
        )
        more = len(run.entries) - ENTRIES_SHOWN
        if more > 0:
            rows += f'<tr><td colspan="5" class="more">and {more:,} more</td></tr>'
        back = "".join(
            f'<li class="restored"><span class="path">{esc(r.path)}</span> back on '
            f"{esc(r.when)} by <code>{esc(r.by)}</code></li>"
            for r in run.restored
        )
        out.append(
            f'<article class="run" data-batch="{esc(run.batch)}"><h3><code>{esc(run.batch)}'
            f'</code> <span class="when">{esc(run.when)}</span></h3><p>{esc(said)}; '
            f"{len(run.restored)} restored since.</p>"
            f'<table class="entries"><thead><tr><th>op</th><th>from</th><th>to</th>'
            f"<th>why</th><th>state</th></tr></thead><tbody>{rows}</tbody></table>"
            + (f'<ul class="back">{back}</ul>' if back else "")
            + "</article>"
        )
    nxt = "".join(
        f'<tr class="next"><td class="path">{esc(p)}</td><td class="path">{esc(t)}</td>'
        f"<td>{esc(w)}</td></tr>"
        for p, t, w in page.next_archive[:ENTRIES_SHOWN]
    )
    out.append(
        f"<h3>What expire would archive at its next run ({len(page.next_archive)})</h3>"
        + (
            f'<table class="entries"><thead><tr><th>file</th><th>to</th><th>why</th></tr>'
            f"</thead><tbody>{nxt}</tbody></table>"
            if nxt
            else "<p>Nothing.</p>"
        )
    )
    out.append("</section>")
    return "".join(out)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1f2328;margin:24px;
max-width:1180px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 4px}h3{font-size:15px;
margin:16px 0 4px}h4{font-size:14px;margin:12px 0 4px}
.cap,.more{color:#57606a;margin:2px 0 8px}.scroll{overflow-x:auto}
table.heat{border-collapse:separate;border-spacing:2px}
table.heat th[scope=row]{text-align:left;font-weight:400;max-width:340px;overflow:hidden;
text-overflow:ellipsis;white-space:nowrap;padding-right:8px}
table.heat td{width:13px;height:13px;padding:0;border-radius:2px}
table.heat th.wk{font-weight:400;font-size:11px;color:#57606a;text-align:left;width:13px;
white-space:nowrap;overflow:visible;max-width:13px}
table.heat td.sum,table.heat th.sum{width:auto;padding-left:8px;color:#57606a;font-size:12px}
.l0{background:#ebedf0}.l1{background:#c6e48b}.l2{background:#7bc96f}.l3{background:#239a3b}
.l4{background:#196127}.legend i,.keys i{display:inline-block;width:11px;height:11px;
border-radius:2px;margin:0 1px;vertical-align:-1px}
.note{color:#8250df;font-size:12px}
svg.bar{display:block;width:100%;height:auto;max-width:1000px;margin:6px 0}
#bar-total{height:28px}#bar-memory{height:52px}
.keys{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:4px 14px}
.keys i{margin-right:5px}
ul.cutlist{columns:2;column-gap:32px;padding-left:18px}
table.entries{border-collapse:collapse;margin:4px 0}
table.entries td,table.entries th{border-bottom:1px solid #d8dee4;padding:3px 10px 3px 0;
text-align:left;vertical-align:top}
.path{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px;
word-break:break-all}
.when{color:#57606a;font-weight:400}.run{margin:10px 0 18px}
.empty{color:#57606a}
"""


def render_page(page: Page) -> str:
    """The whole page, one HTML5 document (UTF-8)."""
    body = [
        f"<h1>memoryd — how the memory is used</h1><p class=\"cap\">{esc(page.summary)} "
        f"Workspace <code>{esc(page.workspace)}</code>; generated {esc(page.generated)}.</p>",
        *(_heatmap(h) for h in page.heatmaps),
    ]
    if page.budget is not None:
        body.append(_budget(page.budget))
    body.append(_runs(page))
    body.append(
        '<p class="cap">Hits count lookups (memory_search results, memory_get reads). A '
        "section in the loaded part of MEMORY.md is in every new session's context and may be"
        " used without any lookup: “never looked up” is not “never used”.</p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>memoryd — {esc(page.generated[:10])}</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )
