"""The expire plan: every file's verdict merged with pruning, archive destinations decided.

:func:`build_plan` is what ``memoryd expire --dry-run`` prints, what ``reflect`` reports,
and exactly what ``--force`` and the monthly job perform: the destinations, ``~2`` suffix
included, are decided here, never during the moves. It reads a
:class:`memoryd.signals.Snapshot`, looks at the file system only to see whether a
destination name is free, and changes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..signals import FileSignals, Snapshot, times_of_strong
from . import expire as expire_policy
from . import score as score_policy

if TYPE_CHECKING:
    from .candidates import Policy


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
    # where the printed chance comes from (likely): "calibrated on N of your own past
    # verdicts …" or the generic model's, uncalibrated; None for other policies
    chance_source: str | None = None
    # how its chances are shown: (precision, cut) of calibration.shown_chance;
    # None for policies without a chance
    chance_shown: tuple[str, float] | None = None

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
        if self.chance_source is not None:
            doc["chance_source"] = self.chance_source
        if self.chance_shown is not None:
            doc["chance_shown_as"] = self.chance_shown[0]
        return doc

    def shown(self, p: float) -> str:
        """A file's chance as this plan prints it: a percent, a band or "uncertain"."""
        from .calibration import PERCENT, shown_chance

        precision, cut = self.chance_shown or (PERCENT, 0.0)
        return shown_chance(p, precision, cut)


def scores_of(cfg: Config, snap: Snapshot) -> list[score_policy.Score]:
    """Every file's score, against the queries of the score window."""
    queries = score_policy.prepare_queries(snap.recent_queries(cfg.score.query_window_days))
    return [
        score_policy.score(sig, score_policy.Document.of(snap.text(sig.path)), queries, cfg.score)
        for sig in snap.signals
    ]


# keeps that pruning and capacity never override (a promotion candidate included)
FIXED_RULES = ("protected", "marked", "pinned", "candidate")
PRUNE_RULES = ("prune", "capacity")  # the rules of a keep that pruning / capacity archive


def promotion_candidates(
    cfg: Config, snap: Snapshot, signals: Sequence[FileSignals] | None = None
) -> dict[str, str]:
    """path → why promote nominates it now, for ``signals`` (default: every file's), from
    their counts as the snapshot has them: what expire must never archive."""
    from . import promote

    out = {}
    for sig in snap.signals if signals is None else signals:
        why = promote.is_candidate(
            sig, cfg.promote, marked=sig.path in snap.marked, promoted=sig.path in snap.promoted
        )
        if why:
            out[sig.path] = why
    return out


def _policy(cfg: Config, policy: Policy | None) -> Policy:
    """The replay policy to decide with: the one handed in (as
    :func:`memoryd.own_history.learned_policy` gives it), else the configured one by name."""
    from . import candidates

    return policy if policy is not None else candidates.policy_named(cfg.expire.policy)


def policy_decisions(
    cfg: Config, snap: Snapshot, policy: Policy | None = None
) -> list[expire_policy.ExpireDecision]:
    """Every file's verdict under the configured replay policy, on its hits and their
    strength as known now (the same view ``memoryd simulate`` gives a policy at a run)."""
    policy = _policy(cfg, policy)
    times, strong = _hit_times(snap)
    return [_decide_with(policy, cfg, snap, sig, times, strong) for sig in snap.signals]


def decision_of(
    cfg: Config, snap: Snapshot, rel: str, policy: Policy | None = None
) -> expire_policy.ExpireDecision:
    """One listed file's verdict as :func:`policy_decisions` (or the seed rule) gives it,
    before pruning and capacity (:func:`planned_decision_of`), from the rows of that file
    and of its calls alone: all a hit's strength rests on."""
    sig = snap.by_path[rel]
    if cfg.expire.policy == "seed":
        return expire_policy.decide(
            sig, cfg.expire, snap.marked, snap.pins, promotion_candidates(cfg, snap, [sig])
        )
    policy = _policy(cfg, policy)
    times, strong = _hit_times(snap, rel)
    return _decide_with(policy, cfg, snap, sig, times, strong)


def _hit_times(
    snap: Snapshot, only: str | None = None
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """:func:`hit_times_by_file` of the snapshot's hits (``only``: that file's), from the
    kept strength when it can say it (:meth:`memoryd.signals.Snapshot.strong_times`)."""
    if only is None:
        every = snap.kept_times()  # (read once a snapshot: reflect's trends take them too)
        if every is not None:
            return every
    kept = snap.strong_times(None if only is None else [only])
    if kept is None:
        rows = snap.hit_rows(None if only is None else [only])
        return hit_times_by_file(rows, snap.now, only=only)
    return times_of_strong(kept)


def hit_times_by_file(
    rows: Sequence[tuple[Any, ...]], now: float, *, only: str | None = None
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """path → the times of its hits, and of its strong hits, as a replay policy sees them at
    ``now`` (clock skew allowed). ``rows``: :class:`memoryd.strength.HitRow` fields, every
    row of each call among them; ``only``: that file's times alone. Pure; unsorted."""
    from ..hit_counts import CLOCK_SKEW
    from ..strength import strong_flags

    horizon = now + CLOCK_SKEW
    dated = [
        (path, min(ts, now), is_strong)
        for (_a, _c, path, _k, ts, _s, _se), is_strong in zip(
            rows, strong_flags(rows, horizon), strict=True
        )
        # (a hit "from the future" beyond the skew allowance: not yet)
        if ts <= horizon and (only is None or path == only)
    ]
    return times_of_strong(dated)


def _decide_with(
    policy: Policy,
    cfg: Config,
    snap: Snapshot,
    sig: FileSignals,
    times: dict[str, list[float]],
    strong: dict[str, list[float]],
) -> expire_policy.ExpireDecision:
    """One file's verdict under ``policy``, on its times from :func:`hit_times_by_file`."""
    from . import candidates

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
    nominated = promotion_candidates(cfg, snap, [sig])
    return expire_policy.decide_with(
        policy, sig, view, cfg.expire, snap.marked, snap.pins, nominated
    )


def plan_decisions(
    cfg: Config,
    snap: Snapshot,
    scores: list[score_policy.Score] | None = None,
    policy: Policy | None = None,
) -> list[expire_policy.ExpireDecision]:
    """Every file's verdict as the plan has it: the policy's (or the seed rule's), then a
    keep that pruning or capacity control archives (rule ``prune`` / ``capacity``)."""
    if cfg.expire.policy == "seed":
        base = expire_policy.plan(
            snap.signals, cfg.expire, snap.marked, snap.pins, promotion_candidates(cfg, snap)
        )
    else:
        base = policy_decisions(cfg, snap, policy)
    if not (cfg.score.prune_enabled or cfg.score.capacity_enabled):
        return base
    eligible = [d.path for d in base if d.action == "keep" and d.rule not in FIXED_RULES]
    remaining = len(snap.signals) - sum(1 for d in base if d.action == "archive")
    if scores is None:
        scores = scores_of(cfg, snap)
    extra = score_policy.prune_candidates(scores, eligible, remaining, cfg.score)
    return with_pruning(base, extra)


def with_pruning(
    base: Sequence[expire_policy.ExpireDecision], extra: Mapping[str, tuple[str, str]]
) -> list[expire_policy.ExpireDecision]:
    """``base`` with the archives pruning or capacity decided (``extra``: path → (rule,
    reason)): a keep becomes an archive of that rule, unless protection, a mark or a pin
    decided it (:data:`FIXED_RULES`). Pure."""
    return [
        expire_policy.ExpireDecision(d.path, "archive", *extra[d.path], d.numbers)
        if d.action == "keep" and d.rule not in FIXED_RULES and d.path in extra
        else d
        for d in base
    ]


def planned_decision_of(
    cfg: Config,
    snap: Snapshot,
    rel: str,
    own: expire_policy.ExpireDecision | None = None,
    policy: Policy | None = None,
) -> expire_policy.ExpireDecision:
    """One listed file's verdict in the plan, pruning and capacity included (``explain``).

    From that file's hits alone (:func:`decision_of`) when nothing can override it;
    otherwise the whole plan's, since capacity rests on every file's verdict and score
    (pruning alone never takes a file scoring at or above its threshold, which one score
    tells). ``own``: :func:`decision_of`'s verdict when the caller has it."""
    if own is None:
        own = decision_of(cfg, snap, rel, policy)
    if (
        not (cfg.score.prune_enabled or cfg.score.capacity_enabled)
        or own.action == "archive"
        or own.rule in FIXED_RULES
    ):
        return own
    if not cfg.score.capacity_enabled:
        queries = score_policy.prepare_queries(snap.recent_queries(cfg.score.query_window_days))
        doc = score_policy.Document.of(snap.text(rel))
        mine = score_policy.score(snap.by_path[rel], doc, queries, cfg.score)
        if not mine.total < cfg.score.prune_threshold:
            return own
    return next(d for d in plan_decisions(cfg, snap, policy=policy) if d.path == rel)


def build_plan(
    cfg: Config,
    snap: Snapshot,
    scores: list[score_policy.Score] | None = None,
    policy: Policy | None = None,
) -> ExpirePlan:
    """The expire plan, destinations decided (workspace-relative paths). ``scores``: from
    :func:`scores_of`, if at hand; ``policy``: as :func:`_policy` takes it."""
    month = datetime.fromtimestamp(snap.now, snap.tz).strftime("%Y-%m")
    decisions = plan_decisions(cfg, snap, scores, policy)
    taken: set[str] = set()

    def exists(rel: str) -> bool:
        return rel in taken or os.path.lexists(snap.workspace / rel)

    archive: list[PlanItem] = []
    keep: list[PlanItem] = []
    for d in decisions:
        number = d.numbers.get("p_need")  # (a chance, when the policy gives one)
        p_need = number if isinstance(number, float) else None
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
        chance_source(cfg, policy),
        chance_shown(cfg, policy),
    )


def chance_shown(cfg: Config, policy: Policy | None) -> tuple[str, float] | None:
    """How the plan's chances are shown (:func:`memoryd.policy.calibration.policy_precision`):
    a percent only with the user's calibration and a track record that holds."""
    from . import calibration, candidates

    policy = _policy(cfg, policy) if cfg.expire.policy != "seed" else None
    if not isinstance(policy, candidates.Likely):
        return None
    return calibration.policy_precision(policy.calibration, policy.threshold)


def chance_source(cfg: Config, policy: Policy | None) -> str | None:
    """What ``expire --dry-run`` and ``explain`` say of the printed chance: calibrated on
    how many of the user's own verdicts, or the generic, uncalibrated model's."""
    from . import calibration, candidates

    policy = _policy(cfg, policy) if cfg.expire.policy != "seed" else None
    if not isinstance(policy, candidates.Likely):
        return None
    precision, _cut = calibration.policy_precision(policy.calibration, policy.threshold)
    cal = policy.calibration
    how = calibration.precision_words(precision, cal.track if cal else None, cal is not None)
    how = f"; {how}" if how else ""
    if cal is not None:
        return cal.describe() + how
    if policy.learn:
        return calibration.GENERIC + how
    return "the generic model's chance (policy likely-generic: never calibrated)" + how
