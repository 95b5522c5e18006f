"""The promote job (seed 004): nominate much-used notes for long-term memory.

Writes ``promote_report.md`` (and ``.json``) under the state dir's ``reports/``
with each candidate's category and evidence (queries, days). It marks the
candidates promoted (so they are never nominated again) only when asked to
apply: ``memoryd promote --apply``; the daily scheduled run only reports.
"""

from __future__ import annotations

from ..clock import iso
from ..config import Config, Paths
from ..policy import promote as promote_policy
from ..reports import hit_days, render_promote, write_report
from ..signals import snapshot
from ..store import Store
from ..tiers import promote_inputs
from . import JobResult


def run(
    cfg: Config,
    paths: Paths,
    store: Store,
    now: float,
    *,
    dry_run: bool = False,
    apply: bool = False,
) -> JobResult:
    """Find the candidates; write the report unless ``dry_run``; mark them if ``apply``."""
    snap = snapshot(cfg, paths, store, now)
    candidates = []
    inputs = [(sig, snap.text(sig.path)) for sig in snap.signals]
    # Notes of the tier store (issue 4), keyed tiers/<name>, follow the same rules.
    inputs += promote_inputs(paths.tiers_root, store, now, snap.tz)
    for sig, text in inputs:
        d = promote_policy.decide(
            sig,
            text,
            cfg.promote,
            marked=sig.path in snap.marked,
            promoted=sig.path in snap.promoted,
        )
        if d.candidate:
            candidates.append(
                {
                    "path": d.path,
                    "category": d.category,
                    "category_reason": d.category_reason,
                    "reason": d.reason,
                    "rules": list(d.rules),
                    "numbers": d.numbers,
                    "queries": [list(q) for q in d.queries],
                    "days": hit_days(sig, snap.tz),
                }
            )
    applied = bool(apply and not dry_run and candidates)
    if applied:
        with store.transaction():
            for c in candidates:
                store.set_mark(c["path"], "promoted", note=c["category"])
    doc = {
        "generated": iso(now),
        "applied": applied,
        "rules": {
            "hits_7d": cfg.promote.hits_7d,
            "hits_14d": cfg.promote.hits_14d,
            "hits_total": cfg.promote.hits_total,
        },
        "candidates": candidates,
    }
    by_cat: dict[str, int] = {}
    for c in candidates:
        by_cat[c["category"]] = by_cat.get(c["category"], 0) + 1
    detail = ", ".join(f"{n} {k}" for k, n in sorted(by_cat.items()))
    summary = f"promote: {len(candidates)} candidate(s)" + (f" ({detail})" if detail else "")
    if applied:
        summary += ", marked promoted"
    if not dry_run:
        doc["report"] = str(
            write_report(paths.reports_dir, "promote_report", render_promote(doc), doc)
        )
    return JobResult(summary, doc, changed=applied)
