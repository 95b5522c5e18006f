"""The promote job: nominate much-used notes for long-term memory.

Writes ``promote_report.md`` (and ``.json``) under the state dir's ``reports/``
with each candidate's category and evidence (queries, days). It marks the
candidates promoted (so they are never nominated again) only when asked to
apply: ``memoryd promote --apply``; the daily scheduled run only reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..clock import iso
from ..config import Config, Paths
from ..policy import promote as promote_policy
from ..reports import hit_days, render_promote, write_report
from ..results import JobOutcome, counted
from ..signals import snapshot
from ..store import Store
from ..tierstore import promote_inputs


@dataclass(frozen=True)
class Candidate:
    """A note nominated for long-term memory, with its category and the evidence."""

    path: str
    category: str | None
    category_reason: str | None
    reason: str
    rules: list[str]
    numbers: dict[str, Any]
    queries: list[list[Any]]
    days: list[Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "category": self.category,
            "category_reason": self.category_reason,
            "reason": self.reason,
            "rules": self.rules,
            "numbers": self.numbers,
            "queries": self.queries,
            "days": self.days,
        }


@dataclass
class PromoteResult(JobOutcome):
    """The candidates of one promote run, whether they were marked, and the report."""

    generated: float
    applied: bool
    rules: dict[str, int]
    candidates: list[Candidate] = field(default_factory=list)
    report: Path | None = None  # None in a dry run

    @property
    def changed(self) -> bool:  # type: ignore[override]  # (JobOutcome's field, computed here)
        return self.applied

    @property
    def summary(self) -> str:  # type: ignore[override]  # (JobOutcome's field, computed here)
        by_cat: dict[str | None, int] = {}
        for c in self.candidates:
            by_cat[c.category] = by_cat.get(c.category, 0) + 1
        detail = ", ".join(f"{n} {k}" for k, n in sorted(by_cat.items()))
        text = f"promote: {counted(len(self.candidates), 'candidate')}" + (
            f" ({detail})" if detail else ""
        )
        return text + (", marked promoted" if self.applied else "")

    def document(self) -> dict[str, Any]:
        """What the report files hold."""
        return {
            "generated": iso(self.generated),
            "applied": self.applied,
            "rules": self.rules,
            "candidates": [c.as_dict() for c in self.candidates],
        }

    def as_dict(self) -> dict[str, Any]:
        doc = self.document()
        if self.report is not None:
            doc["report"] = str(self.report)
        return doc


def run(
    cfg: Config,
    paths: Paths,
    store: Store,
    now: float,
    *,
    dry_run: bool = False,
    apply: bool = False,
) -> PromoteResult:
    """Find the candidates; write the report unless ``dry_run``; mark them if ``apply``."""
    snap = snapshot(cfg, paths, store, now)
    candidates: list[Candidate] = []
    inputs = [(sig, snap.text(sig.path)) for sig in snap.signals]
    # Notes of the tier store, keyed tiers/<name>, follow the same rules.
    inputs += promote_inputs(paths.tiers_root, store, now, snap.tz)
    for sig, text in inputs:
        d = promote_policy.decide(
            sig,
            text,
            cfg.promote,
            marked=sig.path in snap.marked,
            promoted=sig.path in snap.promoted,
            mark_note=snap.mark_notes.get(sig.path),
        )
        if d.candidate:
            candidates.append(
                Candidate(
                    d.path,
                    d.category,
                    d.category_reason,
                    d.reason,
                    list(d.rules),
                    d.numbers,
                    [list(q) for q in d.queries],
                    hit_days(sig, snap.tz),
                )
            )
    applied = bool(apply and not dry_run and candidates)
    if applied:
        with store.transaction():
            for c in candidates:
                store.set_mark(c.path, "promoted", note=c.category)
    rules = {
        "hits_7d": cfg.promote.hits_7d,
        "hits_14d": cfg.promote.hits_14d,
        "hits_total": cfg.promote.hits_total,
    }
    result = PromoteResult(now, applied, rules, candidates)
    if not dry_run:
        doc = result.document()
        result.report = write_report(paths.reports_dir, "promote_report", render_promote(doc), doc)
    return result
