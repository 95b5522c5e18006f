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
from datetime import datetime
from pathlib import Path
from typing import Any

from ..config import Config, Paths
from ..mover import MoveError, Mover, mover_for
from ..policy import expire as expire_policy
from ..policy import rails
from ..policy import score as score_policy
from ..signals import DAY, Snapshot, snapshot
from ..store import Store
from . import JobResult


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
) -> dict[str, Any]:
    """The expire plan as a JSON-ready document (workspace-relative paths).

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

    archive, keep = [], []
    for d in decisions:
        if d.action == "archive":
            to = expire_policy.free_name(
                expire_policy.archive_relpath(d.path, cfg.archive.dir, month), exists
            )
            taken.add(to)
            item = {"path": d.path, "to": to, "reason": d.reason, "rule": d.rule}
            archive.append(item)
        else:
            item = {"path": d.path, "reason": d.reason, "rule": d.rule}
            keep.append(item)
        if "p_need" in d.numbers:
            item["p_need"] = d.numbers["p_need"]
    doc: dict[str, Any] = {
        "workspace": str(snap.workspace),
        "now": snap.now,
        "month": month,
        "policy": cfg.expire.policy,
        "archive": archive,
        "keep": keep,
    }
    if snap.skipped_names:
        doc["skipped_names"] = list(snap.skipped_names)
    return doc


def apply_plan(
    plan: dict[str, Any], mover: Mover, workspace: Path, batch: str
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Perform the plan's moves; (moved entries with journal ids, failures)."""
    moved, failed = [], []
    for item in plan["archive"]:
        try:
            move_id = mover.move(
                workspace / item["path"], workspace / item["to"], reason=item["reason"], batch=batch
            )
        except (MoveError, OSError) as exc:  # one file's trouble never stops the others
            failed.append({"path": item["path"], "error": str(exc)})
            continue
        moved.append({**item, "id": move_id})
    return moved, failed


def summary_line(plan: dict[str, Any], moved: int | None, failed: int) -> str:
    """The one line a run (or a dry run) is logged, recorded and notified with."""
    n = len(plan["archive"])
    total = n + len(plan["keep"])
    if moved is None:
        return f"expire (dry run): would archive {n} of {total} memory files"
    text = f"expire: archived {moved} of {total} memory files"
    return text + (f"; {failed} could not be moved" if failed else "")


def _notify_lines(
    summary: str, moved: list[dict[str, Any]], failed: list[dict[str, str]]
) -> list[str]:
    """The notification of a run that moved files: the first 20 moves and 5 failures."""
    lines = [summary] + [f"• {m['path']} → {m['to']}" for m in moved[:20]]
    if len(moved) > 20:
        lines.append(f"… and {len(moved) - 20} more")
    lines += [f"✗ {f['path']}: {f['error']}" for f in failed[:5]]
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


def run(cfg: Config, paths: Paths, store: Store, now: float, *, dry_run: bool = False) -> JobResult:
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
        plan["unfinished_journal_entries"] = len(mover.unfinished())
        return JobResult(summary_line(plan, None, 0), plan, changed=False)
    if snap.skipped_names:
        with store.transaction():
            store.bump("skipped_names", len(snap.skipped_names))
    batch = f"expire:{plan['month']}:{time.time_ns()}"
    moved, failed = apply_plan(plan, mover, paths.workspace, batch)
    data = {**plan, "batch": batch, "moved": moved, "failed": failed, "repaired": repaired}
    result = JobResult(summary_line(plan, len(moved), len(failed)), data, changed=bool(moved))
    if moved or failed:
        from ..notify import notify

        data["notified"] = notify(
            cfg, paths, "\n".join(_notify_lines(result.summary, moved, failed))
        )
    return result


def _surest_first(snap: Snapshot) -> Callable[[dict[str, Any]], tuple[float, float, float]]:
    """Order for the cap: the least likely to be needed first (when the policy gives a
    chance), then the longest without a hit, then the oldest."""

    def key(item: dict[str, Any]) -> tuple[float, float, float]:
        p_need = item.get("p_need")
        chance = float(p_need) if p_need is not None else 0.0
        sig = snap.by_path.get(item["path"])
        if sig is None:
            return (chance, float("-inf"), float("-inf"))
        last = sig.last_hit
        return (chance, last if last is not None else float("-inf"), sig.created)

    return key


SCHEDULED_BATCH = "expire:{month}:scheduled:"  # + a nanosecond stamp; see run_scheduled


def _moved_by_schedule(store: Store, month: str) -> int:
    """Files the scheduled runs of ``month`` moved already (undone ones too: they moved)."""
    prefix = SCHEDULED_BATCH.format(month=month)  # digits, '-' and ':' only: no LIKE wildcard
    (n,) = store.conn.execute(
        "SELECT COUNT(*) FROM moves WHERE op = 'move' AND undo_of IS NULL "
        "AND state IN ('done', 'undone') AND batch LIKE ?",
        (prefix + "%",),
    ).fetchone()
    return int(n)


def _restored_on_demand_since(store: Store, workspace: Path, since: float) -> set[str]:
    """Workspace-relative paths restore on demand brought back at or after ``since``."""
    roots = {str(workspace).rstrip("/"), os.path.realpath(workspace).rstrip("/")}
    rows = store.conn.execute(
        "SELECT dst FROM moves WHERE op = 'move' AND state = 'done' AND undo_of IS NOT NULL "
        "AND batch LIKE 'restore-on-demand:%' AND COALESCE(finished, created) >= ?",
        (since,),
    ).fetchall()
    out = set()
    for (dst,) in rows:
        for root in roots:
            if dst and dst.startswith(root + "/"):
                out.add(dst[len(root) + 1 :])
    return out


def run_scheduled(cfg: Config, paths: Paths, store: Store, now: float) -> JobResult:
    """The daemon's monthly run, on rails (see :mod:`memoryd.policy.rails`).

    Without the user's yes it only reports (notification, log, ``status``); with it, it
    moves at most ``expire.max_fraction_per_run`` of the files taking part, surest first,
    and reports the rest of its plan as held back. Its batch is ``expire:<month>:scheduled:…``,
    so a second run of the month (the daemon died before it recorded the first) counts the
    files the first one moved against the same cap.
    """
    from ..notify import notify

    consent = rails.consent_of(cfg.expire.auto, store.get_meta(rails.CONSENT_META))
    if not consent.given:
        snap = snapshot(cfg, paths, store, now)
        plan = build_plan(cfg, snap)
        n = len(plan["archive"])
        participants = n + len(plan["keep"])
        summary = (
            f"expire (report only): would archive {n} of {participants} memory files; "
            "nothing moved until you say yes once (`memoryd expire --force`, "
            "or expire.auto = true)"
        )
        data = {**plan, "report_only": True, "consent": None, "moved": [], "failed": []}
        data["log"] = {"report_only": True, "would_archive": n, "files": participants}
        result = JobResult(summary, data, changed=False)
        if n:
            lines = [summary] + [
                f"• would archive {a['path']}  ({a['reason']})" for a in plan["archive"][:20]
            ]
            if n > 20:
                lines.append(f"… and {n - 20} more")
            frac = cfg.expire.max_fraction_per_run
            lines.append(
                f"once allowed, a scheduled run moves at most "
                f"{rails.run_limit(participants, frac)} of these {participants} files "
                f"(expire.max_fraction_per_run = {frac:g}); `memoryd expire --force` moves "
                "exactly the plan it prints"
            )
            lines += _restores_since_last_run(store)
            data["notified"] = notify(cfg, paths, "\n".join(lines))
        return result

    mover = mover_for(store, paths)
    repaired = mover.repair()
    snap = snapshot(cfg, paths, store, now)
    plan = build_plan(cfg, snap)
    already = _moved_by_schedule(store, plan["month"])
    participants = len(plan["archive"]) + len(plan["keep"]) + already
    frac = cfg.expire.max_fraction_per_run
    since = now - rails.RESTORED_GRACE_DAYS * DAY
    wanted, spared = rails.spare_restored(
        plan["archive"], _restored_on_demand_since(store, snap.workspace, since)
    )
    take, held = rails.cap(wanted, participants, frac, _surest_first(snap), already)
    batch = SCHEDULED_BATCH.format(month=plan["month"]) + str(time.time_ns())
    moved, failed = apply_plan({**plan, "archive": take}, mover, paths.workspace, batch)
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
    data = {
        **plan,
        "report_only": False,
        "consent": consent.by,
        "batch": batch,
        "moved": moved,
        "failed": failed,
        "held_back": held,
        "spared": spared,
        "repaired": repaired,
        "log": {
            "report_only": False,
            "consent": consent.by,
            "archived": len(moved),
            "held_back": len(held),
            "spared": len(spared),
            "failed": len(failed),
            "files": participants,
            "moved_earlier": already,
        },
    }
    result = JobResult(summary, data, changed=bool(moved))
    needed_again = _restores_since_last_run(store)
    if moved or failed or held or spared or needed_again:
        lines = _notify_lines(summary, moved, failed)
        lines += [f"◦ held back {h['path']}  ({h['reason']})" for h in held[:10]]
        if len(held) > 10:
            lines.append(f"… and {len(held) - 10} more held back")
        lines += [f"◦ kept {s['path']}  (restored on demand lately)" for s in spared[:10]]
        lines += needed_again
        data["notified"] = notify(cfg, paths, "\n".join(lines))
    return result
