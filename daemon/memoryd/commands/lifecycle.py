"""Lifecycle commands: expire, reflect, promote, search, explain, mark, unmark, pin, unpin, restore.

Thin: each command reads the state, calls the job or policy that decides, and
prints. Read-only commands (``expire`` without ``--force``, ``search``,
``explain``) open the database read-only, so a dry run changes nothing at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import clock
from ..cli import Context, UsageError, json_dumps, positive_int

if TYPE_CHECKING:
    from ..jobs.expire import PlanItem
    from ..policy.rails import Consent
    from ..store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("expire", help="archive old memory files nobody uses (dry run by default)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    mode.add_argument("--force", action="store_true", help="perform exactly the plan")
    _common(p)
    p.set_defaults(func=cmd_expire)

    p = sub.add_parser("reflect", help="write the daily usage report (reports/reflect-DAY.md)")
    _common(p)
    p.set_defaults(func=cmd_reflect)

    p = sub.add_parser("promote", help="list promotion candidates (promote_report.md)")
    p.add_argument("--apply", action="store_true", help="mark the candidates promoted")
    _common(p)
    p.set_defaults(func=cmd_promote)

    p = sub.add_parser("search", help="rank memory files by relevance score to a query")
    p.add_argument("query", nargs="+", help="the words to look for")
    p.add_argument("--top", type=positive_int, default=10, help="how many files (default 10)")
    _common(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("explain", help="every signal and every rule's verdict for one file")
    p.add_argument("path", help="workspace-relative (memory/x.md) or absolute path")
    _common(p)
    p.set_defaults(func=cmd_explain)

    for name, helptext in (
        ("mark", "mark a file: never archived, always a promotion candidate"),
        ("unmark", "remove a user mark"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("paths", nargs="+", metavar="PATH")
        p.set_defaults(func=cmd_mark, mark_kind="marked", remove=name == "unmark")
    for name, helptext in (
        ("pin", "pin files by glob (workspace-relative): never archived"),
        ("unpin", "remove a pin"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("paths", nargs="*", metavar="GLOB", help="none: list the pins")
        p.set_defaults(func=cmd_mark, mark_kind="pinned", remove=name == "unpin")

    p = sub.add_parser("restore", help="undo journaled moves: files back where they were")
    p.add_argument("paths", nargs="*", metavar="PATH", help="original or archived path")
    p.add_argument("--last", action="store_true", help="undo the whole last batch of moves")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_restore)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--no-scan",
        action="store_true",
        help="decide on the hits already counted (no catch-up scan)",
    )


# --------------------------------------------------------------------------- helpers


def _maybe_scan(args: argparse.Namespace, ctx: Context) -> None:
    """Count new hits before deciding, so a decision never rests on stale counts.

    With the daemon running this is a no-op rescan (a stat per transcript). It
    writes hits only, never a memory file; ``--no-scan`` skips it (and keeps the
    database read-only for a dry run).
    """
    if getattr(args, "no_scan", False) or not ctx.paths.state_dir.is_dir():
        return
    from .hits import run_scan

    run_scan(ctx)


def _workspace_or_fail(ctx: Context) -> Path:
    ws = ctx.paths.workspace
    if not ws.is_dir():
        raise UsageError(
            f"workspace {ws} is not a folder (set openclaw.workspace in the config, or check "
            "openclaw.json's agents.defaults.workspace)"
        )
    return ws


def to_relpath(ctx: Context, raw: str) -> str:
    """A user-given path as its key: workspace-relative (``memory/x.md``), or ``tiers/<note>``
    for a file of the tier store (``tiers/warm/x.md``, or its path on disk).
    """
    from ..tierstore import key_of_tier_path
    from ..workspace import normalize

    ws = ctx.paths.workspace
    if raw.startswith("tiers/"):
        key = key_of_tier_path(raw)
        if key is None:
            raise UsageError(f"{raw}: not a note of the tier store (tiers/<tier>/<name>.md)")
        return key
    p = Path(raw).expanduser()
    absolute = Path(os.path.abspath(p if p.is_absolute() else Path.cwd() / p))
    for root in {ctx.paths.tiers_root, Path(os.path.realpath(ctx.paths.tiers_root))}:
        try:
            in_store = absolute.relative_to(root)
        except ValueError:
            continue
        key = key_of_tier_path(in_store.as_posix())
        if key is not None:
            return key
    for root in (ws, Path(os.path.realpath(ws))):
        try:
            rel = absolute.relative_to(root)
        except ValueError:
            continue
        if (p.is_absolute() or absolute.exists()) and rel.parts:
            return rel.as_posix()
    if p.is_absolute():
        raise UsageError(f"{raw}: not inside the workspace {ws}")
    norm = normalize(raw)
    if norm is None or norm.startswith(("../", "/")) or norm == "..":
        raise UsageError(f"{raw}: not a path inside the workspace")
    return norm


def _out(ctx: Context, args: argparse.Namespace, doc: Any, text: list[str]) -> None:
    if getattr(args, "json", False):
        ctx.print(json_dumps(doc))
    else:
        for line in text:
            ctx.print(line)


def _record(ctx: Context, job: str, now: float, summary: str) -> None:
    from ..jobs import period_key
    from ..service.schedule import schedule_timezone

    store = ctx.store()
    with store.transaction():
        store.record_job(job, period_key(job, now, schedule_timezone(ctx.cfg)), "ok", now, summary)


# --------------------------------------------------------------------------- expire


def cmd_expire(args: argparse.Namespace, ctx: Context) -> int:
    from ..jobs import expire as job

    _workspace_or_fail(ctx)
    _maybe_scan(args, ctx)
    now = clock.now()
    if not args.force:
        result = job.run(ctx.cfg, ctx.paths, ctx.read_store(), now, dry_run=True)
        plan = result.plan
        doc: dict[str, Any] = {
            "dry_run": True,
            "archive": [a.as_dict() for a in plan.archive],
            "keep": [k.as_dict() for k in plan.keep],
        }
        if plan.skipped_names:
            doc["skipped_names"] = list(plan.skipped_names)
        unfinished = result.unfinished_journal_entries
        if unfinished:
            doc["unfinished_journal_entries"] = unfinished
        text = [result.summary + " (nothing changed; --force applies exactly this plan)"]
        text += [f"  archive {a.path} → {a.to}  ({a.reason})" + _chance(a) for a in plan.archive]
        if unfinished:
            text.append(f"  note: {unfinished} unfinished journal entries will be repaired first")
        consent = _consent(ctx)
        doc["scheduled_runs"] = consent.describe()
        if not consent.given:
            text.append(
                "  note: --force is also your yes to the daemon's scheduled expire, which until "
                f"then only reports (it then moves at most "
                f"{ctx.cfg.expire.max_fraction_per_run:.0%} of the files a run)"
            )
        _out(ctx, args, doc, text)
        return 0
    store = ctx.store()
    first_yes = _record_consent(ctx, store)
    result = job.run(ctx.cfg, ctx.paths, store, now, dry_run=False)
    _record(ctx, "expire", now, result.summary)
    moved = [m.item for m in result.moved]
    doc = {
        "dry_run": False,
        "batch": result.batch,
        "archive": [
            {"path": m.item.path, "to": m.item.to, "reason": m.item.reason, "id": m.id}
            for m in result.moved
        ],
        "keep": [k.as_dict() for k in result.plan.keep],
        "failed": [f.as_dict() for f in result.failed],
        "repaired": result.repaired,
    }
    if result.plan.skipped_names:
        doc["skipped_names"] = list(result.plan.skipped_names)
    text = [*(f"repaired: {r}" for r in result.repaired), result.summary]
    text += [f"  archived {m.path} → {m.to}  ({m.reason})" for m in moved]
    text += [f"  FAILED {f.path}: {f.error}" for f in result.failed]
    if moved:
        text.append("undo with: memoryd restore --last")
    if first_yes:
        frac = ctx.cfg.expire.max_fraction_per_run
        text.append(
            "the daemon's scheduled expire may now archive too (at most "
            f"{frac:.0%} of the files a run; expire.max_fraction_per_run)"
        )
    doc["consent"] = {"first": first_yes, "by": "expire --force"}
    _out(ctx, args, doc, text)
    return 1 if result.failed else 0


def _consent(ctx: Context) -> Consent:
    """The scheduled expire's consent as recorded (read-only; a new install has none)."""
    from ..policy import rails

    return rails.consent_of(ctx.cfg.expire.auto, ctx.read_store().get_meta(rails.CONSENT_META))


def _record_consent(ctx: Context, store: Store) -> bool:
    """``expire --force`` by hand is the user's yes to scheduled archiving; True the first time.

    Recorded before the moves, so a run interrupted half-way still counts as the yes it was.
    """
    from ..policy import rails

    with store.transaction():
        first = store.get_meta(rails.CONSENT_META) is None
        if first:
            store.set_meta(rails.CONSENT_META, rails.consent_record(clock.now()))
    return first


def _chance(item: PlanItem) -> str:
    """``  [needed in 60 d: 4%]`` when the policy gave the file a probability."""
    p = item.p_need
    return "" if p is None else f"  [chance needed in 60 days: {p:.0%}]"


# --------------------------------------------------------------------------- reports


def cmd_reflect(args: argparse.Namespace, ctx: Context) -> int:
    from ..jobs import reflect as job

    _workspace_or_fail(ctx)
    _maybe_scan(args, ctx)
    now = clock.now()
    result = job.run(ctx.cfg, ctx.paths, ctx.store(), now)
    _record(ctx, "reflect", now, result.summary)
    _out(ctx, args, result.as_dict(), [result.summary, f"report: {result.report}"])
    return 0


def cmd_promote(args: argparse.Namespace, ctx: Context) -> int:
    from ..jobs import promote as job

    _workspace_or_fail(ctx)
    _maybe_scan(args, ctx)
    now = clock.now()
    result = job.run(ctx.cfg, ctx.paths, ctx.store(), now, apply=args.apply)
    _record(ctx, "promote", now, result.summary)
    text = [result.summary]
    for c in result.candidates:
        text.append(f"  {c.path}  [{c.category}]  {c.reason}")
    text.append(f"report: {result.report}")
    _out(ctx, args, result.as_dict(), text)
    return 0


# --------------------------------------------------------------------------- search


def cmd_search(args: argparse.Namespace, ctx: Context) -> int:
    from ..policy import score as sp
    from ..reports import score_row
    from ..signals import snapshot

    _workspace_or_fail(ctx)
    _maybe_scan(args, ctx)
    snap = snapshot(ctx.cfg, ctx.paths, ctx.read_store(), clock.now())
    query = " ".join(args.query)
    queries = sp.prepare_queries([query])
    if not queries:
        raise UsageError(f"{query!r}: no words to search for")
    scores = [
        sp.score(sig, sp.Document.of(snap.text(sig.path)), queries, ctx.cfg.score)
        for sig in snap.signals
    ]
    ranked = sorted(scores, key=lambda s: (-s.total, s.path))[: args.top]
    w = ctx.cfg.score
    doc = {
        "query": query,
        "words": queries[0][1],
        "weights": {
            "keyword": w.keyword_weight,
            "time": w.time_weight,
            "access": w.access_weight,
            "tag": w.tag_weight,
        },
        "results": [score_row(s) for s in ranked],
    }
    text = [f"{'score':>6} {'keyword':>8} {'time':>6} {'access':>7} {'tag':>5}  file"]
    for s in ranked:
        text.append(
            f"{s.total:6.3f} {s.keyword or 0:8.2f} {s.time:6.2f} {s.access:7.2f} "
            f"{s.tag or 0:5.2f}  {s.path}"
        )
    _out(ctx, args, doc, text)
    return 0


# --------------------------------------------------------------------------- explain


def cmd_explain(args: argparse.Namespace, ctx: Context) -> int:
    from ..mover import mover_for
    from ..policy import expire as ep
    from ..policy import promote as pp
    from ..policy import score as sp
    from ..signals import snapshot, sparkline

    _workspace_or_fail(ctx)
    _maybe_scan(args, ctx)
    rel = to_relpath(ctx, args.path)
    store = ctx.read_store()
    snap = snapshot(ctx.cfg, ctx.paths, store, clock.now())
    journal = [
        {"id": r.id, "op": r.op, "src": r.src, "dst": r.dst, "state": r.state, "reason": r.reason}
        for r in mover_for(store, ctx.paths).find(ctx.paths.workspace / rel)
    ]
    sig = snap.by_path.get(rel)
    if sig is None:
        doc: dict[str, Any] = {"path": rel, "memory_file": False, "journal": journal}
        text = [f"{rel}: not a memory file of {snap.workspace} right now"]
        text += [
            f"  journal #{j['id']}: {j['op']} {j['src']} → {j['dst']} ({j['state']}; {j['reason']})"
            for j in journal
        ]
        if journal:
            text.append(f"  bring it back with: memoryd restore {rel}")
        _out(ctx, args, doc, text)
        return 1
    cfg = ctx.cfg
    if cfg.expire.policy == "seed":
        exp = ep.decide(sig, cfg.expire, snap.marked, snap.pins)
    else:
        from ..jobs.expire import policy_decisions

        exp = next(d for d in policy_decisions(cfg, snap) if d.path == rel)
    text_body = snap.text(rel)
    docu = sp.Document.of(text_body)
    queries = sp.prepare_queries(snap.recent_queries(cfg.score.query_window_days))
    sc = sp.score(sig, docu, queries, cfg.score)
    pro = pp.decide(
        sig, text_body, cfg.promote, marked=rel in snap.marked, promoted=rel in snap.promoted
    )
    since = sig.days_since_hit
    from ..signals import hit_strengths, load_hit_rows, strength_summary

    rows = load_hit_rows(store.conn, paths=[rel], agents=snap.agents)
    strength = strength_summary(rows, hit_strengths(rows), rel)
    lines = [
        f"{rel} — {sig.kind} note, {sig.size} bytes",
        f"  created {clock.iso(sig.created)} (from its {sig.created_from}), "
        f"{sig.age_days:.1f} days old",
        f"  hits: {sig.hits_7d} in 7 days, {sig.hits_14d} in 14, {sig.hits_30d} in 30, "
        f"{sig.hits_total} in total"
        + (f"; last {clock.iso(sig.last_hit)} ({since:.1f} days ago)" if since is not None else ""),
        f"  strength: {strength['strong']} strong ({strength['first']} retrieved first, "
        f"{strength['read']} read after a search, {strength['read_directly']} read directly); "
        f"{strength['came_along']} came along (rank 2 or lower, not read)"
        + (f", {strength['rank_unknown']} of unknown rank" if strength["rank_unknown"] else ""),
        f"  distinct queries: {sig.distinct_queries}; distinct days with a hit: "
        f"{sig.distinct_days}",
        "  activation B = ln Σ t^-0.5 (t in days, ≥ 1 hour): "
        + ("none (never hit)" if sig.activation is None else f"{sig.activation:.3f}"),
        f"  trend: {sig.trend} (3-day rate {sig.fast_rate:.3f}/day vs 21-day rate "
        f"{sig.slow_rate:.3f}/day)",
        f"  daily hits, last 30 days: {sparkline(sig.daily)}",
        f"  user marks: {'marked' if rel in snap.marked else 'not marked'}"
        f"{', promoted before' if rel in snap.promoted else ''}",
        "",
        f"expire: {exp.action.upper()} — {exp.reason} "
        f"[policy: {cfg.expire.policy}, rule: {exp.rule}]"
        + (
            f"; chance needed in 60 days: {exp.numbers['p_need']:.0%}"
            if "p_need" in exp.numbers
            else ""
        ),
        f"score: {sc.total:.3f} = "
        + (
            f"{cfg.score.keyword_weight}×{sc.keyword:.2f} keyword + "
            f"{cfg.score.time_weight}×{sc.time:.2f} time + "
            f"{cfg.score.access_weight}×{sc.access:.2f} access + "
            f"{cfg.score.tag_weight}×{sc.tag:.2f} tag"
            if sc.keyword is not None and sc.tag is not None
            else f"time {sc.time:.2f} and access {sc.access:.2f} only (no queries to match)"
        ),
    ]
    if sc.query:
        lines.append(f"  best-matching recent query: “{sc.query}”")
    lines.append(f"  tags: {', '.join(docu.tags) if docu.tags else 'none (tag match 0.5)'}")
    prune_state = "on" if cfg.score.prune_enabled else "off"
    verdict = "below" if sc.total < cfg.score.prune_threshold else "at or above"
    lines.append(
        f"  prune: {verdict} the threshold {cfg.score.prune_threshold} (pruning is {prune_state})"
    )
    if pro.candidate:
        lines.append(
            f"promote: CANDIDATE — {pro.reason}; category {pro.category} ({pro.category_reason})"
        )
    else:
        lines.append(f"promote: not a candidate — {pro.reason}")
    for j in journal:
        lines.append(f"journal #{j['id']}: {j['op']} {j['src']} → {j['dst']} ({j['state']})")
    doc = {
        "path": rel,
        "memory_file": True,
        "signals": {
            "kind": sig.kind,
            "size": sig.size,
            "created": clock.iso(sig.created),
            "created_from": sig.created_from,
            "age_days": round(sig.age_days, 3),
            "hits_7d": sig.hits_7d,
            "hits_14d": sig.hits_14d,
            "hits_30d": sig.hits_30d,
            "hits_total": sig.hits_total,
            "last_hit": clock.iso(sig.last_hit),
            "distinct_queries": sig.distinct_queries,
            "distinct_days": sig.distinct_days,
            "strength": strength,
            "activation": sig.activation,
            "fast_rate": sig.fast_rate,
            "slow_rate": sig.slow_rate,
            "trend": sig.trend,
            "daily": list(sig.daily),
            "marked": rel in snap.marked,
            "promoted": rel in snap.promoted,
        },
        "expire": {
            "policy": cfg.expire.policy,
            "action": exp.action,
            "rule": exp.rule,
            "reason": exp.reason,
            "numbers": dict(exp.numbers),
        },
        "score": {
            "total": sc.total,
            "keyword": sc.keyword,
            "time": sc.time,
            "access": sc.access,
            "tag": sc.tag,
            "query": sc.query,
            "tags": list(docu.tags),
            "prune_threshold": cfg.score.prune_threshold,
            "prune_enabled": cfg.score.prune_enabled,
        },
        "promote": {
            "candidate": pro.candidate,
            "reason": pro.reason,
            "rules": list(pro.rules),
            "category": pro.category,
            "category_reason": pro.category_reason,
        },
        "journal": journal,
    }
    _out(ctx, args, doc, lines)
    return 0


# --------------------------------------------------------------------------- marks


def cmd_mark(args: argparse.Namespace, ctx: Context) -> int:
    from ..workspace import is_memory_relpath

    kind = args.mark_kind
    if kind == "pinned" and not args.paths:  # listing the pins changes nothing
        pins = sorted(ctx.read_store().marks("pinned"))
        for glob in pins:
            ctx.print(glob)
        for glob in ctx.cfg.expire.pinned:
            ctx.print(f"{glob}  (from the config)")
        if not pins and not ctx.cfg.expire.pinned:
            ctx.print("no pins (pin files with: memoryd pin 'memory/projects/*')")
        return 0
    store = ctx.store()
    keys = []
    for raw in args.paths:
        if kind == "pinned":
            key = raw.replace("\\", "/").removeprefix("./")
            if not key or key.startswith(("/", "../")):
                raise UsageError(f"{raw}: a pin is a workspace-relative glob (memory/projects/*)")
        else:
            key = to_relpath(ctx, raw)
            if not (is_memory_relpath(key) or key.startswith("tiers/")):
                raise UsageError(f"{raw}: not a memory file (MEMORY.md, memory.md, memory/**/*.md)")
            if (
                not args.remove
                and not key.startswith("tiers/")
                and not (ctx.paths.workspace / key).is_file()
            ):
                raise UsageError(f"{raw}: no such file in {ctx.paths.workspace}")
        keys.append(key)
    with store.transaction():
        for key in keys:
            if args.remove:
                changed = store.clear_mark(key, kind)
                ctx.print(f"{'un' + kind[:-2] if kind == 'pinned' else 'unmarked'} {key}"
                          if changed else f"{key}: was not {kind}")  # fmt: skip
            else:
                changed = store.set_mark(key, kind)
                ctx.print(f"{kind} {key}" if changed else f"{key}: already {kind}")
    return 0


# --------------------------------------------------------------------------- restore


def cmd_restore(args: argparse.Namespace, ctx: Context) -> int:
    from ..mover import MoveError, mover_for

    if bool(args.paths) == bool(args.last):
        raise UsageError("give PATH... or --last (not both)")
    ws = ctx.paths.workspace
    store = ctx.store()
    mover = mover_for(store, ctx.paths)
    repaired = mover.repair()
    restored: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []

    def rel(p: str | None) -> str | None:
        if p is None:
            return None
        for root in (ws, Path(os.path.realpath(ws))):
            try:
                return Path(p).relative_to(root).as_posix()
            except ValueError:
                continue
        return p

    def undo(rec_id: int, label: str) -> None:
        rec = mover.get(rec_id)
        assert rec is not None
        try:
            mover.undo(rec_id)
        except (MoveError, OSError) as exc:
            errors.append({"path": label, "error": str(exc)})
            return
        restored.append({"id": rec_id, "from": rel(rec.dst), "to": rel(rec.src)})
        _remove_empty_archive_folders(ws, rel(rec.dst), ctx.cfg.archive.dir)

    if args.last:
        batch = mover.last_batch()
        if batch is None:
            errors.append({"path": "--last", "error": "no journaled move to undo"})
        else:
            for rec in reversed(mover.batch_entries(batch)):
                if rec.state == "done" and rec.op in ("move", "copy") and rec.undo_of is None:
                    undo(rec.id, rel(rec.src) or rec.src)
    else:
        for raw in args.paths:
            found = []
            try:
                key = to_relpath(ctx, raw)
                found = mover.find(ws / key)
            except UsageError:
                key = raw
            if not found and Path(raw).is_absolute():
                found = mover.find(raw)
            if not found:
                errors.append({"path": raw, "error": "no journaled move of this path to undo"})
                continue
            undo(found[0].id, key)
    doc = {"restored": restored, "errors": errors, "repaired": repaired}
    text = [f"repaired: {r}" for r in repaired]
    text += [f"restored {r['from']} → {r['to']}" for r in restored]
    _out(ctx, args, doc, text)
    if not args.json:
        for e in errors:
            print(f"memoryd restore: cannot restore {e['path']}: {e['error']}", file=sys.stderr)
    return 1 if errors else 0


def _remove_empty_archive_folders(ws: Path, archived: str | None, template: str) -> None:
    """After a restore, the archive folders it left empty go (the month's, and any below it).

    Only folders of the archive, only empty ones (``rmdir`` refuses anything else).
    """
    from ..policy.expire import archive_folder_of

    if archived is None or archived.startswith("/"):
        return
    found = archive_folder_of(archived, template)
    if found is None:
        return
    folder, removable = found
    stop = ws / folder
    current = (ws / archived).parent
    while stop in current.parents or (current == stop and removable):
        try:
            current.rmdir()
        except OSError:  # not empty (other archived notes), or not ours to remove
            return
        if current == stop:
            return
        current = current.parent
