"""The reflect and promote reports: data documents (JSON-ready) and their Markdown.

Builders are pure functions of a :class:`memoryd.signals.Snapshot`-derived set of
values; renderers turn the document into Markdown that reads well in any viewer
(GitHub-flavoured tables, pipes in paths escaped, nothing but text). Files are
written under the state dir's ``reports/``, never into ``memory/``, which OpenClaw
indexes: a report there would pollute the agent's own search.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .clock import iso
from .signals import DAY, FileSignals, Hit, sparkline

TOP = 10


def cooccurrence(
    hits: dict[str, list[Hit]], since: float, limit: int = TOP
) -> list[dict[str, Any]]:
    """Pairs of files returned by the same search call, most frequent first."""
    calls: dict[tuple[str, str], set[str]] = {}
    for path, lst in hits.items():
        for h in lst:
            if h.ts >= since and h.call_id:
                calls.setdefault((h.agent, h.call_id), set()).add(path)
    pairs: Counter[tuple[str, str]] = Counter()
    for paths in calls.values():
        if 1 < len(paths) <= 20:  # a call returning everything says nothing
            pairs.update(itertools.combinations(sorted(paths), 2))
    return [
        {"a": a, "b": b, "together": n}
        for (a, b), n in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    ]


def file_row(sig: FileSignals) -> dict[str, Any]:
    return {
        "path": sig.path,
        "kind": sig.kind,
        "hits_7d": sig.hits_7d,
        "hits_30d": sig.hits_30d,
        "hits_total": sig.hits_total,
        "last_hit": iso(sig.last_hit),
        "activation": None if sig.activation is None else round(sig.activation, 3),
        "trend": sig.trend,
        "sparkline": sparkline(sig.daily),
        "age_days": round(sig.age_days, 1),
    }


def reflect_document(
    signals: Sequence[FileSignals],
    scores: Sequence[Any],
    metrics: dict[str, Any],
    expire_plan: dict[str, Any],
    pairs: list[dict[str, Any]],
    now: float,
) -> dict[str, Any]:
    """Everything the daily report says, as data."""
    hit = [s for s in signals if s.hits_total]
    top = sorted(hit, key=lambda s: (-s.hits_30d, -s.hits_total, s.path))[:TOP]
    never = sorted((s for s in signals if not s.hits_total), key=lambda s: -s.age_days)
    rising = sorted(
        (s for s in signals if s.trend == "rising"), key=lambda s: (-s.fast_rate, s.path)
    )
    cooling = sorted(
        (s for s in signals if s.trend == "cooling"), key=lambda s: (-s.slow_rate, s.path)
    )
    ranked = sorted(scores, key=lambda s: (-s.total, s.path))
    return {
        "generated": iso(now),
        "files": len(signals),
        "hits_30d": sum(s.hits_30d for s in signals),
        "top": [file_row(s) for s in top],
        "never_hit": [{"path": s.path, "age_days": round(s.age_days, 1)} for s in never],
        "rising": [file_row(s) for s in rising[:TOP]],
        "cooling": [file_row(s) for s in cooling[:TOP]],
        "together": pairs,
        "scores": [score_row(s) for s in ranked],
        "metrics": metrics,
        "expire_next": {
            "archive": expire_plan["archive"],
            "keep_count": len(expire_plan["keep"]),
        },
    }


def score_row(s: Any) -> dict[str, Any]:
    def r(x: float | None) -> float | None:
        return None if x is None else round(x, 3)

    return {
        "path": s.path,
        "score": r(s.total),
        "keyword": r(s.keyword),
        "time": r(s.time),
        "access": r(s.access),
        "tag": r(s.tag),
        "query": s.query,
    }


class Code(str):
    """A cell rendered as a code span (paths)."""


def md_cell(value: Any) -> str:
    """Text safe inside a Markdown table cell; :class:`Code` values become code spans."""
    if value is None:
        return "–"
    text = str(value).replace("\n", " ")
    if isinstance(value, Code):
        return "`" + text.replace("`", "'").replace("|", "\\|") + "`"
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    if not rows:
        return ["_none_", ""]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def _rows(docs: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[tuple[Any, ...]]:
    """Table rows of ``docs``: the path as code, then the values of ``keys``."""
    return [(Code(d["path"]), *(d[k] for k in keys)) for d in docs]


_FILE_COLUMNS = (
    "hits_7d",
    "hits_30d",
    "hits_total",
    "last_hit",
    "activation",
    "trend",
    "sparkline",
)


def _files_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    return md_table(
        ("file", "7 d", "30 d", "total", "last hit", "activation", "trend", "daily hits, 30 d"),
        _rows(rows, _FILE_COLUMNS),
    )


def render_reflect(doc: dict[str, Any]) -> str:
    m = doc["metrics"]
    lines = [
        f"# memoryd reflect — {doc['generated'][:10]}",
        "",
        f"{doc['files']} memory files, {doc['hits_30d']} hits in the last 30 days. "
        f"Generated {doc['generated']}.",
        "",
        "## Metrics",
        "",
        *md_table(
            ("metric", "value", "target"),
            [
                ("memory size (files)", m["memory_size"], "≤ capacity"),
                ("memory size (bytes)", m["memory_bytes"], ""),
                ("average relevance score", m["avg_relevance_score"], "> 0.7"),
                ("prune rate (would prune / files)", m["prune_rate"], "< 0.2"),
            ],
        ),
        "## Most used",
        "",
        *_files_table(doc["top"]),
        "## Rising",
        "",
        *_files_table(doc["rising"]),
        "## Cooling",
        "",
        *_files_table(doc["cooling"]),
        "## Often found together",
        "",
        *md_table(
            ("file", "file", "searches"),
            [(Code(p["a"]), Code(p["b"]), p["together"]) for p in doc["together"]],
        ),
        f"## Never hit ({len(doc['never_hit'])})",
        "",
        *md_table(("file", "age (days)"), _rows(doc["never_hit"], ("age_days",))),
        "## Scores",
        "",
        "Score = keyword × 0.4 + time × 0.2 + access × 0.2 + tag × 0.2, measured against the "
        "agent's own recent queries (the best-matching one is shown).",
        "",
        *md_table(
            ("file", "score", "keyword", "time", "access", "tag", "best query"),
            _rows(doc["scores"], ("score", "keyword", "time", "access", "tag", "query")),
        ),
        f"## What expire would do next ({len(doc['expire_next']['archive'])} to archive)",
        "",
        *md_table(
            ("file", "to", "why"),
            [(Code(a["path"]), Code(a["to"]), a["reason"]) for a in doc["expire_next"]["archive"]],
        ),
    ]
    return "\n".join(lines).rstrip() + "\n"


def render_promote(doc: dict[str, Any]) -> str:
    lines = [
        f"# Promotion candidates — {doc['generated'][:10]}",
        "",
        f"{len(doc['candidates'])} candidate(s). Rules: ≥ {doc['rules']['hits_7d']} hits in "
        f"7 days, ≥ {doc['rules']['hits_14d']} in 14 days, ≥ {doc['rules']['hits_total']} in "
        "total, or marked by the user; never a file promoted before.",
        "",
        "Where each category goes: **skill** → `skills/<skill>/docs/retrospect.md`; "
        "**preference-or-fact** → `MEMORY.md`; **needs-review** → a person decides.",
        "",
        "Status: "
        + ("applied — these files are now marked promoted." if doc["applied"] else
           "not applied (run `memoryd promote --apply` to mark them promoted)."),
        "",
    ]  # fmt: skip
    for c in doc["candidates"]:
        lines += [
            f"## {md_cell(Code(c['path']))}",
            "",
            f"- category: **{c['category']}** ({c['category_reason']})",
            f"- why: {c['reason']}",
            f"- hits: {c['numbers']['hits_7d']} in 7 d, {c['numbers']['hits_14d']} in 14 d, "
            f"{c['numbers']['hits_total']} in total; {c['numbers']['distinct_queries']} distinct "
            f"queries on {c['numbers']['distinct_days']} distinct days",
        ]
        if c["queries"]:
            lines.append("- queries: " + "; ".join(f"“{md_cell(q)}” ×{n}" for q, n in c["queries"]))
        if c["days"]:
            lines.append("- days: " + ", ".join(c["days"]))
        lines.append("")
    if not doc["candidates"]:
        lines += ["_No candidates today._", ""]
    return "\n".join(lines).rstrip() + "\n"


def hit_days(sig: FileSignals, tz: Any, limit: int = 14) -> list[str]:
    """The most recent distinct calendar days with a hit (YYYY-MM-DD)."""
    from datetime import datetime

    days: list[str] = []
    for ts in reversed(sig.hit_times):
        d = datetime.fromtimestamp(ts, tz).strftime("%Y-%m-%d")
        if d not in days:
            days.append(d)
            if len(days) >= limit:
                break
    return days


def write_report(folder: Path, name: str, markdown: str, doc: dict[str, Any]) -> Path:
    """Write ``name``.md and ``name``.json atomically (:func:`memoryd.fsutil.write_atomic`)."""
    import orjson

    from .fsutil import write_atomic

    folder.mkdir(parents=True, exist_ok=True)
    md_path = folder / f"{name}.md"
    write_atomic(md_path, markdown.encode())
    write_atomic(folder / f"{name}.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return md_path


__all__ = ["DAY", "cooccurrence", "reflect_document", "render_promote", "render_reflect"]
