"""Tier store commands: organize, recall, inject, refresh."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from ..clock import iso
from ..clock import now as clock_now
from ..results import counted

if TYPE_CHECKING:
    from ..tierstore.organize import OrganizeResult


def register(sub: argparse._SubParsersAction) -> None:
    """Add this group's commands to the ``memoryd`` parser."""
    p = sub.add_parser(
        "organize",
        help="tier store: hot→warm, warm→gist copy, forget, clean up",
        description=(
            "Run the tier store's three steps once: layer by mtime (hot/ → warm/, a summary "
            "copy of old warm/ notes in gist/), move notes not retrieved for "
            "forget_after_days to forgotten/, delete what has been in forgotten/ for "
            "delete_after_days (a compressed copy kept in graveyard/). Prints each action "
            "with its reason."
        ),
    )
    p.add_argument("--dry-run", action="store_true", help="print the plan, touch nothing")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=cmd_organize)

    p = sub.add_parser(
        "recall",
        help="search hot/ → warm/ → gist/ → forgotten/, stop at the first tier with a match",
        description=(
            "Layered recall: files containing any of WORDS (case-insensitive), tier by tier. "
            "A hit is read out, rotated back (warm → hot; gist → summary and warm original "
            "to hot; forgotten → warm, marked) and counted as a hit of kind 'recall'. More "
            "matches than recall_max_files: the best are listed and nothing moves."
        ),
    )
    p.add_argument("words", nargs="+", metavar="WORD", help="words to look for (any of them)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--peek", action="store_true", help="search only: no rotation, no hit recorded")
    p.add_argument(
        "--agent", metavar="ID", default=None, help="search only this agent's archived notes"
    )
    p.set_defaults(func=cmd_recall)

    p = sub.add_parser(
        "inject", help="print the hot/ notes, newest first, for a session-start hook"
    )
    p.add_argument("--max-chars", type=int, default=None, metavar="N",
                   help="character budget (default: tiers.inject_max_chars)")  # fmt: skip
    p.add_argument(
        "--session",
        action="store_true",
        help=(
            "for a new OpenClaw session: budget tiers.session_inject_max_chars, within what "
            "the bootstrap files leave of bootstrapTotalMaxChars; notes already in them left out"
        ),
    )
    p.add_argument("--agent", metavar="ID", default=None, help="the session's agent (--session)")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=cmd_inject)

    p = sub.add_parser("refresh", help="organize the tier store, then run promote")
    p.add_argument("--dry-run", action="store_true", help="plan only: nothing moved or written")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.set_defaults(func=cmd_refresh)


# --------------------------------------------------------------------------- organize


def _print_organize(ctx: Any, result: OrganizeResult) -> None:
    for line in result.repaired:
        ctx.print(f"repaired  {line}")
    width = max((len(o.action.src) for o in result.actions), default=0)
    for o in result.actions:
        a, status = o.action, o.status
        tag = "" if status in (None, "done") else f" [{status}: {o.error or ''}]".rstrip()
        if status == "skipped" and a.op == "conflict":
            tag = ""
        dst = f" → {a.dst}" if a.dst else ""
        ctx.print(f"{a.op:<8}  {a.src:<{width}}{dst}  ({a.reason}){tag}")
    for name in result.graveyard_expired:
        ctx.print(f"drop      graveyard/{name}")
    ctx.print(result.summary)


def cmd_organize(args: argparse.Namespace, ctx: Any) -> int:
    from ..jobs import organize
    from .formats import json_dumps

    now = clock_now()
    # A file-system problem (a tier folder that is a symlink, no permission) is one line and
    # exit 1, from the command layer's one error handler.
    store = ctx.read_store() if args.dry_run else ctx.store()
    result = organize.run(ctx.cfg, ctx.paths, store, now, dry_run=args.dry_run)
    if args.json:
        ctx.print(json_dumps({"summary": result.summary, "now": iso(now), **result.as_dict()}))
    else:
        _print_organize(ctx, result)
    return 1 if result.failed else 0


# --------------------------------------------------------------------------- recall


def _not_text(words: list[str]) -> str | None:
    """The first word that is not text, shown readably (``'caf\\xff'``), or None: bytes
    that are not UTF-8 (lone surrogates, which no search can encode), or a NUL (which an
    API can pass)."""
    for w in words:
        if "\0" in w:
            return repr(w)
        try:
            w.encode("utf-8")
        except UnicodeEncodeError:
            return repr(os.fsencode(w))[1:]
    return None


def cmd_recall(args: argparse.Namespace, ctx: Any) -> int:
    from ..tierstore.recall import recall
    from ..tierstore.search import normalise_words
    from .context import UsageError
    from .formats import json_dumps

    bad = _not_text(args.words)
    if bad is not None:
        message = (
            f"recall: the word {bad} is not UTF-8 text (a byte sequence no text has); give "
            "the words as UTF-8"
        )
        if args.json:  # the caller reads stdout: it gets a document saying so, too
            ctx.print(json_dumps({"words": [], "tier": None, "matches": 0, "error": message}))
        raise UsageError(message)
    if not normalise_words(args.words):
        raise UsageError("recall: give at least one non-empty word")
    root = ctx.paths.tiers_root
    now = clock_now()
    out = None
    if root.is_dir() or ctx.paths.db.exists():  # else no store, no archive: create nothing
        store = ctx.store() if not args.peek else ctx.read_store()
        out = recall(
            ctx.cfg, ctx.paths, store, args.words, now, rotate=not args.peek, agent=args.agent
        )
    if out is None or (out.tier is None and not root.is_dir()):
        # Said as organize says it: "nothing about X" would send the user looking for
        # other words in a store that does not exist (and nothing is created here).
        message = f"recall: no tier store at {root} (create that folder to start one)"
        doc = {"words": args.words, "tier": None, "matches": 0, "missing": True}
        ctx.print(json_dumps({**doc, "message": message}) if args.json else message)
        return 0
    assert out is not None
    if args.json:
        ctx.print(json_dumps(out.as_dict()))
        return 0
    ctx.print(out.message)
    if out.tier is None:
        return 0
    for m in out.shown:
        where = m["path"]
        if m.get("now") and m["now"] != m["path"]:
            where = f"{m['now']} (was {m['path']})"
        ctx.print(f"\n== {where}  [{', '.join(m['words'])}]")
        if m.get("original"):
            ctx.print(f"   original: {m['original']}")
        elif m.get("summary") and "original" in m:
            ctx.print("   original: none left (this summary is all there is)")
        if "text" in m:
            ctx.print(m["text"].rstrip())
        else:
            ctx.print(f"   {m['snippet']}")
    for r in out.rotations:
        if r.get("status") == "failed":
            ctx.print(f"\n(could not move {r['src']} → {r['dst']}: {r.get('error')})")
    return 0


# --------------------------------------------------------------------------- inject


def cmd_inject(args: argparse.Namespace, ctx: Any) -> int:
    from ..tierstore.inject import inject
    from .context import UsageError
    from .formats import json_dumps
    from .session_inject import injection_document, session_rules

    skip = None
    session: dict[str, Any] | None = None
    if args.session:
        budget, skip, session = session_rules(ctx, args.agent)
        if args.max_chars is not None:
            budget = min(budget, args.max_chars)
    else:
        budget = ctx.cfg.tiers.inject_max_chars if args.max_chars is None else args.max_chars
    if budget < 0:
        raise UsageError("inject: --max-chars must not be negative")
    inj = inject(ctx.paths.tiers_root, budget, skip)
    if args.json:
        ctx.print(json_dumps(injection_document(inj, budget, session)))
    elif inj.text:
        ctx.out.write(inj.text)
    else:  # stdout goes into the agent's session: say it on stderr
        import sys

        why = (
            f"{counted(len(inj.omitted), 'note')} in hot/, none fits in {budget} characters"
            if inj.omitted
            else f"no notes in {ctx.paths.tiers_root / 'hot'}"
        )
        print(f"memoryd inject: nothing to inject: {why}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- refresh


def cmd_refresh(args: argparse.Namespace, ctx: Any) -> int:
    from ..jobs import organize
    from .formats import json_dumps

    now = clock_now()
    store = ctx.read_store() if args.dry_run else ctx.store()
    org = organize.run(ctx.cfg, ctx.paths, store, now, dry_run=args.dry_run)
    from ..jobs import promote as promote_job

    res = promote_job.run(ctx.cfg, ctx.paths, store, now, dry_run=args.dry_run)
    if args.json:
        organized = {"summary": org.summary, **org.as_dict()}
        promoted = {"summary": res.summary, "data": res.as_dict()}
        ctx.print(json_dumps({"now": iso(now), "organize": organized, "promote": promoted}))
    else:
        _print_organize(ctx, org)
        ctx.print(res.summary)
        if res.report:
            ctx.print(f"report: {res.report}")
    return 1 if org.failed else 0
