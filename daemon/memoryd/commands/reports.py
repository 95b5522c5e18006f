"""``memoryd reflect`` and ``memoryd promote``: run the report job by hand, print its summary;
``memoryd report``: where the newest reflect report and its page are."""

from __future__ import annotations

import argparse

from .common import add_output_options, emit, ready_to_decide, record_run
from .context import Context, UsageError
from .formats import seconds


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reflect", help="write the daily usage report (reports/reflect-DAY.md)")
    add_output_options(p)
    p.set_defaults(func=cmd_reflect)

    p = sub.add_parser("report", help="where the newest reflect report and its HTML page are")
    p.add_argument("--open", action="store_true",
                   help="print only the page's path (xdg-open \"$(memoryd report --open)\")")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("promote", help="list promotion candidates (promote_report.md)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--apply", action="store_true", help="mark the candidates promoted")
    how.add_argument("--handoff", action="store_true",
                     help="plan a run for a sub-session of your agent (the plugin's "
                     "/memoryd promote): its task, and the files it may write, snapshotted")
    how.add_argument("--settle", metavar="RUN",
                     help="check what that run's sub-session wrote; mark what landed promoted")
    p.add_argument("--auto", action="store_true",
                   help="with --handoff: asked by /refresh (hands over only with promote.auto)")
    p.add_argument("--status", choices=("ok", "error", "timeout", "pending", "unknown"),
                   help="with --settle: how the sub-session's run ended (timeout, pending: "
                   "it may still be writing, nothing recorded yet; unknown: the wait failed "
                   "and the run's time is up)")
    p.add_argument("--timeout", type=seconds, metavar="SECONDS",
                   help="with --handoff: the seconds the sub-session is given (default 180); "
                   "a run left handed over longer is settled as timed out")
    p.add_argument("--agent", metavar="ID", help="with --handoff: the agent (default: main's)")
    add_output_options(p)
    p.set_defaults(func=cmd_promote)


def cmd_reflect(args: argparse.Namespace, ctx: Context) -> int:
    from ..jobs import reflect as job

    now = ready_to_decide(args, ctx)
    result = job.run(ctx.cfg, ctx.paths, ctx.store(), now)
    record_run(ctx, "reflect", now, result.summary)
    emit(ctx, args, result.as_dict(), [result.summary, f"report: {result.report}"])
    # (printed and closed by then: Python's teardown of a heavy year's objects adds nothing)
    ctx.exit_at_once = True
    return 0


def cmd_promote(args: argparse.Namespace, ctx: Context) -> int:
    from ..jobs import promote as job

    if args.handoff and args.auto and not ctx.cfg.promote.auto:
        doc = {"handed": False, "why": "promote.auto is off: `/memoryd promote` files them by hand"}
        emit(ctx, args, doc, job.carried_out_lines(doc))
        return 0  # (before any scan: /refresh asks every time)
    now = ready_to_decide(args, ctx)
    if args.handoff or args.settle:
        return _carried_out(args, ctx, now)
    result = job.run(ctx.cfg, ctx.paths, ctx.store(), now, apply=args.apply)
    record_run(ctx, "promote", now, result.summary)
    text = [result.summary]
    for c in result.candidates:
        text.append(f"  {c.path}  [{c.category}]  {c.reason}")
    text.append(f"report: {result.report}")
    emit(ctx, args, result.as_dict(), text)
    return 0


def _carried_out(args: argparse.Namespace, ctx: Context, now: float) -> int:
    """``--handoff`` and ``--settle``: the two halves of a run a sub-session carries out."""
    from ..jobs import promote as job

    try:
        if args.handoff:
            doc = job.handoff(ctx.cfg, ctx.paths, ctx.store(), now, auto=args.auto,
                              agent=args.agent, timeout=args.timeout)  # fmt: skip
        else:
            doc = job.settle(ctx.cfg, ctx.paths, ctx.store(), args.settle, args.status)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    emit(ctx, args, doc, job.carried_out_lines(doc))
    return 0


def cmd_report(args: argparse.Namespace, ctx: Context) -> int:
    """The newest ``reflect-DAY`` report's files (reads only: no scan, no job)."""
    import sys

    from .formats import json_dumps

    folder = ctx.paths.reports_dir
    pages = sorted(folder.glob("reflect-[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9].html"))
    if not pages:
        print(f"memoryd: no reflect page in {folder} yet: run `memoryd reflect` (the daemon "
              "writes one a day)", file=sys.stderr)  # fmt: skip
        return 1
    page = pages[-1]
    report = page.with_suffix(".md")
    doc = {"page": str(page), "report": str(report) if report.exists() else None,
           "day": page.stem.removeprefix("reflect-")}  # fmt: skip
    if args.json:
        ctx.print(json_dumps(doc))
    elif args.open:
        ctx.print(str(page))
    else:
        ctx.print(f"reflect report of {doc['day']}")
        ctx.print(f"page:   {page}")
        if doc["report"]:
            ctx.print(f"report: {report}")
    return 0
