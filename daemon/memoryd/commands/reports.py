"""``memoryd reflect`` and ``memoryd promote``: run the report job by hand, print its summary."""

from __future__ import annotations

import argparse

from .common import add_output_options, emit, ready_to_decide, record_run
from .context import Context


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reflect", help="write the daily usage report (reports/reflect-DAY.md)")
    add_output_options(p)
    p.set_defaults(func=cmd_reflect)

    p = sub.add_parser("promote", help="list promotion candidates (promote_report.md)")
    p.add_argument("--apply", action="store_true", help="mark the candidates promoted")
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

    now = ready_to_decide(args, ctx)
    result = job.run(ctx.cfg, ctx.paths, ctx.store(), now, apply=args.apply)
    record_run(ctx, "promote", now, result.summary)
    text = [result.summary]
    for c in result.candidates:
        text.append(f"  {c.path}  [{c.category}]  {c.reason}")
    text.append(f"report: {result.report}")
    emit(ctx, args, result.as_dict(), text)
    return 0
