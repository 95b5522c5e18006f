"""The expire plan: every file's verdict merged with pruning, archive destinations decided.

:func:`build_plan` is what ``memoryd expire --dry-run`` prints, what ``reflect``
reports expire would do next, and exactly what ``--force`` (and the daemon's monthly
run, :mod:`memoryd.jobs.expire`) performs: the destinations, including the ``~2``
suffix when a name is already taken, are decided here, never during the moves. Its
input is the :class:`memoryd.signals.Snapshot` it is given (which reads the hit rows
and the files' text on first use); it looks at the file system only to see whether a
destination name is free, and changes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..config import Config
from ..signals import Snapshot
from . import expire as expire_policy
from . import score as score_policy


@dataclass(frozen=True)
class PlanItem:
    """One file's verdict in the plan: archived to ``to``, or kept (``to`` is None)."""

    path: str
    reason: str
    rule: str
    to: str | None = None
    p_need: float | None = None  # the policy's chance the file is needed (replay policies)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path}
        if self.to is not None:
            d["to"] = self.to
        d["reason"], d["rule"] = self.reason, self.rule
        if self.p_need is not None:
            d["p_need"] = self.p_need
        return d


@dataclass(frozen=True)
class ExpirePlan:
    """What expire archives and keeps (workspace-relative paths), destinations decided."""

    workspace: Path
    now: float
    month: str
    policy: str
    archive: list[PlanItem]
    keep: list[PlanItem]
    skipped_names: list[str] = field(default_factory=list)

    @property
    def files(self) -> int:
        """The memory files taking part (archived or kept)."""
        return len(self.archive) + len(self.keep)

    def as_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "workspace": str(self.workspace),
            "now": self.now,
            "month": self.month,
            "policy": self.policy,
            "archive": [a.as_dict() for a in self.archive],
            "keep": [k.as_dict() for k in self.keep],
        }
        if self.skipped_names:
            doc["skipped_names"] = list(self.skipped_names)
        return doc


def scores_of(cfg: Config, snap: Snapshot) -> list[score_policy.Score]:
    """Every file's score, against the queries of the score window."""
    queries = score_policy.prepare_queries(snap.recent_queries(cfg.score.query_window_days))
    return [
        score_policy.score(sig, score_policy.Document.of(snap.text(sig.path)), queries, cfg.score)
        for sig in snap.signals
    ]


_FIXED = ("protected", "marked", "pinned")  # keeps that pruning and capacity never override


def policy_decisions(cfg: Config, snap: Snapshot) -> list[expire_policy.ExpireDecision]:
    """Every file's verdict under the configured replay policy, on its hits and their
    strength as known now (the same view ``memoryd simulate`` gives a policy at a run)."""
    from ..signals import CLOCK_SKEW
    from ..strength import strength_pairs
    from . import candidates

    policy = candidates.policy_named(cfg.expire.policy)
    rows = snap.hit_rows()
    times: dict[str, list[float]] = {}
    strong: dict[str, list[float]] = {}
    now, horizon = snap.now, snap.now + CLOCK_SKEW
    for (_a, _c, path, kind, ts, _s, _se), (rank, read_at) in zip(
        rows, strength_pairs(rows), strict=True
    ):
        if ts > horizon:
            continue  # a hit "from the future" beyond the skew allowance: not yet
        if ts > now:
            ts = now
        lst = times.get(path)
        if lst is None:
            lst = times[path] = []
        lst.append(ts)
        # memoryd.policy.replay.is_strong, inlined (this loop sees every hit row)
        if (
            kind != "search"
            or rank is None
            or rank == 1
            or (read_at is not None and read_at <= horizon)
        ):
            lst = strong.get(path)
            if lst is None:
                lst = strong[path] = []
            lst.append(ts)
    out = []
    for sig in snap.signals:
        ts = sorted(times.get(sig.path, ()))
        created = sig.created
        if sig.created_from == "mtime" and ts:
            created = min(created, ts[0])  # as simulate: the earlier of mtime and first hit
        view = candidates.FileView(
            sig.path,
            sig.kind,
            created,
            snap.now,
            tuple(ts),
            tuple(sorted(strong.get(sig.path, ()))),
        )
        out.append(expire_policy.decide_with(policy, sig, view, cfg.expire, snap.marked, snap.pins))
    return out


def build_plan(
    cfg: Config, snap: Snapshot, scores: list[score_policy.Score] | None = None
) -> ExpirePlan:
    """The expire plan, destinations decided (workspace-relative paths).

    ``scores`` (from :func:`scores_of`) saves scoring again when the caller has them.
    """
    month = datetime.fromtimestamp(snap.now, snap.tz).strftime("%Y-%m")
    if cfg.expire.policy == "seed":
        base = expire_policy.plan(snap.signals, cfg.expire, snap.marked, snap.pins)
    else:
        base = policy_decisions(cfg, snap)
    extra: dict[str, tuple[str, str]] = {}
    if cfg.score.prune_enabled or cfg.score.capacity_enabled:
        eligible = [d.path for d in base if d.action == "keep" and d.rule not in _FIXED]
        remaining = len(snap.signals) - sum(1 for d in base if d.action == "archive")
        if scores is None:
            scores = scores_of(cfg, snap)
        extra = score_policy.prune_candidates(scores, eligible, remaining, cfg.score)
    decisions = [
        expire_policy.ExpireDecision(d.path, "archive", *extra[d.path], d.numbers)
        if d.action == "keep" and d.rule not in _FIXED and d.path in extra
        else d
        for d in base
    ]

    taken: set[str] = set()

    def exists(rel: str) -> bool:
        return rel in taken or os.path.lexists(snap.workspace / rel)

    archive: list[PlanItem] = []
    keep: list[PlanItem] = []
    for d in decisions:
        p_need = d.numbers.get("p_need")
        if d.action == "archive":
            to = expire_policy.free_name(
                expire_policy.archive_relpath(d.path, cfg.archive.dir, month), exists
            )
            taken.add(to)
            archive.append(PlanItem(d.path, d.reason, d.rule, to, p_need))
        else:
            keep.append(PlanItem(d.path, d.reason, d.rule, None, p_need))
    return ExpirePlan(
        snap.workspace,
        snap.now,
        month,
        cfg.expire.policy,
        archive,
        keep,
        list(snap.skipped_names),
    )
