"""The daily reflect job: a report of how the memory is used, written under the state dir.

Top files, files never hit, rising and cooling files with a sparkline of daily hits, files
often returned by the same search, every file's score with its components, the memory's
size, average score and prune rate, and what expire would do next. The report goes to
``<state>/memoryd/reports/reflect-YYYY-MM-DD.md`` (and ``.json``), never into ``memory/``,
with its page (``reflect-YYYY-MM-DD.html``: :mod:`memoryd.report_page`). Reflect moves no
file, unless ``retire.auto`` is set: then it also retires the stale sections of
``MEMORY.md`` (:func:`memoryd.retire_run.scheduled_retire`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ..config import Config, Paths
from ..own_history import learned_policy
from ..policy import score as score_policy
from ..policy.expire_plan import build_plan, scores_of
from ..report_page import build_page, write_page
from ..reports import cooccurrence, reflect_document, render_reflect, write_report
from ..results import JobOutcome, counted
from ..signals import DAY, snapshot
from ..store import Store


@dataclass
class ReflectResult(JobOutcome):
    """The day's report: its document (what the .json file holds) and where it was written."""

    summary: str
    document: dict[str, Any]
    report: Path | None = None  # None in a dry run
    changed: bool = False  # reflect moves no file (but for retire.auto)
    page: Path | None = None  # the HTML page beside the report (None in a dry run)

    def as_dict(self) -> dict[str, Any]:
        if self.report is None:
            return dict(self.document)
        return {**self.document, "report": str(self.report), "page": str(self.page)}


def run(
    cfg: Config, paths: Paths, store: Store, now: float, *, dry_run: bool = False
) -> ReflectResult:
    """Build the report; write it unless ``dry_run``."""
    snap = snapshot(cfg, paths, store, now)
    scores = scores_of(cfg, snap)
    # The prune rate is reported whether or not pruning is on: what it would archive.
    plan = build_plan(cfg, snap, scores, learned_policy(cfg, paths, store, now))
    eligible = [k.path for k in plan.keep if k.rule in ("young", "active")]
    would = score_policy.prune_candidates(
        scores,
        eligible,
        len(snap.signals),
        cfg.score._replace(prune_enabled=True),
    )
    metrics = score_policy.metrics(scores, {s.path: s.size for s in snap.signals}, len(would))
    pairs = cooccurrence(snap.hits_since(now - 30 * DAY), now - 30 * DAY)
    doc = reflect_document(snap.signals, scores, metrics, plan.as_dict(), pairs, now)
    summary = (
        f"reflect: {counted(doc['files'], 'file')}, {counted(doc['hits_30d'], 'hit')} in 30 days, "
        f"{len(doc['never_hit'])} never hit, {len(doc['rising'])} rising, "
        f"{len(doc['cooling'])} cooling, expire would archive {len(plan.archive)}"
    )
    if dry_run:
        return ReflectResult(summary, doc)
    if snap.skipped_names:
        with store.transaction():
            store.bump("skipped_names", len(snap.skipped_names))
    day = datetime.fromtimestamp(now, snap.tz).strftime("%Y-%m-%d")
    report = write_report(paths.reports_dir, f"reflect-{day}", render_reflect(doc), doc)
    from ..retire_run import scheduled_retire

    try:
        retired = scheduled_retire(cfg, paths, store, now)  # (off unless retire.auto = true)
    except Exception as exc:  # the report is written; its page must be too
        # A retire that cannot run (a refused path, a full disk) is said in the job's
        # summary, which the daemon logs; the daily report and its page still come.
        retired = None
        summary += f"; retire failed ({type(exc).__name__}: {exc})"
    if retired:
        summary += f"; {retired}"
    page = write_page(paths.reports_dir, f"reflect-{day}", build_page(paths, store, snap, doc, now))
    return ReflectResult(summary, doc, report, changed=retired is not None, page=page)
