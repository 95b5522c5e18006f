"""The user's marks: ``mark`` / ``unmark`` a file (never archived, always a promotion
candidate) and ``pin`` / ``unpin`` globs (never archived), kept in the ``marks`` table.
"""

from __future__ import annotations

import argparse

from ..cli import Context, UsageError
from .common import to_relpath


def register(sub: argparse._SubParsersAction) -> None:
    for name, helptext in (
        ("mark", "mark a file: never archived, always a promotion candidate"),
        ("unmark", "remove a user mark"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument(
            "paths", nargs="+", metavar="PATH", help="workspace-relative (memory/x.md) or absolute"
        )
        p.set_defaults(func=cmd_mark, mark_kind="marked", remove=name == "unmark")
    for name, helptext in (
        ("pin", "pin files by glob (workspace-relative): never archived"),
        ("unpin", "remove a pin"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("paths", nargs="*", metavar="GLOB", help="none: list the pins")
        p.set_defaults(func=cmd_mark, mark_kind="pinned", remove=name == "unpin")


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
