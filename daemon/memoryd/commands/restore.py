"""``memoryd restore``: undo journaled moves (named files, or the whole last batch)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..cli import Context, UsageError
from ..workspace import relative_to_workspace
from .common import emit, to_relpath


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("restore", help="undo journaled moves: files back where they were")
    p.add_argument("paths", nargs="*", metavar="PATH", help="original or archived path")
    p.add_argument("--last", action="store_true", help="undo the whole last batch of moves")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_restore)


def cmd_restore(args: argparse.Namespace, ctx: Context) -> int:
    from ..mover import MoveError, MoveRecord, mover_for

    if bool(args.paths) == bool(args.last):
        raise UsageError("give PATH... or --last (not both)")
    ws = ctx.paths.workspace
    store = ctx.store()
    mover = mover_for(store, ctx.paths)
    repaired = mover.repair()
    restored: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []

    def rel(p: str | None) -> str | None:
        return None if p is None else relative_to_workspace(ws, p) or p

    def report(rec: MoveRecord, outcome: int | MoveError | OSError, label: str) -> None:
        if not isinstance(outcome, int):
            errors.append({"path": label, "error": str(outcome)})
            return
        restored.append({"id": rec.id, "from": rel(rec.dst), "to": rel(rec.src)})
        _remove_empty_archive_folders(ws, rel(rec.dst), ctx.cfg.archive.dir)

    def undo(rec_id: int, label: str) -> None:
        rec = mover.get(rec_id)
        assert rec is not None
        try:
            outcome: int | MoveError | OSError = mover.undo(rec_id)
        except (MoveError, OSError) as exc:
            outcome = exc
        report(rec, outcome, label)

    if args.last:
        batch = mover.last_batch()
        if batch is None:
            errors.append({"path": "--last", "error": "no journaled move to undo"})
        else:
            for rec, outcome in mover.undo_batch(batch):
                report(rec, outcome, rel(rec.src) or rec.src)
    else:
        for raw in args.paths:
            found = []
            try:
                key = to_relpath(ctx, raw)
                found = mover.find(ws / key)
            except UsageError:
                key = raw
            if not found and Path(raw).is_absolute():
                found = mover.find(raw)
            if not found:
                errors.append({"path": raw, "error": "no journaled move of this path to undo"})
                continue
            undo(found[0].id, key)
    doc = {"restored": restored, "errors": errors, "repaired": repaired}
    text = [f"repaired: {r}" for r in repaired]
    text += [f"restored {r['from']} → {r['to']}" for r in restored]
    emit(ctx, args, doc, text)
    if not args.json:
        for e in errors:
            print(f"memoryd restore: cannot restore {e['path']}: {e['error']}", file=sys.stderr)
    return 1 if errors else 0


def _remove_empty_archive_folders(ws: Path, archived: str | None, template: str) -> None:
    """After a restore, the archive folders it left empty go (the month's, and any below it).

    Only folders of the archive, only empty ones (``rmdir`` refuses anything else).
    """
    from ..policy.expire import archive_folder_of

    if archived is None or archived.startswith("/"):
        return
    found = archive_folder_of(archived, template)
    if found is None:
        return
    folder, removable = found
    stop = ws / folder
    current = (ws / archived).parent
    while stop in current.parents or (current == stop and removable):
        try:
            current.rmdir()
        except OSError:  # not empty (other archived notes), or not ours to remove
            return
        if current == stop:
            return
        current = current.parent
