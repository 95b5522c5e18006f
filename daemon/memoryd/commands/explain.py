"""``memoryd explain``: every signal of one file and every rule's verdict on it (read-only)."""

from __future__ import annotations

import argparse
from typing import Any

from .. import clock
from .common import add_output_options, emit, ready_to_decide, to_relpath
from .context import Context, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="every signal and every rule's verdict for one file")
    p.add_argument("path", help="workspace-relative (memory/x.md) or absolute path")
    add_output_options(p)
    p.set_defaults(func=cmd_explain)


def cmd_explain(args: argparse.Namespace, ctx: Context) -> int:
    from ..mover import mover_for
    from ..policy import promote as pp
    from ..policy import score as sp
    from ..policy.candidates import days_old
    from ..policy.expire_plan import FIXED_RULES, PRUNE_RULES, decision_of, planned_decision_of
    from ..signals import FIRST_SEEN, FUTURE_MTIME, snapshot, sparkline

    now = ready_to_decide(args, ctx)
    rel = to_relpath(ctx, args.path)
    store = ctx.read_store()
    snap = snapshot(ctx.cfg, ctx.paths, store, now)
    rel = snap.listed_as(rel)  # memory/Projects.md typed on a Mac: memory/projects.md
    journal = [
        {"id": r.id, "op": r.op, "src": r.src, "dst": r.dst, "state": r.state, "reason": r.reason}
        for r in mover_for(store, ctx.paths).find(ctx.paths.workspace / rel)
    ]
    # Only this file's hits are read (and those of its calls, which rank them): the
    # verdicts are per file, so explaining one never costs what the whole table holds.
    sig = snap.signals_of(rel)
    if sig is None and not journal and _explain_extra(ctx, args, store, rel, now):
        return 0
    if sig is None and not journal:
        # Not a memory file and no move of it in force: most likely a typo, the user's
        # input (exit 2), said on stderr like every other path memoryd cannot take.
        if rel.startswith("tiers/"):
            raise UsageError(
                f"{args.path}: a note of the tier store; explain covers the workspace's memory "
                "files (`memoryd organize --dry-run` shows the tier store's plan and why)"
            )
        what = "not a memory file" if (ctx.paths.workspace / rel).exists() else "no such file"
        raise UsageError(
            f"{rel}: {what} in {snap.workspace}, and no move of it in memoryd's journal "
            "(memory files: MEMORY.md, memory.md, memory/**/*.md)"
        )
    if sig is None:
        doc: dict[str, Any] = {"path": rel, "memory_file": False, "journal": journal}
        text = [f"{rel}: not a memory file of {snap.workspace} right now"]
        text += [
            f"  journal #{j['id']}: {j['op']} {j['src']} → {j['dst']} ({j['state']}; {j['reason']})"
            for j in journal
        ]
        if journal:
            text.append(f"  bring it back with: memoryd restore {rel}")
        emit(ctx, args, doc, text)
        return 1
    cfg = ctx.cfg
    # What the plan will do (pruning and capacity included), and the policy's keep it
    # overrides: "expire: KEEP" for a file the plan archives would mislead. The chance is
    # likely's as calibrated on the user's verdicts: the one part that reads every hit.
    from ..own_history import learned_policy
    from ..policy.calibration import shown_chance
    from ..policy.expire_plan import chance_shown, chance_source

    learned = learned_policy(cfg, ctx.paths, store, now)
    source = chance_source(cfg, learned)
    shown_as = chance_shown(cfg, learned)  # a percent, a band or "uncertain"
    policy_alone = decision_of(cfg, snap, rel, learned)  # (its hits read once, for both)
    exp = planned_decision_of(cfg, snap, rel, policy_alone, learned)
    own = policy_alone if exp.rule in PRUNE_RULES else None
    text_body = snap.text(rel)
    docu = sp.Document.of(text_body)
    queries = sp.prepare_queries(snap.recent_queries(cfg.score.query_window_days))
    sc = sp.score(sig, docu, queries, cfg.score)
    pro = pp.decide(
        sig,
        text_body,
        cfg.promote,
        marked=rel in snap.marked,
        promoted=rel in snap.promoted,
        mark_note=snap.mark_notes.get(rel),
    )
    since = sig.days_since_hit
    strength = snap.strength_summary(rel)
    # Hits (and marks) recorded under another spelling of this file (docs/paths.md).
    spellings = snap.attribution.spellings(rel)[1:]
    lines = [
        f"{rel} — {sig.kind} note, {sig.size} bytes",
        (
            f"  first listed by memoryd {clock.iso(sig.created)} (its own date is older: an "
            f"import counts as new), {days_old(sig.age_days)}"
            if sig.created_from == FIRST_SEEN
            else f"  first listed by memoryd {clock.iso(sig.created)} (its mtime is in the "
            f"future, no date it had), {days_old(sig.age_days)}"
            if sig.created_from == FUTURE_MTIME
            else f"  created {clock.iso(sig.created)} (from its {sig.created_from}), "
            f"{days_old(sig.age_days)}"
        ),
        f"  hits: {sig.hits_7d} in 7 days, {sig.hits_14d} in 14, {sig.hits_30d} in 30, "
        f"{sig.hits_total} in total"
        + (f"; last {clock.iso(sig.last_hit)} ({since:.1f} days ago)" if since is not None else ""),
        f"  strength: {strength['strong']} strong ({strength['first']} retrieved first, "
        f"{strength['read']} read after a search, {strength['read_directly']} read directly); "
        f"{strength['came_along']} came along (rank 2 or lower, not read)"
        + (f", {strength['rank_unknown']} of unknown rank" if strength["rank_unknown"] else ""),
    ]
    if spellings:
        lines.append(
            f"  recorded also as: {', '.join(spellings)} (the same file on this file "
            f"system: {snap.attribution.traits.describe()})"
        )
    chance = ""
    if "p_need" in exp.numbers:
        shown = shown_chance(float(exp.numbers["p_need"] or 0), *(shown_as or ("percent", 0.0)))
        chance = f"; chance needed in 60 days: {shown} ({source})"
    lines += [
        f"  distinct queries: {sig.distinct_queries}; distinct days with a hit: "
        f"{sig.distinct_days}",
        "  recall strength (higher with more and more recent hits): "
        + ("none (never hit)" if sig.activation is None else f"{sig.activation:.3f}"),
        f"  trend: {sig.trend} (3-day rate {sig.fast_rate:.3f}/day vs 21-day rate "
        f"{sig.slow_rate:.3f}/day)",
        f"  daily hits, last 30 days: {sparkline(sig.daily)}",
        f"  user marks: {'marked' if rel in snap.marked else 'not marked'}"
        f"{', promoted before' if rel in snap.promoted else ''}",
        "",
        f"expire: {exp.action.upper()} — {exp.reason} "
        f"[policy: {cfg.expire.policy}, rule: {exp.rule}]{chance}",
    ]
    why_low = low_chance_words(exp, sig, strength, source)
    if why_low:
        lines.append(f"  {why_low}")
    if own is not None:
        archives = "pruning" if exp.rule == "prune" else "capacity control"
        lines.append(
            f"  (the policy alone: {own.action.upper()} — {own.reason} [rule: {own.rule}]; "
            f"{archives} archives it)"
        )
    lines.append(
        f"score: {sc.total:.3f} = "
        + (
            f"{cfg.score.keyword_weight}×{sc.keyword:.2f} keyword + "
            f"{cfg.score.time_weight}×{sc.time:.2f} time + "
            f"{cfg.score.access_weight}×{sc.access:.2f} access + "
            f"{cfg.score.tag_weight}×{sc.tag:.2f} tag"
            if sc.keyword is not None and sc.tag is not None
            else f"time {sc.time:.2f} and access {sc.access:.2f} only (no queries to match)"
        )
    )
    if sc.query:
        lines.append(f"  best-matching recent query: “{sc.query}”")
    lines.append(f"  tags: {', '.join(docu.tags) if docu.tags else 'none (tag match 0.5)'}")
    prune_state = "on" if cfg.score.prune_enabled else "off"
    below = sc.total < cfg.score.prune_threshold
    if cfg.score.prune_enabled and below and exp.action == "keep" and exp.rule not in FIXED_RULES:
        # Below the threshold yet kept: the cap on one run's share, not a verdict to wait on.
        prune_state += (
            f"; kept this run: pruning and capacity archive at most "
            f"{cfg.score.max_prune_fraction:.0%} of the files in a run, the lowest scores first"
        )
    lines.append(
        f"  prune: {'below' if below else 'at or above'} the threshold "
        f"{cfg.score.prune_threshold} (pruning is {prune_state})"
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
            "recorded_as": spellings,
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
            **({"chance_source": source} if source is not None else {}),
            **(
                {"chance_shown": shown_chance(float(exp.numbers["p_need"] or 0), *shown_as)}
                if shown_as is not None and "p_need" in exp.numbers
                else {}
            ),
            **({"why_low": why_low} if why_low else {}),
            **(
                {"policy_verdict": {"action": own.action, "rule": own.rule, "reason": own.reason}}
                if own is not None
                else {}
            ),
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
    emit(ctx, args, doc, lines)
    # (printed and closed by then: Python's teardown of a heavy year's objects adds nothing)
    ctx.exit_at_once = True
    return 0


def _explain_extra(
    ctx: Context, args: argparse.Namespace, store: Any, rel: str, now: float
) -> bool:
    """``USER.md``'s neighbours OpenClaw also searches: a note of ``memory.search.extraPaths``
    (inside the workspace or outside it) is counted under the name OpenClaw reports and
    shown here with its hits; memoryd's jobs never move it. Whether ``rel`` was one."""
    from ..workspace import list_memory_files
    from .common import extra_paths_of

    ws = ctx.paths.workspace
    extra = extra_paths_of(ctx, ws)
    if not extra or rel not in {f.rel for f in list_memory_files(ws, (), None, extra)}:
        return False
    tally = store.hit_counts(now, (), None, total=True).get(rel)
    total = (tally.total or 0) if tally is not None else 0
    last = clock.iso(tally.last) if tally is not None and tally.last else None
    doc: dict[str, object] = {
        "path": rel,
        "memory_file": True,
        "extra_path": True,
        "hits_total": total,
        "last_hit": last,
        "journal": [],
    }
    text = [
        f"{rel}: searched by OpenClaw from memory.search.extraPaths",
        f"  hits: {total} in all{f', last {last}' if last else ''}",
        "  counted like a memory note; memoryd's jobs never move it (expire and promote "
        "manage MEMORY.md, USER.md and memory/ only)",
    ]
    emit(ctx, args, doc, text)
    return True


MANY_HITS = 5  # past hits that make a low chance look wrong to a reader, unless explained
LOW_CHANCE = 0.2  # a chance below this, with that many hits, is explained in plain words


def low_chance_words(
    exp: Any, sig: Any, strength: dict[str, Any], source: str | None
) -> str | None:
    """Why a note with many past hits gets a low chance, in plain words; None when
    the chance is not low, or the hits are few (nothing to explain). Pure.

    The chance (``likely``) follows *when and how* a note was used (silence since its last
    hit and last strong hit, the rhythm of its strong hits, how many only came along in
    results), not how many hits it has: twenty hits on one day a month ago read as one
    burst of use that is over."""
    p = exp.numbers.get("p_need") if hasattr(exp, "numbers") else None
    if not isinstance(p, float | int) or p >= LOW_CHANCE or sig.hits_total < MANY_HITS:
        return None
    days = sig.distinct_days
    since = sig.days_since_hit
    last = f"the last {since:.0f} days ago" if since is not None else "none recently"
    strong, along = strength.get("strong", 0), strength.get("came_along", 0)
    return (
        f"why so low with {sig.hits_total} past hits: the chance follows when and how the "
        f"note was used, not how many times. Its hits fell on {days} day"
        f"{'s' if days != 1 else ''}, {last}; {strong} were strong (retrieved first or read), "
        f"{along} only came along in a search's results. Notes used like this were seldom "
        f"needed again within 60 days ({source or 'the generic model'}). "
        "`memoryd mark` keeps it whatever the chance says."
    )
