"""``memoryd retire [--dry-run | --force] [FILE...]``: retire the least-used sections of
``MEMORY.md`` (and of other notes over ``retire.note_max_chars``) into the archive, so that
each fits its budget; a dry run (the default) shows exactly what would move and what each
file would weigh after. ``restore --last`` puts them back (docs/sections.md)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .. import clock
from .common import add_output_options, emit, ready_to_decide, to_relpath
from .context import Context, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retire",
        help="move the least-used sections of MEMORY.md into the archive (dry run by default)",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the plan only (the default)")
    mode.add_argument(
        "--force",
        action="store_true",
        help="retire as the dry run shows (planned again on the file as it is then)",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="FILE",
        help="only these notes (default: MEMORY.md and notes over retire.note_max_chars)",
    )
    add_output_options(p)
    p.set_defaults(func=cmd_retire)


_TAKEN_KEYS = ("title", "first_line", "last_line", "chars", "hits_90d", "hits_total")


def _taken_doc(t: Any) -> dict[str, Any]:
    """A section to retire, as the --json document shows it."""
    return {**{key: getattr(t, key) for key in _TAKEN_KEYS}, "last_hit": clock.iso(t.last_hit)}


def _when(ts: float | None) -> str:
    return "never" if ts is None else (clock.iso(ts) or "")[:10]


def cmd_retire(args: argparse.Namespace, ctx: Context) -> int:
    from .. import retire_run
    from ..mover import mover_for
    from ..results import counted
    from ..retirer import Retirer
    from ..workspace import archive_folder_of, is_memory_relpath, retired_archive_of

    now = ready_to_decide(args, ctx)
    only = [to_relpath(ctx, p) for p in args.paths] if args.paths else None
    ws, archive = ctx.paths.workspace, ctx.cfg.archive.dir
    for rel in only or ():
        archived = archive_folder_of(rel, archive) is not None or rel.startswith(
            retired_archive_of(archive, "")
        )
        if rel.startswith(("tiers/", "../")) or not is_memory_relpath(rel) or archived:
            raise UsageError(
                f"{rel}: retire takes the workspace's Markdown memory files (MEMORY.md, "
                "memory/**/*.md), not the archive or other files"
            )
        if not os.path.lexists(ws / rel):
            raise UsageError(f"{rel}: no such file in {ws}")
    if args.force:
        store = ctx.store()
        mover = mover_for(store, ctx.paths)
        repaired = mover.repair()
        retirer = Retirer(store, mover.check_path)
        result = retire_run.run(ctx.cfg, ctx.paths, store, retirer, now, only)
        repaired += result.repaired
    else:
        store = ctx.read_store()
        result = retire_run.run(ctx.cfg, ctx.paths, store, None, now, only)
        repaired = []
    doc: dict[str, Any] = {
        "dry_run": not args.force,
        "batch": result.batch,
        "notes": [
            {
                "path": n.rel,
                "archive": n.archive_rel,
                "budget": n.plan.budget,
                "chars_before": n.plan.chars_before,
                "chars_after": n.plan.chars_after,
                "fits": n.plan.fits,
                "retire": [_taken_doc(t) for t in n.plan.taken],
                "kept": [{"title": k, "why": why} for k, why in n.plan.kept],
            }
            for n in result.plans
        ],
        "applied": result.applied,
        "changed": result.changed,
        "skipped": result.skipped,
        "repaired": repaired,
    }
    text = [f"repaired: {r}" for r in repaired]
    verb = "retired" if args.force else "would retire"
    for n in result.plans:
        p = n.plan
        head = f"{n.rel}: {p.chars_before:,} characters, budget {p.budget:,}"
        if not p.taken:
            reasons = sorted({why for _, why in p.kept} - {"title"})
            if p.fits:
                why = "fits, nothing to retire"
            elif reasons:
                why = f"over, but nothing may go ({', '.join(reasons)})"
            else:  # (text under no "#" heading, setext "===" / "---" headings: all one title)
                why = (
                    "over, but it has no section that may go: all of it is title (text before "
                    "its first `## ` heading, or under `# `; `===` / `---` underlined headings "
                    "are not sections)"
                )
            text.append(f"{head}; {why}")
            continue
        text.append(
            f"{head}; {verb} {counted(len(p.taken), 'section')} → {n.archive_rel}; "
            f"{p.chars_after:,} characters after" + ("" if p.fits else " (still over)")
        )
        for t in p.taken:
            text.append(
                f"  {t.title} (lines {t.first_line}-{t.last_line}, {t.chars:,} chars; "
                f"{counted(t.hits_90d, 'hit')} in 90 days, last {_when(t.last_hit)})"
            )
        kept = [f"{k} ({why})" for k, why in p.kept if why != "title"]
        if kept:
            text.append("  kept: " + ", ".join(kept))
    for c in result.changed:
        text.append(f"  not retired {c['path']}: {c['why']} (it kept changing; run again)")
    for s in result.skipped:
        text.append(f"  left {s['path']}: {s['why']}")
    if not result.plans and not result.skipped:
        text.append("nothing to retire: no MEMORY.md, and no note over retire.note_max_chars")
    if args.force and result.applied:
        text.append("undo with: memoryd restore --last")
    elif not args.force:
        text.append("(nothing changed; --force applies exactly this plan)")
    emit(ctx, args, doc, text)
    return 1 if result.changed else 0
