"""The monthly expire job (seed 000's janitor): plan with the policy, apply with the mover.

:func:`build_plan` is what ``memoryd expire --dry-run`` prints and exactly what
``--force`` (and the daemon's monthly run) performs: the archive destinations,
including the ``~2`` suffix when a name is already taken, are decided in the
plan, never during the moves. Applying first repairs any unfinished journal
entry, then moves each file with :class:`memoryd.mover.Mover`; a file that
cannot be moved (changed meanwhile, destination appeared) is reported and
left in place, and the other moves go on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..config import Config, Paths
from ..mover import MoveError, Mover, mover_for
from ..policy import expire as expire_policy
from ..policy import rails
from ..policy import score as score_policy
from ..results import JobOutcome
from ..signals import DAY, Snapshot, snapshot
from ..store import Store

# --------------------------------------------------------------------------- results


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
class Moved:
    """A planned archive move that was made, with its journal id (for ``restore``)."""

    item: PlanItem
    id: int

    def as_dict(self) -> dict[str, Any]:
        return {**self.item.as_dict(), "id": self.id}


@dataclass(frozen=True)
class Failure:
    """A planned move that could not be made (the file stays where it is)."""

    path: str
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "error": self.error}


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


@dataclass
class ExpireResult(JobOutcome):
    """One expire run: the plan, and (unless a dry run or report only) what moved.

    ``mode``: ``dry_run`` (plan only), ``manual`` (``expire --force``: exactly the
    plan), ``report_only`` (scheduled, no consent yet), ``scheduled`` (capped).
    """

    summary: str
    plan: ExpirePlan
    mode: str
    changed: bool = False
    unfinished_journal_entries: int = 0  # dry run: what the real run repairs first
    batch: str | None = None
    moved: list[Moved] = field(default_factory=list)
    failed: list[Failure] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    held_back: list[PlanItem] = field(default_factory=list)  # planned, over the cap
    spared: list[PlanItem] = field(default_factory=list)  # restored on demand lately: kept
    moved_earlier: int = 0  # moved by an earlier scheduled run of the same month
    participants: int | None = None  # files taking part this month (None: the plan's)
    consent: str | None = None  # who said yes to scheduled archiving
    notified: bool | None = None  # None: no notification was due

    @property
    def log(self) -> dict[str, Any]:
        """The fields of the daemon's ``job.done`` log line (scheduled runs)."""
        if self.mode == "report_only":
            n = len(self.plan.archive)
            return {"report_only": True, "would_archive": n, "files": self.plan.files}
        return {
            "report_only": False,
            "consent": self.consent,
            "archived": len(self.moved),
            "held_back": len(self.held_back),
            "spared": len(self.spared),
            "failed": len(self.failed),
            "files": self.plan.files if self.participants is None else self.participants,
            "moved_earlier": self.moved_earlier,
        }

    def as_dict(self) -> dict[str, Any]:
        d = self.plan.as_dict()
        moved = [m.as_dict() for m in self.moved]
        failed = [f.as_dict() for f in self.failed]
        if self.mode == "dry_run":
            d["unfinished_journal_entries"] = self.unfinished_journal_entries
        elif self.mode == "manual":
            d.update(batch=self.batch, moved=moved, failed=failed, repaired=self.repaired)
        elif self.mode == "report_only":
            d.update(report_only=True, consent=None, moved=moved, failed=failed, log=self.log)
        else:
            d.update(
                report_only=False,
                consent=self.consent,
                batch=self.batch,
                moved=moved,
                failed=failed,
                held_back=[h.as_dict() for h in self.held_back],
                spared=[a.as_dict() for a in self.spared],
                repaired=self.repaired,
                log=self.log,
            )
        if self.notified is not None:
            d["notified"] = self.notified
        return d


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
    from ..policy import replay
    from ..signals import CLOCK_SKEW, strength_pairs

    policy = replay.policy_named(cfg.expire.policy)
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
        # replay.is_strong, inlined (this loop sees every hit row)
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
        view = replay.FileView(
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


def apply_plan(
    archive: list[PlanItem], mover: Mover, workspace: Path, batch: str
) -> tuple[list[Moved], list[Failure]]:
    """Perform these archive moves; (moved, with journal ids; failures)."""
    moved: list[Moved] = []
    failed: list[Failure] = []
    for item in archive:
        assert item.to is not None
        try:
            move_id = mover.move(
                workspace / item.path, workspace / item.to, reason=item.reason, batch=batch
            )
        except (MoveError, OSError) as exc:  # one file's trouble never stops the others
            failed.append(Failure(item.path, str(exc)))
            continue
        moved.append(Moved(item, move_id))
    return moved, failed


def summary_line(plan: ExpirePlan, moved: int | None, failed: int) -> str:
    """The one line a run (or a dry run) is logged, recorded and notified with."""
    n = len(plan.archive)
    if moved is None:
        return f"expire (dry run): would archive {n} of {plan.files} memory files"
    text = f"expire: archived {moved} of {plan.files} memory files"
    return text + (f"; {failed} could not be moved" if failed else "")


def _notify_lines(summary: str, moved: list[Moved], failed: list[Failure]) -> list[str]:
    """The notification of a run that moved files: the first 20 moves and 5 failures."""
    lines = [summary] + [f"• {m.item.path} → {m.item.to}" for m in moved[:20]]
    if len(moved) > 20:
        lines.append(f"… and {len(moved) - 20} more")
    lines += [f"✗ {f.path}: {f.error}" for f in failed[:5]]
    return lines


def _restores_since_last_run(store: Store) -> list[str]:
    """Lines naming the archived files a search brought back since the last expire run."""
    from ..ondemand import outcome_words, recent_events

    last = store.last_job("expire")
    since = last[2] if last and last[2] is not None else 0.0
    back = [e for e in recent_events(store) if e.get("at", 0) > since]
    if not back:
        return []
    lines = [f"since the last expire, {len(back)} archived file(s) were needed again:"]
    for e in back[:10]:
        lines.append(
            f"↩ {e.get('path')} {outcome_words(e.get('outcome'))} — search “{e.get('query')}”"
        )
    return lines


def run(
    cfg: Config, paths: Paths, store: Store, now: float, *, dry_run: bool = False
) -> ExpireResult:
    """Plan (and unless ``dry_run`` apply) this month's expire; notify when something moved.

    This is the run by hand (``memoryd expire``): it applies exactly the plan, uncapped.
    The daemon runs :func:`run_scheduled`.
    """
    repaired: list[str] = []
    mover = mover_for(store, paths)
    if not dry_run:
        repaired = mover.repair()
    snap = snapshot(cfg, paths, store, now)
    plan = build_plan(cfg, snap)
    if dry_run:
        summary = summary_line(plan, None, 0)
        return ExpireResult(
            summary, plan, "dry_run", unfinished_journal_entries=len(mover.unfinished())
        )
    if snap.skipped_names:
        with store.transaction():
            store.bump("skipped_names", len(snap.skipped_names))
    batch = f"expire:{plan.month}:{time.time_ns()}"
    moved, failed = apply_plan(plan.archive, mover, paths.workspace, batch)
    result = ExpireResult(
        summary_line(plan, len(moved), len(failed)),
        plan,
        "manual",
        changed=bool(moved),
        batch=batch,
        moved=moved,
        failed=failed,
        repaired=repaired,
    )
    if moved or failed:
        from ..notify import notify

        result.notified = notify(
            cfg, paths, "\n".join(_notify_lines(result.summary, moved, failed))
        )
    return result


def _surest_first(snap: Snapshot) -> Callable[[PlanItem], tuple[float, float, float]]:
    """Order for the cap: the least likely to be needed first (when the policy gives a
    chance), then the longest without a hit, then the oldest."""

    def key(item: PlanItem) -> tuple[float, float, float]:
        chance = float(item.p_need) if item.p_need is not None else 0.0
        sig = snap.by_path.get(item.path)
        if sig is None:
            return (chance, float("-inf"), float("-inf"))
        last = sig.last_hit
        return (chance, last if last is not None else float("-inf"), sig.created)

    return key


SCHEDULED_BATCH = "expire:{month}:scheduled:"  # + a nanosecond stamp; see run_scheduled


def _moved_by_schedule(store: Store, month: str) -> list[str]:
    """The sources of the moves the scheduled runs of ``month`` made already, one per move
    (undone ones too: they moved)."""
    prefix = SCHEDULED_BATCH.format(month=month)  # digits, '-' and ':' only: no LIKE wildcard
    rows = store.conn.execute(
        "SELECT src FROM moves WHERE op = 'move' AND undo_of IS NULL "
        "AND state IN ('done', 'undone') AND batch LIKE ?",
        (prefix + "%",),
    ).fetchall()
    return [src for (src,) in rows]


def _workspace_relative(workspace: Path, path: str | None) -> str | None:
    """``path`` (absolute) relative to ``workspace`` as given or resolved (the journal holds
    resolved paths); None when it lies elsewhere."""
    for root in dict.fromkeys((str(workspace).rstrip("/"), os.path.realpath(workspace))):
        if path and path.startswith(root.rstrip("/") + "/"):
            return path[len(root.rstrip("/")) + 1 :]
    return None


def _restored_on_demand_since(store: Store, workspace: Path, since: float) -> set[str]:
    """Workspace-relative paths restore on demand brought back at or after ``since``."""
    rows = store.conn.execute(
        "SELECT dst FROM moves WHERE op = 'move' AND state = 'done' AND undo_of IS NOT NULL "
        "AND batch LIKE 'restore-on-demand:%' AND COALESCE(finished, created) >= ?",
        (since,),
    ).fetchall()
    return {rel for (dst,) in rows if (rel := _workspace_relative(workspace, dst)) is not None}


def run_scheduled(cfg: Config, paths: Paths, store: Store, now: float) -> ExpireResult:
    """The daemon's monthly run, on rails (see :mod:`memoryd.policy.rails`).

    Without the user's yes it only reports (notification, log, ``status``); with it, it
    moves at most ``expire.max_fraction_per_run`` of the files taking part, surest first,
    and reports the rest of its plan as held back. Its batch is ``expire:<month>:scheduled:…``,
    so a second run of the month (the daemon died before it recorded the first) counts the
    files the first one moved against the same cap.
    """
    from ..notify import notify

    consent = rails.consent_of(cfg.expire.auto, store.get_meta(rails.CONSENT_META))
    frac = cfg.expire.max_fraction_per_run
    if not consent.given:
        snap = snapshot(cfg, paths, store, now)
        plan = build_plan(cfg, snap)
        n, participants = len(plan.archive), plan.files
        summary = (
            f"expire (report only): would archive {n} of {participants} memory files; "
            "nothing moved until you say yes once (`memoryd expire --force`, "
            "or expire.auto = true)"
        )
        result = ExpireResult(summary, plan, "report_only")
        if n:
            lines = [summary]
            lines += [f"• would archive {a.path}  ({a.reason})" for a in plan.archive[:20]]
            if n > 20:
                lines.append(f"… and {n - 20} more")
            lines.append(
                f"once allowed, a scheduled run moves at most "
                f"{rails.run_limit(participants, frac)} of these {participants} files "
                f"(expire.max_fraction_per_run = {frac:g}); `memoryd expire --force` moves "
                "exactly the plan it prints"
            )
            lines += _restores_since_last_run(store)
            result.notified = notify(cfg, paths, "\n".join(lines))
        return result

    mover = mover_for(store, paths)
    repaired = mover.repair()
    snap = snapshot(cfg, paths, store, now)
    plan = build_plan(cfg, snap)
    moved_before = _moved_by_schedule(store, plan.month)
    already = len(moved_before)
    # The files taking part this month: the plan's, and those an earlier run moved out of
    # it. A file moved and restored since is in the plan again: counted once, not twice.
    in_plan = {i.path for i in (*plan.archive, *plan.keep)}
    gone = {_workspace_relative(snap.workspace, src) or src for src in moved_before} - in_plan
    participants = plan.files + len(gone)
    since = now - rails.RESTORED_GRACE_DAYS * DAY
    restored = _restored_on_demand_since(store, snap.workspace, since)
    wanted, spared = rails.spare_restored(plan.archive, restored)
    take, held = rails.cap(wanted, participants, frac, _surest_first(snap), already)
    batch = SCHEDULED_BATCH.format(month=plan.month) + str(time.time_ns())
    moved, failed = apply_plan(take, mover, paths.workspace, batch)
    summary = summary_line(plan, len(moved), len(failed))
    if held:
        summary += (
            f"; {len(held)} more planned, held back by the cap "
            f"(expire.max_fraction_per_run = {frac:g}: at most "
            f"{rails.run_limit(participants, frac)} of {participants} files a run"
            + (f", {already} of them moved earlier this month" if already else "")
            + ")"
        )
    if spared:
        summary += (
            f"; {len(spared)} kept: a search brought them back in the last "
            f"{rails.RESTORED_GRACE_DAYS} days"
        )
    result = ExpireResult(
        summary,
        plan,
        "scheduled",
        changed=bool(moved),
        batch=batch,
        moved=moved,
        failed=failed,
        repaired=repaired,
        held_back=list(held),
        spared=spared,
        moved_earlier=already,
        participants=participants,
        consent=consent.by,
    )
    needed_again = _restores_since_last_run(store)
    if moved or failed or held or spared or needed_again:
        lines = _notify_lines(summary, moved, failed)
        lines += [f"◦ held back {h.path}  ({h.reason})" for h in held[:10]]
        if len(held) > 10:
            lines.append(f"… and {len(held) - 10} more held back")
        lines += [f"◦ kept {a.path}  (restored on demand lately)" for a in spared[:10]]
        lines += needed_again
        result.notified = notify(cfg, paths, "\n".join(lines))
    return result
