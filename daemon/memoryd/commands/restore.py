"""``memoryd restore``: undo journaled moves (named files, or the whole last run of a command).

``--last`` undoes the newest run that moved files (an expire run, by hand or scheduled; a
recall; an organize) and names it first: "undoing the expire run of <time> (N files)". It
undoes one run, the one the user just saw: run again right after, it does not reach back to
an older run (that once undid a ``recall`` made before the expire run, silently); it says what
it undid last and leaves older moves to ``memoryd restore PATH``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import clock
from ..cli import Context, UsageError
from ..workspace import relative_to_workspace
from .common import emit, to_relpath


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("restore", help="undo journaled moves: files back where they were")
    p.add_argument("paths", nargs="*", metavar="PATH", help="original or archived path")
    p.add_argument(
        "--last",
        action="store_true",
        help="undo the last run that moved files (expire, recall, organize), named first",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_restore)

    r = sub.add_parser(
        "on-read",
        help="before a memory_get: bring back the note memoryd archived from PATH, if nothing "
        "is there now",
    )
    r.add_argument("path", metavar="PATH", help="the path the agent reads, as it gave it")
    r.add_argument("--agent", metavar="ID", help="the reading agent (default: the first one)")
    r.add_argument("--json", action="store_true", help="print one JSON document")
    r.set_defaults(func=cmd_on_read)


# What `on-read` says of each outcome (its --json document has the outcome's name).
ON_READ_WORDS = {
    "restored": "restored {path} from {archived} before the read (journaled)",
    "none": "{path}: no note memoryd archived from this path; nothing to do",
    "present": "{path}: a file is there; nothing to do",
    "off": "{path}: restore on demand is off (expire.restore_on_demand); nothing moved",
    "changed": "{path}: the archived copy was edited since; left in the archive",
    "conflict": "{path}: a file appeared at this path; both left alone",
    "left_alone": "{path}: left alone (said before)",
    "failed": "{path}: could not be restored: {error}",
}


def cmd_on_read(args: argparse.Namespace, ctx: Context) -> int:
    """Restore on demand for one read (issue 28): what a ``before_tool_call`` hook of a
    ``memory_get`` asks, so the read that follows returns the note. ``PATH`` is the agent's
    (a model's) and only ever compared with the journal; exit 1 only when a move failed."""
    from ..ondemand import RestoreOnDemand

    def log_to_stderr() -> None:  # its one log line goes to stderr; stdout is the answer
        from .. import log

        if not log.CONFIGURED:
            log.configure(stream=sys.stderr)

    agents = ctx.paths.agents
    agent = args.agent or (agents[0].id if agents else "")
    if args.agent and all(a.id != args.agent for a in agents):
        doc: dict[str, Any] = {"outcome": "none", "path": args.path, "agent": args.agent,
                               "error": "no such agent"}  # fmt: skip
    elif not ctx.cfg.expire.restore_on_demand:
        doc = {"outcome": "off", "path": args.path, "agent": agent}
    elif not ctx.paths.db.exists():  # memoryd never ran here: nothing was archived
        doc = {"outcome": "none", "path": args.path, "agent": agent}
    else:
        doc = RestoreOnDemand(ctx.cfg, ctx.paths).restore_read(
            ctx.store(), agent, args.path, before_moving=log_to_stderr
        )
    words = ON_READ_WORDS.get(str(doc.get("outcome")), "{path}: {outcome}")
    fields = {"archived": "", "error": "", **doc}
    emit(ctx, args, doc, [words.format(**fields)])
    return 1 if doc.get("outcome") == "failed" else 0


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
        batch = mover.last_batch()
        entries = mover.batch_entries(batch) if batch is not None else []
        restore = mover.last_restore()
        undone = mover.get(restore.undo_of) if restore and restore.undo_of is not None else None
        if batch is None:
            errors.append({"path": "--last", "error": "no journaled move to undo"})
        elif (  # the user already undid a later run: this one is older than what they meant
            restore is not None
            and restore.id > max(rec.id for rec in entries)
            and (undone is None or undone.batch != batch)
        ):
            older = _run_of(batch, entries)
            errors.append(
                {
                    "path": "--last",
                    "error": (
                        f"the last restore (at {clock.iso(restore.created)}) already undid "
                        f"{_command_of(undone.batch) if undone else 'a move'}; --last does not "
                        f"reach back to the {older['command']} run of {older['at']} "
                        f"({older['files']} files): `memoryd restore PATH` undoes an older move"
                    ),
                }
            )
        else:
            undoing = _run_of(batch, entries)
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
                "the last run that moved files)"
            )
        for key, rec_id in wanted:
            undo(rec_id, key)
    doc: dict[str, Any] = {"restored": restored, "errors": errors, "repaired": repaired}
    text = [f"repaired: {r}" for r in repaired]
    if undoing is not None:
        doc["undoing"] = undoing
        text.append(
            f"undoing the {undoing['command']} run of {undoing['at']} "
            f"({undoing['files']} files; {undoing['batch']})"
        )
    text += [f"restored {r['from']} → {r['to']}" for r in restored]
    emit(ctx, args, doc, text)
    if not args.json:
        for e in errors:
            print(f"memoryd restore: cannot restore {e['path']}: {e['error']}", file=sys.stderr)
    return 1 if errors else 0


def _command_of(batch: str) -> str:
    """The command whose run a journal batch is (``expire:2026-11:…`` → ``expire``)."""
    return batch.split(":", 1)[0]


def _run_of(batch: str, entries: list[Any]) -> dict[str, Any]:
    """What ``--last`` is about to undo, as the user knows it: which command, when, how much."""
    undoable = [
        rec
        for rec in entries
        if rec.state == "done" and rec.op in ("move", "copy") and rec.undo_of is None
    ]
    started = min((rec.created for rec in undoable), default=None)
    return {
        "command": _command_of(batch),
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
