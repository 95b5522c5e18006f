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
    stored = store.marks(kind) if kind == "marked" else set()
    names = _FileNames(ctx, stored)
    for raw in args.paths:
        if kind == "pinned":
            key = raw.replace("\\", "/").removeprefix("./")
            if not key or key.startswith(("/", "../")):
                raise UsageError(f"{raw}: a pin is a workspace-relative glob (memory/projects/*)")
        else:
            key = to_relpath(ctx, raw)
            if not (is_memory_relpath(key) or key.startswith("tiers/")):
                raise UsageError(f"{raw}: not a memory file (MEMORY.md, memory.md, memory/**/*.md)")
            if not key.startswith("tiers/"):
                key = names.listed_as(key)  # memory/Projects.md opens memory/projects.md
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
                # A mark stored under another spelling of the file (as typed, by an older
                # memoryd) names it too: explain shows it as this file's.
                cleared = [k for k in (key, *names.others(key)) if store.clear_mark(k, kind)]
                done = "unpinned" if kind == "pinned" else "unmarked"
                for k in cleared:
                    ctx.print(f"{done} {k}")
                if not cleared:
                    ctx.print(f"{key}: was not {kind}")
            else:
                changed = store.set_mark(key, kind)
                ctx.print(f"{kind} {key}" if changed else f"{key}: already {kind}")
    return 0


class _FileNames:
    """The workspace's listed files, read once and only when a path must be matched to
    one: on a case- or normalization-insensitive file system ``memory/Projects.md`` is
    ``memory/projects.md``, so a mark is stored, and removed, under the listed name
    (docs/paths.md); elsewhere names are exact."""

    def __init__(self, ctx: Context, stored: set[str]) -> None:
        self._ctx = ctx
        self._stored = stored
        self._listed: list[str] | None = None

    def _files(self) -> list[str]:
        if self._listed is None:
            from ..workspace import archive_excludes, list_memory_files

            ws = self._ctx.paths.workspace
            found = list_memory_files(ws, archive_excludes(ws, self._ctx.cfg.archive.dir))
            self._listed = [f.rel for f in found]
        return self._listed

    def _owner(self, paths: list[str]) -> dict[str, str]:
        from ..pathmatch import attribution_for

        return dict(attribution_for(self._ctx.paths.workspace, self._files(), paths).owner)

    def listed_as(self, rel: str) -> str:
        """The listed file ``rel`` names (``rel`` itself when listed, or naming none)."""
        return self._owner([rel]).get(rel, rel)

    def others(self, rel: str) -> list[str]:
        """The stored marks, other than ``rel``, that name the same listed file."""
        if not self._stored:
            return []
        owner = self._owner(sorted(self._stored))
        return sorted(k for k in self._stored if k != rel and owner.get(k) == rel)
