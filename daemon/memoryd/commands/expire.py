"""``memoryd expire``: print the plan (the default), or with ``--force`` perform exactly it.

A dry run opens the database read-only (with ``--no-scan`` it changes nothing at all).
``--schedule`` is the user's yes to the daemon's scheduled archiving, an act of its own (alone
or beside ``--force``): applying one plan by hand says nothing about the months to come.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .. import clock
from .common import add_output_options, emit, ready_to_decide, record_run
from .context import Context, UsageError

if TYPE_CHECKING:
    from ..policy.expire_plan import PlanItem
    from ..policy.rails import Consent
    from ..store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("expire", help="archive old memory files nobody uses (dry run by default)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    mode.add_argument("--force", action="store_true", help="perform exactly the plan")
    yes = p.add_mutually_exclusive_group()
    yes.add_argument(
        "--schedule",
        action="store_true",
        help="say yes to the daemon's scheduled expire: from now on it archives too, at most "
        "expire.max_fraction_per_run of the files a run (status shows it)",
    )
    yes.add_argument(
        "--no-schedule",
        action="store_true",
        help="take that yes back: scheduled runs only report again (status shows it)",
    )
    add_output_options(p)
    p.set_defaults(func=cmd_expire)


def cmd_expire(args: argparse.Namespace, ctx: Context) -> int:
    from ..jobs import expire as job

    if args.dry_run and (args.schedule or args.no_schedule):
        flag = "--schedule" if args.schedule else "--no-schedule"
        raise UsageError(
            f"{flag} records your answer for the scheduled runs, and --dry-run changes "
            f"nothing: give {flag} without --dry-run"
        )
    if args.no_schedule:
        if args.force:
            raise UsageError("--no-schedule takes back the yes to scheduled runs; without --force")
        return _say_no(args, ctx)
    if args.schedule and not args.force:
        return _say_yes(args, ctx)
    now = ready_to_decide(args, ctx)
    if not args.force:
        result = job.run(ctx.cfg, ctx.paths, ctx.read_store(), now, dry_run=True)
        plan = result.plan
        doc = result.as_dict()
        unfinished = result.unfinished_journal_entries
        # (a killed run's half-made move is listed again, to a '~2' name: --force finishes it)
        moves = f"{unfinished} move{'s' if unfinished != 1 else ''}"
        promise = (
            f"--force first finishes or undoes the {moves} an interrupted run left, then plans "
            "again"
            if unfinished
            else "--force applies exactly this plan"
        )
        text = [result.summary + f" (nothing changed; {promise})"]
        text += [
            f"  archive {a.path} → {a.to}  ({a.reason})" + _chance(a, plan) for a in plan.archive
        ]
        if plan.chance_source is not None:
            text.append(f"  chances: {plan.chance_source}")
        consent = _consent(ctx)
        doc["scheduled_runs"] = consent.describe()
        if not consent.given:
            text.append(
                "  note: the daemon's scheduled expire only reports until you say yes to it with "
                "`memoryd expire --schedule` (it then moves at most "
                f"{ctx.cfg.expire.max_fraction_per_run:.0%} of the files a run); --force applies "
                "this plan once"
            )
        emit(ctx, args, doc, text)
        # (printed and closed by then: Python's teardown of a heavy year's objects adds nothing)
        ctx.exit_at_once = True
        return 0
    store = ctx.store()
    first_yes = _record_consent(ctx, store) if args.schedule else False
    result = job.run(ctx.cfg, ctx.paths, store, now, dry_run=False, waiting=_say_waiting)
    record_run(ctx, "expire", now, result.summary)
    moved = [m.item for m in result.moved]
    doc = result.as_dict()
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
    if args.schedule:
        doc["consent"] = {"first": first_yes, "by": "expire --schedule"}
    emit(ctx, args, doc, text)
    return 1 if result.failed else 0


def _consent(ctx: Context) -> Consent:
    """The scheduled expire's consent as recorded (read-only; a new install has none)."""
    from ..policy import rails

    return rails.consent_of(ctx.cfg.expire.auto, ctx.read_store().get_meta(rails.CONSENT_META))


def _say_yes(args: argparse.Namespace, ctx: Context) -> int:
    """``expire --schedule`` alone: the yes to scheduled archiving, nothing moved now."""
    first = _record_consent(ctx, ctx.store())
    frac = ctx.cfg.expire.max_fraction_per_run
    text = [
        ("yes recorded: " if first else "already allowed: ")
        + "the daemon's scheduled expire may archive (at most "
        f"{frac:.0%} of the files a run; expire.max_fraction_per_run); nothing moved now"
    ]
    emit(ctx, args, {"consent": {"first": first, "by": "expire --schedule"}}, text)
    return 0


def _say_no(args: argparse.Namespace, ctx: Context) -> int:
    """``expire --no-schedule``: take the yes back; scheduled runs report only again."""
    from ..policy import rails

    store = ctx.store()
    with store.transaction():
        was = rails.consent_of(False, store.get_meta(rails.CONSENT_META))
        if was.given:
            no = rails.consent_record(clock.now(), rails.TAKEN_BACK_BY)
            store.set_meta(rails.CONSENT_META, no)
    text = [
        ("yes taken back: " if was.given else "no yes to take back: ")
        + "the daemon's scheduled expire only reports what it would archive"
    ]
    if ctx.cfg.expire.auto:
        text = [
            "expire.auto = true in the config still allows scheduled archiving: set it to false"
            + (" (the recorded yes is taken back)" if was.given else "")
        ]
    doc = {"consent": {"taken_back": was.given, "by": rails.TAKEN_BACK_BY}}
    emit(ctx, args, doc, text)
    return 0


def _record_consent(ctx: Context, store: Store) -> bool:
    """``expire --schedule`` is the user's yes to scheduled archiving; True the first time.

    Recorded before the moves, so a run interrupted half-way still counts as the yes it was.
    """
    from ..policy import rails

    with store.transaction():
        # (a yes taken back with --no-schedule is no yes: this one is new)
        first = not rails.consent_of(False, store.get_meta(rails.CONSENT_META)).given
        if first:
            store.set_meta(rails.CONSENT_META, rails.consent_record(clock.now()))
    return first


def _chance(item: PlanItem, plan: Any = None) -> str:
    """``  [needed in 60 d: 4%]`` when the policy gave the file a probability; a band or
    "uncertain" where the plan says a percent would claim more than is known."""
    p = item.p_need
    if p is None:
        return ""
    return f"  [chance needed in 60 days: {plan.shown(p) if plan is not None else f'{p:.0%}'}]"


def _say_waiting() -> None:
    print("memoryd: another expire run is moving files; waiting for it to end, then planning "
          "what is left", file=sys.stderr)  # fmt: skip
