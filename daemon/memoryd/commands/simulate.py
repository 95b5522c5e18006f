"""``memoryd simulate``: replay expire policies over the hits already counted.

Thin: it reads the workspace's files, the files memoryd archived (from the
journal), the hits with their strength and the search queries, computes the run
times of the expire cron, and hands plain values to
:func:`memoryd.policy.replay.replay`, which decides everything. Read-only: the
database is opened read-only and no file is touched.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Sequence
from datetime import tzinfo
from pathlib import Path
from typing import Any

from .. import clock
from ..cli import Context, UsageError, json_dumps, positive_int

DEFAULT_EXPIRE_CRON = "0 4 1 * *"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "simulate", help="replay expire policies on your own hit history (changes nothing)"
    )
    p.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="NAME",
        help="also replay this policy (repeatable); seed, cut30, none, the default and the "
        "configured one are always replayed",
    )
    p.add_argument(
        "--horizon",
        type=positive_int,
        default=60,
        metavar="DAYS",
        help="an archive is false when the file is hit within DAYS after it (default 60)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--no-scan", action="store_true", help="replay the hits already counted (no catch-up scan)"
    )
    p.set_defaults(func=cmd_simulate)


# --------------------------------------------------------------------------- run times


def fire_times(expr: str, tz: tzinfo, start: float, end: float) -> list[float]:
    """Every fire time of the cron ``expr`` in ``tz`` within [start, end] (epoch seconds).

    ``"off"`` (the job is switched off) replays the default expire cron. Read with
    :mod:`memoryd.timerules`, the parser configuration validation and ``status`` use, which a
    property test holds to the APScheduler trigger the daemon fires with.
    """
    from ..timerules import next_fire, parse, schedule_is_off

    if not expr.strip() or schedule_is_off(expr):
        expr = DEFAULT_EXPIRE_CRON
    spec = parse(expr)
    out: list[float] = []
    t = start
    while (fire := next_fire(spec, t, tz)) is not None and fire <= end:
        out.append(fire)
        t = fire + 1
    return out


# --------------------------------------------------------------------------- inputs


def archived_files(ctx: Context, store: Any) -> list[tuple[str, Path]]:
    """(original workspace-relative path, where it is now) of each file expire archived
    that is still in the archive (the journal says where it came from)."""
    from ..mover import archived_moves
    from ..ondemand import ARCHIVE_BATCH_PREFIX
    from ..workspace import relative_to_workspace

    ws = ctx.paths.workspace
    out: dict[str, Path] = {}
    for move in archived_moves(store, ARCHIVE_BATCH_PREFIX):
        src, dst = move.src, move.dst
        key = relative_to_workspace(ws, src)
        if key is not None and dst and os.path.isfile(dst) and not os.path.islink(dst):
            out[key] = Path(dst)  # the latest archive of that path wins
    return sorted(out.items())


def gather(ctx: Context, store: Any, now: float) -> dict[str, Any]:
    """Plain values for the replay: files, hits with strength, calls, texts."""
    from ..config import schedule_timezone
    from ..policy import matches_any
    from ..policy.replay import Call, ReplayFile, ReplayHit
    from ..signals import archive_excludes, created_time, file_kind, read_text
    from ..strength import hit_strengths, load_hit_rows
    from ..workspace import list_memory_files

    cfg, paths = ctx.cfg, ctx.paths
    ws = paths.workspace
    tz = schedule_timezone(cfg)
    agents = None
    if len({a.workspace for a in paths.agents}) > 1:
        agents = [a.id for a in paths.agents if a.workspace == ws]
    present = {
        f.rel: (f.size, f.mtime)
        for f in list_memory_files(ws, archive_excludes(ws, cfg.archive.dir))
    }
    on_disk = list(present)
    texts = {rel: read_text(ws, rel) for rel in present}
    for rel, where in archived_files(ctx, store):
        if rel in present:
            continue  # re-created (or back) at its old path: today's file counts
        st = where.stat()
        present[rel] = (st.st_size, st.st_mtime)
        texts[rel] = read_text(where.parent, where.name)
    rows = load_hit_rows(store.conn, agents=agents)
    # Hits and marks under another spelling of a file (a Mac's case- and normalization-
    # insensitive names) are that file's, as in every plan (docs/paths.md).
    from ..pathmatch import attribution_for, canonical_rows

    marks = store.marks("marked")
    owner = attribution_for(ws, list(present), {r.path for r in rows} | marks, probe=on_disk).owner
    rows = canonical_rows(rows, owner)
    strengths = hit_strengths(rows)
    first_hit: dict[str, float] = {}
    hits = []
    for r, s in zip(rows, strengths, strict=True):
        # A replay allows no clock skew (memoryd.store.hit_counts with skew=0): a hit dated
        # after now has not happened yet, as at each run t only hits with ts <= t count.
        if r.path not in present or r.ts > now:
            continue
        if r.ts < first_hit.get(r.path, math.inf):
            first_hit[r.path] = r.ts
        hits.append(
            ReplayHit(r.path, r.ts, r.kind, s.rank, s.read_at if r.kind == "search" else None)
        )
    marked = {owner.get(m, m) for m in marks}
    pins = (*cfg.expire.pinned, *store.marks("pinned"))
    files = []
    for rel, (size, mtime) in sorted(present.items()):
        created, source = created_time(rel, mtime, tz)
        if source == "mtime" and rel in first_hit:
            created = min(created, first_hit[rel])
        protected = (
            bool(matches_any(rel, cfg.expire.protect))
            or rel in marked
            or bool(matches_any(rel, pins))
        )
        files.append(ReplayFile(rel, created, size, protected, file_kind(rel)))
    seen_calls: dict[tuple[str, str], Call] = {}
    for r in rows:
        if r.kind == "search" and r.ts <= now and (r.agent, r.call_id) not in seen_calls:
            seen_calls[(r.agent, r.call_id)] = Call(r.ts, "")
    queries = dict(
        ((a, c), q)
        for a, c, q in store.conn.execute(
            "SELECT agent, call_id, query FROM calls WHERE query IS NOT NULL"
        )
    )
    calls = []
    for key, call in seen_calls.items():
        q = queries.get(key)
        if q and not q.startswith("__dreaming"):
            calls.append(Call(call.ts, q))
    return {
        "files": files,
        "hits": hits,
        "calls": calls,
        "texts": texts,
        "first_hit": min((h.ts for h in hits), default=None),
        "tz": tz,
    }


def restore_index(calls: Sequence[Any], texts: dict[str, str]) -> list[list[tuple[str, float]]]:
    """Per call: the files its query matches at or above the restore threshold, best first."""
    from ..policy.restore_match import RESTORE_THRESHOLD, _document, _words, match_score

    index: dict[str, set[str]] = {}
    for path, text in texts.items():
        for w in _document(text).words:
            index.setdefault(w, set()).add(path)
        for tag in _document(text).tags:
            index.setdefault(tag, set()).add(path)
    cache: dict[str, list[tuple[str, float]]] = {}
    out = []
    for call in calls:
        if call.query not in cache:
            near: set[str] = set()
            for w in _words(call.query):
                near |= index.get(w, set())
            scored = [(p, match_score(call.query, texts[p])) for p in near]
            cache[call.query] = sorted(
                ((p, s) for p, s in scored if s >= RESTORE_THRESHOLD),
                key=lambda ps: (-ps[1], ps[0]),
            )
        out.append(cache[call.query])
    return out


def policies_for(cfg: Any, extra: Sequence[str]) -> tuple[list[Any], str]:
    """The policies to replay, and the name of the one the expire job uses."""
    from ..policy import candidates as pc

    listed = [pc.policy_named("seed"), pc.policy_named("cut30"), pc.policy_named("none")]
    default = pc.policy_named(pc.DEFAULT_POLICY)
    if not any(p.same_as(default) for p in listed):
        listed.append(default)
    configured = configured_policy(cfg)
    job_name = configured.name
    match = next((p for p in listed if p.same_as(configured)), None)
    if match is None:
        match = next((p for p in pc.named_policies().values() if p.same_as(configured)), None)
        if match is not None:
            listed.append(match)
        else:
            configured.name = "configured"
            listed.append(configured)
    job_name = (match or configured).name
    for name in extra:
        try:
            p = pc.policy_named(name)
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
        if not any(q.same_as(p) for q in listed):
            listed.append(p)
    return listed, job_name


def configured_policy(cfg: Any) -> Any:
    """The policy ``[expire]`` selects, with the configured seed numbers for ``seed``."""
    from ..policy import candidates as pc

    name = getattr(cfg.expire, "policy", pc.DEFAULT_POLICY)
    if name == "seed":
        return pc.Seed(cfg.expire.min_age_days, cfg.expire.window_days, cfg.expire.max_hits)
    return pc.policy_named(name)


# --------------------------------------------------------------------------- the command


def cmd_simulate(args: argparse.Namespace, ctx: Context) -> int:
    from ..policy import candidates as pc
    from ..policy import replay as rp

    if not ctx.paths.workspace.is_dir():
        raise UsageError(f"workspace {ctx.paths.workspace} is not a folder")
    if not args.no_scan and ctx.paths.state_dir.is_dir():
        from .common import run_scan

        run_scan(ctx)
    now = clock.now()
    store = ctx.read_store()
    data = gather(ctx, store, now)
    policies, job_name = policies_for(ctx.cfg, args.policy)
    horizon = args.horizon
    runs: list[float] = []
    if data["first_hit"] is not None:
        lo = data["first_hit"] + rp.RUN_LEAD_DAYS * pc.DAY
        fires = fire_times(ctx.cfg.schedule.expire, data["tz"], lo, now - horizon * pc.DAY)
        runs = rp.run_times(fires, data["first_hit"], now, horizon)
    candidates = restore_index(data["calls"], data["texts"])
    results = rp.replay(
        data["files"],
        data["hits"],
        runs,
        policies,
        horizon,
        calls=data["calls"],
        restore_candidates=candidates.__getitem__,
    )
    doc = {
        "horizon_days": horizon,
        "runs": [clock.iso(t) for t in runs],
        "files": len(data["files"]),
        "hits": len(data["hits"]),
        "policies": [rp.result_document(r, clock.iso) for r in results],
        "default": job_name,
    }
    if args.json:
        ctx.print(json_dumps(doc))
    else:
        for line in text_report(doc, results):
            ctx.print(line)
    return 0


def text_report(doc: dict[str, Any], results: Sequence[Any]) -> list[str]:
    runs = doc["runs"]
    lines = [
        f"simulate: {len(runs)} runs of the expire schedule"
        + (f" ({runs[0][:10]} … {runs[-1][:10]})" if runs else "")
        + f", {doc['files']} files, {doc['hits']} hits; an archive is false when the file is "
        f"hit within {doc['horizon_days']} days; the expire job uses: {doc['default']}",
    ]
    if not runs:
        lines.append(
            f"  no run to replay yet: runs need 30 days of hits before them and "
            f"{doc['horizon_days']} days after"
        )
        return lines
    lines.append(
        f"  {'policy':<14} {'archived':>8} {'false':>6} {'rate':>6} {'strong':>6} "
        f"{'cold cov':>8} {'KB out':>7} {'restores':>8} {'caught':>6} {'needless':>8}"
    )
    for p in doc["policies"]:
        lines.append(
            f"  {p['name']:<14} {p['archived']:>8} {p['false_archives']:>6} "
            f"{p['false_archive_rate']:>6.1%} {p['strong_false_archives']:>6} "
            f"{p['cold_coverage']:>8.1%} {p['bytes_out_avg'] / 1024:>7.1f} "
            f"{p['restores']:>8} {p['restores_caught']:>6} {p['restores_needless']:>8}"
        )
    lost = [p for p in doc["policies"] if p["lost_most"]]
    if lost:
        lines.append("  lost most often (archived, then hit within the horizon):")
        for p in lost:
            lines.append(
                f"    {p['name']}: "
                + ", ".join(f"{x['path']} ×{x['times']}" for x in p["lost_most"][:3])
            )
    for p in doc["policies"]:
        if p.get("calibration"):
            lines.append(
                f"  calibration of {p['name']}: its chance of being needed within "
                f"{doc['horizon_days']} days, against what followed (a strong hit: read or "
                "retrieved first; any hit)"
            )
            lines.append(
                f"    {'predicted':>9} {'verdicts':>8} {'mean':>6} {'strong':>7} {'any hit':>8}"
            )
            for b in p["calibration"]:
                lines.append(
                    f"    {b['bin']:>9} {b['n']:>8} {b['predicted']:>6.2f} "
                    f"{b['observed_strong']:>7.2f} {b['observed_any']:>8.2f}"
                )
    return lines
