"""``memoryd simulate``: replay expire policies over the hits already counted.

Thin: it gathers plain values (files, archived files, hits, queries, the expire cron's run
times) and hands them to :func:`memoryd.policy.replay.replay`, which decides everything.
Read-only: the database is opened read-only and no file is touched.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from .. import clock
from ..results import counted
from .context import Context, UsageError
from .formats import json_dumps, positive_int


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


# --------------------------------------------------------------------------- inputs


def restore_best(
    calls: Sequence[Any], texts: dict[str, str]
) -> list[list[tuple[str, float, bool]]]:
    """Per call, its best restore-on-demand match alone (``[]``: none): what the
    daemon's rule acts on, the replay's restores and harm's alike (only the best match is
    restored, when it is archived and named), found without listing the others."""
    from ..policy.restore_match import Matcher, query_words

    matcher = Matcher(texts)
    cache: dict[str, list[tuple[str, float, bool]]] = {}
    # (the match depends on the query's distinct words alone, not on their order)
    by_words: dict[frozenset[str], list[tuple[str, float, bool]]] = {}
    out = []
    for call in calls:
        got = cache.get(call.query)
        if got is None:
            words = frozenset(query_words(call.query))
            got = by_words.get(words)
            if got is None:
                got = by_words[words] = matcher.best(call.query)
            cache[call.query] = got
        out.append(got)
    return out


def policies_for(cfg: Any, extra: Sequence[str]) -> tuple[list[Any], str]:
    """The policies to replay, and the name of the one the expire job uses."""
    from ..own_history import configured_policy
    from ..policy import candidates as pc

    listed = [pc.policy_named("seed"), pc.policy_named("cut30"), pc.policy_named("none")]
    default = pc.policy_named(pc.DEFAULT_POLICY)
    if not any(p.same_as(default) for p in listed):
        listed.append(default)
    configured = configured_policy(cfg)
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


# --------------------------------------------------------------------------- the command


def cmd_simulate(args: argparse.Namespace, ctx: Context) -> int:
    from ..own_history import gather
    from ..policy import candidates as pc
    from ..policy import replay as rp

    if not ctx.paths.workspace.is_dir():
        raise UsageError(f"workspace {ctx.paths.workspace} is not a folder")
    if not args.no_scan and ctx.paths.state_dir.is_dir():
        from .common import catch_up

        catch_up(ctx)
    now = clock.now()
    store = ctx.read_store()
    data = gather(ctx.cfg, ctx.paths, store, now)
    policies, job_name = policies_for(ctx.cfg, args.policy)
    horizon = args.horizon
    runs: list[float] = []
    if data["first_hit"] is not None:
        lo = data["first_hit"] + rp.RUN_LEAD_DAYS * pc.DAY
        from ..own_history import fire_times

        fires = fire_times(ctx.cfg.schedule.expire, data["tz"], lo, now - horizon * pc.DAY)
        runs = rp.run_times(fires, data["first_hit"], now, horizon)
    candidates = restore_best(data["calls"], data["texts"])
    prepared = rp.prepare(rp.by_path(data["hits"]))  # (once, for the replay and the harm)
    results = rp.replay(
        data["files"],
        data["hits"],
        runs,
        policies,
        horizon,
        calls=data["calls"],
        restore_candidates=candidates.__getitem__,
        prepared=prepared,
    )
    now_cal = _calibration_now(ctx.cfg, data, policies, now, ctx.paths, store)
    from .common import archive_searched

    indexed = archive_searched(ctx)
    harms = harm_documents(results, data, candidates, horizon, prepared, indexed,
                           what_if_indexed=None if indexed else job_name)  # fmt: skip
    doc = {
        "horizon_days": horizon,
        "runs": [clock.iso(t) for t in runs],
        "files": len(data["files"]),
        "hits": len(data["hits"]),
        "policies": [
            {**rp.result_document(r, clock.iso), "harm": h}
            for r, h in zip(results, harms, strict=True)
        ],
        "default": job_name,
        "archive_indexed": indexed,
        **({"chance_now": now_cal} if now_cal is not None else {}),
    }
    if args.json:
        from .common import with_catch_up

        ctx.print(json_dumps(with_catch_up(ctx, doc)))
    else:
        for line in text_report(doc, results):
            ctx.print(line)
    # (printed and closed by then: Python's teardown of a heavy year's objects adds nothing)
    ctx.exit_at_once = True
    return 0


def _calibration_now(
    cfg: Any, data: dict[str, Any], policies: Sequence[Any], now: float, paths: Any, store: Any
) -> Any:
    """What the expire job would decide with now under a learning ``likely``
    (:func:`memoryd.own_history.learn`: every past run up to now, a run whose 60 days are
    nearly over included, which the tables' runs leave out); the cut and its measured
    rates. What was learned before is reused while learning again would give the same, and
    what is learned here saved, as a dry run does (the replay it saves is a whole one)."""
    from ..own_history import learn, reusable_learned, save_calibration
    from ..policy import calibration as cb
    from ..policy import candidates as pc

    for policy in policies:
        if isinstance(policy, pc.Likely) and policy.learn:
            # (False: to learn; None: not yet calibrated)
            cal: Any = reusable_learned(cfg, paths, store, now, policy)
            if cal is False:
                cal = learn(cfg, data, now, policy)
                save_calibration(cfg, paths, policy.calibrated(cal), now)
            if cal is None:
                return {"policy": policy.name, "calibrated": False, "text": cb.GENERIC}
            return {
                "policy": policy.name,
                "calibrated": True,
                **cal.cut_report(),
                "target": policy.target,
                "floor": policy.floor,
            }
    return None


# --------------------------------------------------------------------------- harm


def harm_documents(
    results: Sequence[Any],
    data: dict[str, Any],
    candidates: Sequence[Any],
    horizon: float,
    prepared: Any = None,
    indexed: bool = False,
    what_if_indexed: str | None = None,
) -> list[dict[str, Any]]:
    """Per policy, what its archives later needed cost the agent (:mod:`memoryd.policy.harm`):
    every strong hit of an archived note replayed as a need, by path read, restore on
    demand and recall (and OpenClaw's own search, where its index holds the archive:
    ``indexed``), against the archive as it stood; with the plugin and without it.

    ``what_if_indexed``: a policy (the expire job's) whose harm is also replayed as if the
    archive were in OpenClaw's index (key ``if_indexed``), so an install that has not put
    it there sees what doing so would change before it does."""
    from ..policy import harm as hm
    from ..policy.replay import by_path, prepare
    from ..tierstore.search import ArchiveRecall

    if prepared is None:
        prepared = prepare(by_path(data["hits"]))
    # (once for every policy; ``events`` is read from the index)
    index = hm.need_index(prepared, data["calls"])
    events: list[Any] = []
    # (each word counted in every note once for all of them, in the notes' index words)
    recall = ArchiveRecall(data["texts"].values())
    same = {"candidates": candidates.__getitem__, "recall": recall, "texts": data["texts"],
            "horizon_days": horizon, "index": index}  # fmt: skip
    out = []
    for r in results:
        h = hm.harm(r.decisions, data["hits"], events, data["calls"], **same,
                    archive_indexed=indexed)  # fmt: skip
        doc = {**h.document(), "without_plugin": h.without_plugin().document()}
        if r.name == what_if_indexed:
            doc["if_indexed"] = hm.harm(r.decisions, data["hits"], events, data["calls"],
                                        **same, archive_indexed=True).document()  # fmt: skip
        out.append(doc)
    return out


def harm_lines(doc: dict[str, Any]) -> list[str]:
    """The harm table: first, since what the agent could not reach is what a user feels."""
    lines = [
        "  harm: of the archives later needed (read or retrieved first within the horizon), "
        "how many the agent still reached, replaying each need against the archive as it "
        "stood (with the plugin: a read of an archived path, or a search naming the note, "
        "brings it back in that call"
        + ("; and OpenClaw's own index holds the archive: a search finds an archived note there)"
           if doc.get("archive_indexed") else ")"),
        f"  {'policy':<14} {'needed':>6} {'same call':>9} {'later call':>10} "
        f"{'not at all':>10} {'no plugin: same':>15}",
    ]
    for p in doc["policies"]:
        h = p.get("harm")
        if not h:
            continue
        n = max(h["needed"], 1)
        lines.append(
            f"  {p['name']:<14} {h['needed']:>6} {h['same_call']:>4} {h['same_call'] / n:>4.0%} "
            f"{h['later_call']:>5} {h['later_call'] / n:>4.0%} "
            f"{h['not_reached']:>5} {h['not_reached'] / n:>4.0%} "
            f"{h['without_plugin']['same_call'] / n:>15.0%}"
        )
    for p in doc["policies"]:
        what_if = (p.get("harm") or {}).get("if_indexed")
        if what_if and what_if["needed"]:
            lines.append(
                f"  with the archive in OpenClaw's index (`memoryd status` gives the command), "
                f"{p['name']} would have reached {what_if['same_call_rate']:.0%} in the same "
                f"call and {what_if['not_reached_rate']:.0%} not at all (each need here was a "
                "search or read that found the note, counted as finding its archived copy)"
            )
    return lines


def text_report(doc: dict[str, Any], results: Sequence[Any]) -> list[str]:
    from ..policy.replay import sampling_range

    runs = doc["runs"]
    lines = [
        f"simulate: {counted(len(runs), 'run')} of the expire schedule"
        + (f" ({runs[0][:10]} … {runs[-1][:10]})" if runs else "")
        + f", {counted(doc['files'], 'file')}, {counted(doc['hits'], 'hit')}; an archive is "
        f"false when the file is hit within {doc['horizon_days']} days; the expire job uses: "
        f"{doc['default']}",
    ]
    if not runs:
        lines.append(
            f"  no run to replay yet: runs need 30 days of hits before them and "
            f"{doc['horizon_days']} days after"
        )
        return lines
    lines += harm_lines(doc)
    lines.append(
        "  later needed = archived, then read or retrieved first within the horizon; "
        "any hit also counts notes that merely came along with a search"
    )
    lines.append(
        f"  {'policy':<14} {'archived':>8} {'later needed':>12} {'rate':>6} "
        f"{'any hit':>7} {'rate':>6} {'cold cov':>8} {'KB out':>7} "
        f"{'restores':>8} {'caught':>6} {'needless':>8}"
    )
    for p in doc["policies"]:
        lines.append(
            f"  {p['name']:<14} {p['archived']:>8} {p['strong_false_archives']:>12} "
            f"{p['strong_false_archive_rate']:>6.1%} {p['false_archives']:>7} "
            f"{p['false_archive_rate']:>6.1%} {p['cold_coverage']:>8.1%} "
            f"{p['bytes_out_avg'] / 1024:>7.1f} "
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
        for key, what in (
            ("calibration", "calibrated on the verdicts known at each run"
             if p.get("runs_calibrated") else ""),
            ("calibration_generic", "runs before enough verdicts: the generic, "
             "uncalibrated chance"),
        ):  # fmt: skip
            if not p.get(key):
                continue
            lines.append(
                f"  calibration of {p['name']}"
                + (f" ({what})" if what else "")
                + f": its printed chance of being needed within {doc['horizon_days']} days, "
                "against what followed (strong: read or retrieved first, within it; any hit)"
            )
            lines.append(
                f"    {'predicted':>9} {'verdicts':>8} {'mean':>6} {'strong':>7} {'any hit':>8}"
                f" {'chance alone':>12}"
            )
            for b in p[key]:
                spread = sampling_range(float(b["predicted"]), int(b["n"]))
                lines.append(
                    f"    {b['bin']:>9} {b['n']:>8} {b['predicted']:>6.2f} "
                    f"{b['observed_strong']:>7.2f} {b['observed_any']:>8.2f}"
                    f" {'±' + format(min(spread, 1.0), '.2f'):>12}"
                )
            check = p.get("calibration_check") if key == "calibration" else None
            if check and check["bins"]:
                lines.append(
                    f"    within {check['tolerance']:.2f} of what followed (strong) in "
                    f"{check['within']} of {check['bins']} bins of ≥ {check['min_verdicts']} "
                    f"verdicts; largest miss {check['largest_error']:.2f} (chance alone: "
                    "the spread a right chance still shows over that many verdicts)"
                )
        runs_cal = p.get("runs_calibrated") or []
        if runs_cal:
            lines.append(f"  {p['name']} at each run (only what was known then):")
            for r in runs_cal:
                if r["calibrated"]:
                    lines.append(
                        f"    {r['at'][:10]}  calibrated on {r['verdicts']} past verdicts "
                        f"({r['runs']} runs); cut {r['cut']:.0%} ({r['rule']}): "
                        f"{r['strong_rate']:.0%} later needed, {r['coverage']:.0%} of the "
                        "unneeded archived"
                    )
                else:
                    lines.append(f"    {r['at'][:10]}  generic chance, cut 10% (not enough "
                                 "verdicts yet)")  # fmt: skip
    ch = doc.get("chance_now")
    if ch is not None:
        if ch["calibrated"]:
            lines.append(
                f"  now, {ch['policy']} decides with a chance calibrated on {ch['verdicts']} of "
                f"your past verdicts ({ch['runs']} runs); cut {ch['cut']:.0%} ({ch['rule']}; "
                f"target {ch['target']:.0%} later needed, floor {ch['floor']:.0%}): "
                f"{ch['strong_rate']:.0%} later needed, {ch['coverage']:.0%} of the unneeded "
                "archived"
            )
        else:
            lines.append(f"  now, {ch['policy']} decides with {ch['text']}")
    return lines
