"""The user's marks: ``mark`` / ``unmark`` a file (never archived, always a promotion
candidate) and ``pin`` / ``unpin`` globs (never archived), kept in the ``marks`` table.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from .common import to_relpath
from .context import Context, UsageError


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
            key = names.listed_as(key)  # memory/Projects.md opens memory/projects.md
            ws = ctx.paths.workspace
            if not args.remove and not key.startswith("tiers/"):
                if (ws / key).is_symlink():  # (never listed, counted or moved: nor explained)
                    raise UsageError(f"{raw}: a symbolic link, not a memory file memoryd keeps")
                if not (ws / key).is_file():
                    raise UsageError(f"{raw}: no such file in {ws}")
        keys.append(key)
    said: list[str] = []  # printed once the transaction is committed, not before
    with store.transaction():
        for key in keys:
            if args.remove:
                # A mark stored under another spelling of the file (as typed, by an older
                # memoryd) names it too: explain shows it as this file's.
                cleared = [k for k in (key, *names.others(key)) if store.clear_mark(k, kind)]
                done = "unpinned" if kind == "pinned" else "unmarked"
                said += [f"{done} {k}" for k in cleared] or [f"{key}: was not {kind}"]
            else:
                changed = store.set_mark(key, kind)
                said.append(f"{kind} {key}" if changed else f"{key}: already {kind}")
                if kind == "pinned":
                    said.append(_what_it_matches(names, key, ctx.paths.workspace))
    for line in said:
        ctx.print(line)
    return 0


def _what_it_matches(names: _FileNames, glob: str, ws: Path) -> str:
    """A pin that matches no memory file now is kept (a file may come), but said so: a typo
    in a glob would otherwise protect nothing without a word. A section pin
    (``MEMORY.md#Heading``) says the sections it keeps from ``retire``."""
    from ..policy import matches_any

    if "#" in glob:
        from ..policy.retire_plan import heading_matches, pinned_headings
        from ..section_map import parse_sections

        found = []
        for rel in names.workspace_files():
            heads = pinned_headings(rel, [glob])
            if not heads:
                continue
            try:
                text = (ws / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            found += [f"{rel} {s.title}" for s in parse_sections(text)
                      if s.level and heading_matches(s.heading, heads[0])]  # fmt: skip
        if not found:
            return ("  (matches no section now: a heading is matched as written, its case "
                    "too; it will keep any that comes to match)")  # fmt: skip
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        return f"  (matches {len(found)} section{'' if len(found) == 1 else 's'} now: {shown})"
    n = sum(1 for rel in names.workspace_files() if matches_any(rel, (glob,)))
    if n == 0:
        return "  (matches no memory file now; it will keep any that comes to match)"
    return f"  (matches {n} memory file{'' if n == 1 else 's'} now)"


class _FileNames:
    """The listed files (the workspace's, the tier store's notes), read once each and only
    when a path must be matched to one: on a case- or normalization-insensitive file system
    ``memory/Projects.md`` is ``memory/projects.md`` and ``tiers/Plan.md`` the note
    ``plan.md``, so a mark is stored, and removed, under the listed name (docs/paths.md);
    elsewhere names are exact."""

    def __init__(self, ctx: Context, stored: set[str]) -> None:
        self._ctx = ctx
        self._stored = stored
        self._listings: dict[bool, tuple[Path, list[str], list[str] | None]] = {}

    def _listing(self, tier: bool) -> tuple[Path, list[str], list[str] | None]:
        """(folder, the keys listed in it, the files to probe when those are not paths)."""
        if tier not in self._listings:
            if tier:
                from ..tierstore import hit_key, scan_store

                root = self._ctx.paths.tiers_root
                notes = scan_store(root) if root.is_dir() else {}
                probe = [f.rel for place in notes.values() for f in place.files]
                self._listings[tier] = (root, [hit_key(n) for n in notes], probe)
            else:
                from ..workspace import archive_excludes, list_memory_files

                ws = self._ctx.paths.workspace
                found = list_memory_files(ws, archive_excludes(ws, self._ctx.cfg.archive.dir))
                self._listings[tier] = (ws, [f.rel for f in found], None)
        return self._listings[tier]

    def _owner(self, rel: str, paths: list[str]) -> Mapping[str, str]:
        from ..pathmatch import attribution_for

        folder, listed, probe = self._listing(rel.startswith("tiers/"))
        return attribution_for(folder, listed, paths, probe=probe).owner

    def workspace_files(self) -> list[str]:
        """The workspace's memory files, as listed."""
        return self._listing(False)[1]

    def listed_as(self, rel: str) -> str:
        """The listed file ``rel`` names (``rel`` itself when listed, or naming none)."""
        return self._owner(rel, [rel]).get(rel, rel)

    def others(self, rel: str) -> list[str]:
        """The stored marks, other than ``rel``, that name the same listed file."""
        same_kind = sorted(
            k for k in self._stored if k.startswith("tiers/") == rel.startswith("tiers/")
        )
        if not same_kind:
            return []
        owner = self._owner(rel, same_kind)
        return [k for k in same_kind if k != rel and owner.get(k) == rel]
