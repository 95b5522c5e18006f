"""``memoryd restore``: undo journaled moves (named files, or the whole last expire run).

``--last`` undoes the newest expire run that is still archived, by hand or scheduled (what
``expire --force`` and the expire notification tell the user to run), and names it first.
It never reaches past expire: a note ``recall`` brought up, or organize moved, goes back by
its path. Run again, it undoes the expire run before that one, and says so.
"""

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
    p.add_argument(
        "--last", action="store_true", help="undo the last expire run (every file it archived)"
    )
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

    undoing: dict[str, Any] | None = None
    if args.last:
        batch = mover.last_batch(EXPIRE_BATCH_PREFIX)
        if batch is None:
            errors.append(
                {
                    "path": "--last",
                    "error": "no expire run to undo (`memoryd restore PATH` undoes another move)",
                }
            )
        else:
            undoing = _expire_run(batch, mover.batch_entries(batch))
            for rec, outcome in mover.undo_batch(batch):
                report(rec, outcome, rel(rec.src) or rec.src)
    else:
        wanted: list[tuple[str, int]] = []
        unknown: list[str] = []
        for raw in args.paths:
            found = []
            try:
                key = to_relpath(ctx, raw)
                found = mover.find(ws / key)
            except UsageError:
                key = raw
            if not found and Path(raw).is_absolute():
                found = mover.find(raw)
            if found:
                wanted.append((key, found[0].id))
            else:
                unknown.append(raw)
        if unknown:  # the user's input: exit 2, nothing restored
            raise UsageError(
                f"{', '.join(unknown)}: no journaled move of this path to undo "
                "(give the file's original or archived path; `memoryd restore --last` undoes "
                "the last expire run)"
            )
        for key, rec_id in wanted:
            undo(rec_id, key)
    doc: dict[str, Any] = {"restored": restored, "errors": errors, "repaired": repaired}
    text = [f"repaired: {r}" for r in repaired]
    if undoing is not None:
        doc["undoing"] = undoing
        text.append(
            f"undoing the expire run of {undoing['at']} "
            f"({undoing['files']} files archived; {undoing['batch']})"
        )
    text += [f"restored {r['from']} → {r['to']}" for r in restored]
    emit(ctx, args, doc, text)
    if not args.json:
        for e in errors:
            print(f"memoryd restore: cannot restore {e['path']}: {e['error']}", file=sys.stderr)
    return 1 if errors else 0


EXPIRE_BATCH_PREFIX = "expire:"  # the journal batch of each expire run: expire:<month>:<ns>


def _expire_run(batch: str, entries: list[Any]) -> dict[str, Any]:
    """What ``--last`` is about to undo, as the user knows it: which command, when, how much."""
    from .. import clock

    undoable = [
        rec
        for rec in entries
        if rec.state == "done" and rec.op in ("move", "copy") and rec.undo_of is None
    ]
    started = min((rec.created for rec in undoable), default=None)
    return {
        "command": "expire",
        "batch": batch,
        "at": clock.iso(started) if started is not None else None,
        "files": len(undoable),
    }


def _remove_empty_archive_folders(ws: Path, archived: str | None, template: str) -> None:
    """After a restore, the archive folders it left empty go (the month's, any below it, and
    the archive's own folder above it, ``memory-archive/``, once the last month is gone).

    Only folders of the archive, only empty ones (``rmdir`` refuses anything else); never the
    workspace or its ``memory/`` folder.
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
            break
        current = current.parent
    if current != stop:
        return
    keep = {ws, ws / "memory"}
    for above in stop.parents:  # memory-archive/ itself, when its last month went
        if above in keep or ws not in above.parents:
            return
        try:
            above.rmdir()
        except OSError:
            return
