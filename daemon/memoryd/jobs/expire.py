"""The monthly expire job: apply the plan with the mover.

The plan (:func:`memoryd.policy.expire_plan.build_plan`) decides every verdict and
destination; this job performs exactly it. Applying first repairs any unfinished
journal entry, then moves each file with :class:`memoryd.mover.Mover`; a file that
cannot be moved (changed meanwhile, destination appeared) is reported and left in
place, and the other moves go on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import faults
from ..config import Config, Paths
from ..files_seen import record_first_seen
from ..locks import held as held_lock
from ..move_files import MoveError
from ..move_journal import (
    EXPIRE_BATCH,
    RESTORE_ON_DEMAND_BATCH,
    UNDO_BATCH,
    expire_batch,
    moved_sources,
    scheduled_expire_prefix,
    undo_destinations_since,
)
from ..mover import Mover, mover_for
from ..own_history import learned_policy, record_calibration
from ..policy import rails
from ..policy.expire_plan import ExpirePlan, PlanItem, build_plan
from ..results import JobOutcome
from ..signals import DAY, Snapshot, snapshot
from ..store import Store
from ..workspace import relative_to_workspace

# --------------------------------------------------------------------------- results


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
    undone: list[PlanItem] = field(default_factory=list)  # restored by the person lately: kept
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
            "undone": len(self.undone),
            "failed": len(self.failed),
            "files": self.plan.files if self.participants is None else self.participants,
            "moved_earlier": self.moved_earlier,
        }

    def as_dict(self) -> dict[str, Any]:
        """The run as one JSON document: ``memoryd expire --json`` prints a dry run's and a
        manual run's (adding what it knows of consent); a scheduled run's is its ``data``."""
        if self.mode in ("dry_run", "manual"):
            return self._command_dict()
        d = self.plan.as_dict()
        moved = [m.as_dict() for m in self.moved]
        failed = [f.as_dict() for f in self.failed]
        if self.mode == "report_only":
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
                undone=[a.as_dict() for a in self.undone],
                repaired=self.repaired,
                log=self.log,
            )
        if self.notified is not None:
            d["notified"] = self.notified
        return d

    def _command_dict(self) -> dict[str, Any]:
        """A run by hand: the plan (dry run) or what moved (``--force``), and what was kept."""
        plan = self.plan
        doc: dict[str, Any] = {"dry_run": self.mode == "dry_run"}
        if self.mode == "dry_run":
            doc["archive"] = [a.as_dict() for a in plan.archive]
        else:
            doc["batch"] = self.batch
            doc["archive"] = [m.as_dict() for m in self.moved]  # (the dry run's entries, an id)
        doc["keep"] = [k.as_dict() for k in plan.keep]
        if self.mode == "manual":
            doc["failed"] = [f.as_dict() for f in self.failed]
            doc["repaired"] = self.repaired
        if plan.skipped_names:
            doc["skipped_names"] = list(plan.skipped_names)
        if plan.chance_source is not None:
            doc["chance_source"] = plan.chance_source
        if plan.chance_shown is not None:
            doc["chance_shown_as"] = plan.chance_shown[0]
        if self.mode == "dry_run" and self.unfinished_journal_entries:
            doc["unfinished_journal_entries"] = self.unfinished_journal_entries
        return doc


def _apply(
    plan: ExpirePlan, items: list[PlanItem], mover: Mover, workspace: Path, batch: str
) -> tuple[list[Moved], list[Failure], str]:
    """Archive ``items`` of ``plan`` as one batch: (moved, with journal ids; failed; the
    summary line)."""
    moved: list[Moved] = []
    failed: list[Failure] = []
    for item in items:
        assert item.to is not None
        faults.point("expire.moving")  # (tests: between two moves, the journal's lock free)
        try:
            move_id = mover.move(
                workspace / item.path, workspace / item.to, reason=item.reason, batch=batch
            )
        except (MoveError, OSError) as exc:  # one file's trouble never stops the others
            failed.append(Failure(item.path, str(exc)))
            continue
        moved.append(Moved(item, move_id))
    return moved, failed, summary_line(plan, len(moved), len(failed))


def summary_line(plan: ExpirePlan, moved: int | None, failed: int) -> str:
    """The one line a run (or a dry run) is logged, recorded and notified with."""
    n = len(plan.archive)
    if moved is None:
        return f"expire (dry run): would archive {n} of {plan.files} memory files"
    text = f"expire: archived {moved} of {plan.files} memory files"
    return text + (f"; {failed} could not be moved" if failed else "")


def _planned(
    cfg: Config, paths: Paths, store: Store, now: float, *, learn: bool = True
) -> tuple[Snapshot, ExpirePlan]:
    """The files as they are now, and the plan for them (every run, scheduled or by hand).
    A run that moves (``learn``) learns the policy afresh and records it; a dry run reuses
    the record (:func:`memoryd.own_history.learned_policy`)."""
    snap = snapshot(cfg, paths, store, now)
    policy = learned_policy(cfg, paths, store, snap.now, fresh=learn)
    if learn:
        record_calibration(store, policy, snap.now)
        # (the plan below already counts a file listed for the first time as seen now)
        record_first_seen(store, [f.rel for f in snap.files], snap.now)
    return snap, build_plan(cfg, snap, policy=policy)


def _send(cfg: Config, paths: Paths, lines: list[str]) -> bool:
    """Notify the user (Telegram when configured); whether a notification went out."""
    from ..notify import notify

    return notify(cfg, paths, "\n".join(lines))


def _first(
    items: Sequence[Any], n: int, line: Callable[[Any], str], more: str = "more"
) -> list[str]:
    """A notification's lines for the first ``n`` of ``items``, then how many more."""
    lines = [line(x) for x in items[:n]]
    if len(items) > n:
        lines.append(f"… and {len(items) - n} {more}")
    return lines


def _notify_lines(summary: str, moved: list[Moved], failed: list[Failure]) -> list[str]:
    """The notification of a run that moved files: the first 20 moves and 5 failures."""
    lines = [summary, *_first(moved, 20, lambda m: f"• {m.item.path} → {m.item.to}")]
    return lines + [f"✗ {f.path}: {f.error}" for f in failed[:5]]


def _restores_since_last_run(store: Store) -> list[str]:
    """Lines naming the archived files a search brought back since the last expire run."""
    from ..ondemand_outcomes import asked_words, outcome_words, recent_events

    last = store.last_job("expire")
    since = last[2] if last and last[2] is not None else 0.0
    back = [e for e in recent_events(store) if e.get("at", 0) > since]
    if not back:
        return []
    lines = [f"since the last expire, {len(back)} archived file(s) were needed again:"]
    for e in back[:10]:
        lines.append(f"↩ {e.get('path')} {outcome_words(e.get('outcome'))} — {asked_words(e)}")
    return lines


def one_run_at_a_time(
    paths: Paths, waiting: Callable[[], None] | None = None
) -> contextlib.AbstractContextManager[None]:
    """Held from a moving run's plan to its last move: two runs at once (two ``expire
    --force``, or one beside the daemon's) each planned the same files, then failed on the
    ones the other had moved ("does not exist") and split one month's archive into two
    batches. The second now waits (``waiting`` is told first), then plans what is left."""
    return held_lock(paths.memoryd_dir / "expire.lock", waiting=waiting)


def run(
    cfg: Config,
    paths: Paths,
    store: Store,
    now: float,
    *,
    dry_run: bool = False,
    waiting: Callable[[], None] | None = None,
) -> ExpireResult:
    """Plan (and unless ``dry_run`` apply) this month's expire by hand, exactly the plan,
    uncapped; notify when something moved. The daemon runs :func:`run_scheduled`."""
    if dry_run:
        return _run(cfg, paths, store, now, dry_run=True)
    with one_run_at_a_time(paths, waiting):
        return _run(cfg, paths, store, now, dry_run=False)


def _run(cfg: Config, paths: Paths, store: Store, now: float, *, dry_run: bool) -> ExpireResult:
    repaired: list[str] = []
    mover = mover_for(store, paths)
    if not dry_run:
        repaired = mover.repair()
    snap, plan = _planned(cfg, paths, store, now, learn=not dry_run)
    if dry_run:
        summary = summary_line(plan, None, 0)
        return ExpireResult(
            summary, plan, "dry_run", unfinished_journal_entries=len(mover.unfinished())
        )
    if snap.skipped_names:
        with store.transaction():
            store.bump("skipped_names", len(snap.skipped_names))
    batch = expire_batch(plan.month)
    moved, failed, summary = _apply(plan, plan.archive, mover, paths.workspace, batch)
    result = ExpireResult(
        summary,
        plan,
        "manual",
        changed=bool(moved),
        batch=batch,
        moved=moved,
        failed=failed,
        repaired=repaired,
    )
    if moved or failed:
        result.notified = _send(cfg, paths, _notify_lines(result.summary, moved, failed))
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


def _restored_on_demand_since(
    store: Store, workspace: Path, since: float, batch_prefix: str = RESTORE_ON_DEMAND_BATCH
) -> set[str]:
    """Workspace-relative paths restore on demand brought back at or after ``since``
    (``batch_prefix`` ``undo:expire:``: those the person restored from expire's archive)."""
    return {
        rel
        for dst in undo_destinations_since(store, batch_prefix, since)
        if (rel := relative_to_workspace(workspace, dst)) is not None
    }


def run_scheduled(cfg: Config, paths: Paths, store: Store, now: float) -> ExpireResult:
    """The daemon's monthly run, on rails (:mod:`memoryd.policy.rails`): without the user's
    yes it only reports; with it, it moves at most ``expire.max_fraction_per_run`` of the
    files, surest first. Its batch ``expire:<month>:scheduled:…`` lets a second run of the
    month count what the first moved against the same cap."""
    consent = rails.consent_of(cfg.expire.auto, store.get_meta(rails.CONSENT_META))
    frac = cfg.expire.max_fraction_per_run
    if not consent.given:
        _, plan = _planned(cfg, paths, store, now)
        n, participants = len(plan.archive), plan.files
        summary = (
            f"expire (report only): would archive {n} of {participants} memory files; "
            "nothing moved until you say yes once (`memoryd expire --schedule`, "
            "or expire.auto = true)"
        )
        result = ExpireResult(summary, plan, "report_only")
        if n:
            lines = [
                summary,
                *_first(plan.archive, 20, lambda a: f"• would archive {a.path}  ({a.reason})"),
            ]
            lines.append(
                f"once allowed, a scheduled run moves at most "
                f"{rails.run_limit(participants, frac)} of these {participants} files "
                f"(expire.max_fraction_per_run = {frac:g}); `memoryd expire --force` moves "
                "exactly the plan it prints"
            )
            lines += _restores_since_last_run(store)
            result.notified = _send(cfg, paths, lines)
        return result

    with one_run_at_a_time(paths):
        return _run_with_consent(cfg, paths, store, now, consent)


def _run_with_consent(
    cfg: Config, paths: Paths, store: Store, now: float, consent: rails.Consent
) -> ExpireResult:
    frac = cfg.expire.max_fraction_per_run
    mover = mover_for(store, paths)
    repaired = mover.repair()
    snap, plan = _planned(cfg, paths, store, now)
    moved_before = moved_sources(store, scheduled_expire_prefix(plan.month))
    already = len(moved_before)
    # The files taking part this month: the plan's, and those an earlier run moved out of
    # it. A file moved and restored since is in the plan again: counted once, not twice.
    in_plan = {i.path for i in (*plan.archive, *plan.keep)}
    gone = {relative_to_workspace(snap.workspace, src) or src for src in moved_before} - in_plan
    participants = plan.files + len(gone)
    since = now - rails.RESTORED_GRACE_DAYS * DAY
    restored = _restored_on_demand_since(store, snap.workspace, since)
    wanted, spared = rails.spare_restored(plan.archive, restored)
    by_hand = _restored_on_demand_since(store, snap.workspace, since, UNDO_BATCH + EXPIRE_BATCH)
    wanted, undone = rails.spare_restored(wanted, by_hand)
    take, held = rails.cap(wanted, participants, frac, _surest_first(snap), already)
    batch = scheduled_expire_prefix(plan.month) + str(time.time_ns())
    moved, failed, summary = _apply(plan, take, mover, paths.workspace, batch)
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
    if undone:
        summary += (
            f"; {len(undone)} kept: you restored them in the last "
            f"{rails.RESTORED_GRACE_DAYS} days (`memoryd pin` keeps a note for good)"
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
        undone=undone,
        moved_earlier=already,
        participants=participants,
        consent=consent.by,
    )
    needed_again = _restores_since_last_run(store)
    if moved or failed or held or spared or undone or needed_again:
        lines = _notify_lines(summary, moved, failed)
        lines += _first(held, 10, lambda h: f"◦ held back {h.path}  ({h.reason})", "more held back")
        lines += [f"◦ kept {a.path}  (restored on demand lately)" for a in spared[:10]]
        lines += [f"◦ kept {a.path}  (you restored it lately)" for a in undone[:10]]
        lines += needed_again
        result.notified = _send(cfg, paths, lines)
    return result
