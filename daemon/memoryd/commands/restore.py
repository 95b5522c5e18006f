"""``memoryd restore``: bring notes back (named files, the whole archive, or the last run).

Restore means "back where the user keeps it": ``restore PATH`` takes back the live move that
took the note away, never a recall's; a note back already is said to be where it is (exit 0).
``--last`` undoes only the newest run, never reaching back past one undone already, so it
cannot silently undo an older run the user did not mean. The rules: docs/moves.md.

Also the hooks' ``on-read`` and ``on-search``: restore on demand before a read or a search.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import clock, faults
from ..move_journal import command_of, undo_batch
from ..results import counted
from ..workspace import relative_to_workspace
from .common import emit, to_relpath
from .context import Context, UsageError

if TYPE_CHECKING:
    from ..move_journal import MoveRecord
    from ..mover import Mover
    from ..store import Store


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "restore", help="bring notes back: files named, the whole archive, or undo the last run"
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="original or archived path")
    p.add_argument(
        "--last",
        action="store_true",
        help="undo the last run that moved files (expire, retire, promote, organize, recall), "
        "named first",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="bring every archived note back to its workspace (uninstalling, or a change of mind)",
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

    q = sub.add_parser(
        "on-search",
        help="before a memory_search: bring back the archived note QUERY names better than "
        "the workspace's notes, and show its opening lines",
    )
    q.add_argument("query", nargs="+", metavar="QUERY", help="the search's words, as given")
    q.add_argument("--agent", metavar="ID", help="the searching agent (default: the first one)")
    q.add_argument(
        "--call-id",
        metavar="ID",
        default="",
        help="the tool call's id (the restored note's hit is counted under it)",
    )
    q.add_argument(
        "--answer-by",
        metavar="EPOCH_MS",
        type=int,
        default=None,
        help="the asking hook's deadline: a note restored after it is not counted as the "
        "search's hit (the search ran without it)",
    )
    q.add_argument("--json", action="store_true", help="print one JSON document")
    q.set_defaults(func=cmd_on_search)


# What the hooks say of each outcome (their --json document has the outcome's name).
_SAID_OF_A_MOVE = {
    "changed": "{path}: the archived copy was edited since; left in the archive",
    "conflict": "{path}: a file appeared at this path; both left alone",
    "left_alone": "{path}: left alone (said before)",
    "failed": "{path}: could not be restored: {error}",
}
ON_READ_WORDS = {
    "restored": "restored {path} from {archived} before the read (journaled)",
    "none": "{path}: no note memoryd archived from this path; nothing to do",
    "present": "{path}: a file is there; nothing to do",
    "off": "{path}: restore on demand is off (expire.restore_on_demand); nothing moved",
    **_SAID_OF_A_MOVE,
}
ON_SEARCH_WORDS = {
    "restored": "restored {path} from {archived} for the search (journaled)",
    "none": "“{query}”: no archived note answers it better than the workspace; nothing to do",
    "tied": "“{query}”: archived notes answer it as well as each other: {paths}; nothing moved "
    "(a read of one brings it back)",
    "off": "“{query}”: restore on demand is off (expire.restore_on_demand); nothing moved",
    **_SAID_OF_A_MOVE,
}


def _log_to_stderr() -> None:
    """A hook command's one log line goes to stderr; stdout is the answer."""
    from .. import log

    if not log.CONFIGURED:
        log.configure(stream=sys.stderr)


def _hook_doc(
    args: argparse.Namespace, ctx: Context, asked: dict[str, str], restore: Any, empty: bool
) -> dict[str, Any]:
    """A hook command's answer: ``restore(store, agent)``'s, unless the agent is unknown
    (``Work`` is OpenClaw's agent ``work``, as for ``hits --agent``), restore on demand is
    off, memoryd never ran here (nothing was archived) or nothing is asked (``empty``)."""
    from ..config import normalize_agent_id

    agents = ctx.paths.agents
    agent = args.agent or (agents[0].id if agents else "")
    if args.agent and all(a.id != args.agent for a in agents):
        agent = normalize_agent_id(args.agent)
    if args.agent and all(a.id != agent for a in agents):
        return {"outcome": "none", **asked, "agent": args.agent, "error": "no such agent"}
    if not ctx.cfg.expire.restore_on_demand:
        return {"outcome": "off", **asked, "agent": agent}
    if not ctx.paths.db.exists() or empty:
        return {"outcome": "none", **asked, "agent": agent}
    result: dict[str, Any] = restore(ctx.store(hook=True), agent)
    return result


def cmd_on_search(args: argparse.Namespace, ctx: Context) -> int:
    """Restore on demand for one search: what a ``before_tool_call`` hook of a
    ``memory_search`` asks before the search runs. The query is the model's: only scored
    against the archived and the workspace's notes. Exit 1 only when a move failed."""
    from ..ondemand import RestoreOnDemand

    query = " ".join(args.query).strip()

    def restore(store: Any, agent: str) -> dict[str, Any]:
        return RestoreOnDemand(ctx.cfg, ctx.paths).restore_search(
            store, agent, query, call_id=args.call_id, before_moving=_log_to_stderr,
            answer_by=None if args.answer_by is None else args.answer_by / 1000,
        )  # fmt: skip

    doc = _hook_doc(args, ctx, {"query": query}, restore, not query)
    words = ON_SEARCH_WORDS.get(str(doc.get("outcome")), "“{query}”: {outcome}")
    fields = {"archived": "", "error": "", "path": "", "query": query, **doc}
    fields["paths"] = ", ".join(map(str, doc.get("paths", ())))
    emit(ctx, args, doc, [words.format(**fields)])
    return 1 if doc.get("outcome") == "failed" else 0


def cmd_on_read(args: argparse.Namespace, ctx: Context) -> int:
    """Restore on demand for one read: what a ``before_tool_call`` hook of a
    ``memory_get`` asks, so the read that follows returns the note. ``PATH`` is the agent's
    (a model's) and only ever compared with the journal; exit 1 only when a move failed."""
    from ..ondemand import RestoreOnDemand

    def restore(store: Any, agent: str) -> dict[str, Any]:
        return RestoreOnDemand(ctx.cfg, ctx.paths).restore_read(
            store, agent, args.path, before_moving=_log_to_stderr
        )

    doc = _hook_doc(args, ctx, {"path": args.path}, restore, False)
    words = ON_READ_WORDS.get(str(doc.get("outcome")), "{path}: {outcome}")
    fields = {"archived": "", "error": "", **doc}
    emit(ctx, args, doc, [words.format(**fields)])
    return 1 if doc.get("outcome") == "failed" else 0


# How the commands whose moves brought a note back are named, in what restore says.
_BROUGHT_BY = {
    "recall": "recall",
    "restore-on-demand": "a restore on demand (a search or a read asked for it)",
    "undo": "memoryd restore",
}


def cmd_restore(args: argparse.Namespace, ctx: Context) -> int:
    from ..move_files import MoveError
    from ..move_journal import EXPIRE_BATCH, archived_moves, superseded_by
    from ..mover import mover_for

    if sum(map(bool, (args.paths, args.last, args.all))) != 1:
        raise UsageError("give PATH..., --all or --last (one of them)")
    ws, archive = ctx.paths.workspace, ctx.cfg.archive.dir
    store = ctx.store()
    mover = mover_for(store, ctx.paths)
    repaired = mover.repair()
    restored: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    already: list[dict[str, Any]] = []
    staging = ctx.paths.tiers_root / ".memoryd-staging"
    # (the journal holds paths below the resolved roots; the config may name a symlink)
    in_staging = tuple({f"{staging}/", f"{os.path.realpath(staging)}/"})

    def rel(p: str | None) -> str | None:
        return None if p is None else relative_to_workspace(ws, p) or p

    def in_archive(p: str | None) -> bool:
        from ..workspace import archive_folder_of

        r = rel(p)
        return r is not None and not r.startswith("/") and bool(archive_folder_of(r, archive))

    def undo(rec: MoveRecord, label: str) -> None:
        """Undo ``rec``; a note some other process brought back meanwhile is reported back."""
        is_gist = rec.src.startswith(in_staging)
        try:
            # A summary organize wrote goes back only as written (it is deleted after).
            mover.undo(rec.id, unchanged=is_gist)
        except (MoveError, OSError) as exc:
            # Another process (a recall, a restore on demand, a second restore) took this
            # entry's note back meanwhile: it is where the user wants it, not an error.
            now = mover.get(rec.id)
            moved_on = now is None or now.state != "done" or superseded_by(store, rec.id)
            back = _back_already(mover, rec.src, rel, label, in_archive) if moved_on else None
            if back is not None and not back["away"]:
                already.append(back)
            else:
                errors.append({"path": label, "error": str(exc)})
            return
        row: dict[str, Any] = {"id": rec.id, "from": rel(rec.dst), "to": rel(rec.src)}
        if rec.op == "copy":
            row.update(kind="discarded", to=None)
        elif is_gist:
            row.update(kind="discarded", to=None)
            try:  # memoryd's own summary, as it wrote it: nothing of the user's is lost
                mover.delete(
                    rec.src,
                    reason=f"summary taken back (undo #{rec.id})",
                    batch=undo_batch(rec.batch),
                    expect_sha256=rec.sha256,
                )
            except (MoveError, OSError) as exc:
                errors.append({"path": label, "error": f"left at {rec.src}: {exc}"})
        else:
            row["kind"] = "archived" if in_archive(rec.src) else "restored"
        restored.append(row)
        _remove_empty_archive_folders(ws, rel(rec.dst), archive)

    undoing: dict[str, Any] | None = None
    promoted = _last_promote(ctx, store, mover, repaired) if args.last else None
    retired = _last_retire(ctx, store, mover, repaired) if args.last and not promoted else None
    if (not_moves := promoted if promoted is not None else retired) is not None:
        undoing, back_in_notes, failed_in_notes = not_moves
        restored += back_in_notes
        errors += failed_in_notes
    elif args.last:
        batch = mover.last_batch()
        newest = mover.newest_run()
        if batch is None and newest is None:
            errors.append({"path": "--last", "error": "no journaled move to undo"})
        elif batch is None:
            errors.append({"path": "--last", "error": _not_past(mover, str(newest), None)})
        elif newest is not None and newest != batch:
            # The last run is undone already (by --last, by restore PATH, on demand): this
            # batch is older than what the user means by "the last run".
            errors.append({"path": "--last", "error": _not_past(mover, newest, batch)})
        else:
            undoing = _run_of(batch, mover.batch_entries(batch))
            for rec in reversed(mover.batch_entries(batch)):
                if rec.state == "done" and rec.op in ("move", "copy") and rec.undo_of is None:
                    undo(rec, rel(rec.src) or rec.src)
    elif args.all:
        for rec in archived_moves(store, EXPIRE_BATCH):
            if rec.dst is not None and Path(rec.dst).exists():
                undo(rec, rel(rec.src) or rec.src)
    else:
        wanted: list[tuple[str, MoveRecord]] = []
        unknown: list[str] = []
        for raw in args.paths:
            spots: list[Path | str] = []
            try:
                key = to_relpath(ctx, raw)
                spots.append(ws / key)
            except UsageError:
                key = raw
            if Path(raw).is_absolute():
                spots.append(raw)
            else:  # (where one stands: `restore ./x.md` in memory/, the file no longer there)
                here = relative_to_workspace(ws, Path(os.path.abspath(raw)))
                if here is not None and ws / here not in spots:
                    spots.append(ws / here)
            live = next((found for p in spots if (found := mover.live_away_moves(p))), None)
            if not live:  # another spelling of an archived note's name (a Mac: NFC for NFD)
                spelled = _archived_spelling(store, ws, spots)
                live = mover.live_away_moves(spelled) if spelled else None
            if live:
                wanted.append((key, live[0]))
                continue
            back = next(
                (b for p in spots if (b := _back_already(mover, p, rel, key, in_archive))), None
            )
            if back is None:
                unknown.append(raw)
            elif back["away"]:  # it moved on from there: the user learns where to ask
                errors.append({"path": key, "error": back["message"]})
            else:
                already.append(back)
        if unknown:  # the user's input: exit 2, nothing restored
            raise UsageError(
                f"{', '.join(unknown)}: no journaled move of this path to undo "
                "(give the file's original or archived path; `memoryd restore --last` undoes "
                "the last run that moved files)"
            )
        faults.point("restore.resolved")
        for key, rec in wanted:
            undo(rec, key)
    doc: dict[str, Any] = {
        "restored": restored,
        "already": already,
        "errors": errors,
        "repaired": repaired,
    }
    text = [f"repaired: {r}" for r in repaired]
    if undoing is not None:
        doc["undoing"] = undoing
        text.append(
            f"undoing the {undoing['command']} run of {undoing['at']} "
            f"({counted(undoing['files'], 'file')}; {undoing['batch']})"
        )
    text += [_restored_line(r) for r in restored]
    text += [b["message"] for b in already]
    if args.all:
        from ..workspace import unjournaled_in_archive
        from .status import unjournaled_words

        known = {os.path.realpath(r.dst) for r in archived_moves(store, EXPIRE_BATCH) if r.dst}
        unknown_here = unjournaled_in_archive(ws, ctx.cfg.archive.dir, known)
        doc["unjournaled"] = unknown_here
        if not restored and not errors:
            text.append("nothing in the archive to restore")
        if unknown_here:
            text.append(unjournaled_words(len(unknown_here)) + ":")
            text += [f"  {rel}" for rel in unknown_here]
    emit(ctx, args, doc, text)
    if not args.json:
        for e in errors:
            print(f"memoryd restore: cannot restore {e['path']}: {e['error']}", file=sys.stderr)
    return 1 if errors else 0


def _last_retire(
    ctx: Context, store: Any, mover: Mover, repaired: list[str]
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, str]]] | None:
    """``--last`` when the newest run is a ``retire`` (its sections back in their notes),
    else None (the move journal's newest run is newer)."""
    from .. import retire_run
    from ..retirer import Retirer

    retirer = Retirer(store, mover.check_path)
    repaired += retirer.repair()
    newest = retirer.newest_run()
    if newest is None or not retirer.newer_than_moves(newest[1]):
        return None
    batch = newest[0]
    undoing = {
        "command": "retire",
        "batch": batch,
        "at": clock.iso(newest[1]),
        "files": len(retirer.rows("batch = ? AND state = 'done'", (batch,))),
    }
    if not undoing["files"]:
        # (restore PATH undoes moves, not a retire: an older retire's sections are copied back)
        older = sorted({r.archive for r in retirer.rows("state = 'done' AND undo_of IS NULL")})
        where = ", ".join(relative_to_workspace(ctx.paths.workspace, a) or a for a in older)
        why = (
            f"the retire run of {undoing['at']} ({batch}) is undone already; --last does not "
            "reach back to an older run"
            + (
                f": the sections older retires took are in {where} (`memoryd recall WORDS` "
                "finds them); copy one back into its note by hand"
                if older
                else ""
            )
        )
        return None, [], [{"path": "--last", "error": why}]
    done, failed = retire_run.undo_run(retirer, batch)
    ws = ctx.paths.workspace
    back = [
        {
            "kind": "sections",
            "from": relative_to_workspace(ws, d["archive"]) or d["archive"],
            "to": relative_to_workspace(ws, d["path"]) or d["path"],
            "how": d["how"],
            "sections": d["sections"],
        }
        for d in done
    ]
    return undoing, back, failed


def _last_promote(
    ctx: Context, store: Any, mover: Mover, repaired: list[str]
) -> tuple[dict[str, Any] | None, list[dict[str, Any]], list[dict[str, str]]] | None:
    """``--last`` when the newest run is a promotion a sub-session carried out (its entries
    taken out of ``MEMORY.md`` and the retrospects again), else None."""
    from .. import promote_run
    from ..promoter import Promoter
    from ..retirer import Retirer

    promoter = Promoter(store, mover.check_path)
    repaired += promoter.repair()
    # A run left handed over past its time is settled first (as timed out, with what landed),
    # so what its sub-session wrote is journaled and can be taken out.
    from ..retire_run import memory_budget

    try:
        for r in promote_run.settle_overdue(promoter, lambda w: memory_budget(ctx.paths, w)[1]):
            repaired.append(f"promote run {r['run']}: settled as timed out")
    except Exception as exc:  # (said; the undo below goes on without it)
        repaired.append(f"promote: a run left handed over was not settled: {exc}")
    newest = promoter.newest_settled()
    if newest is None:
        return None
    run, at = newest
    retirer = Retirer(store, mover.check_path)
    retired = retirer.newest_run()
    if (retired is not None and retired[1] > at) or not retirer.newer_than_moves(at):
        return None
    row = promoter.run_row(run)
    assert row is not None
    dests = {e.dest for e in promoter.entries(run) if e.state in ("promoted", "undoing")}
    undoing = {"command": "promote", "batch": f"promote:{run}", "at": clock.iso(at),
               "files": len(dests)}  # fmt: skip
    if row["state"] == "undone":
        why = (f"the promote run of {undoing['at']} ({run}) is undone already; --last does not "
               "reach back to an older run")  # fmt: skip
        return None, [], [{"path": "--last", "error": why}]
    ws = Path(row["plan"]["workspace"])
    try:
        done = promote_run.undo_run(promoter, run, ws)
    except Exception as exc:  # (never a traceback: said, and --last goes on to say it)
        return undoing, [], [{"path": f"promote:{run}", "error": f"not undone: {exc}"}]
    back = [{"kind": "entries", "to": f["path"], "how": f["how"], "entries": f["entries"],
             "sources": f["sources"]} for f in done["files"]]  # fmt: skip
    failed = [{"path": d["path"], "error": f"{d.get('source', '')}: {d['why']}".lstrip(": ")}
              for d in done["left"]]  # fmt: skip
    return undoing, back, failed


def _restored_line(row: dict[str, Any]) -> str:
    """One undone move, said as what happened to the note."""
    if row.get("kind") == "entries":
        return (f"took {row['entries']} promoted entr{'y' if row['entries'] == 1 else 'ies'} "
                f"out of {row['to']} ({row['how']}); promoted again when nominated")  # fmt: skip
    if row.get("kind") == "sections":
        return (
            f"put back {len(row['sections'])} sections from {row['from']} into {row['to']} "
            f"({row['how']})"
        )
    if row.get("kind") == "discarded":
        return f"took back {row['from']} (a copy or summary memoryd made; deleted)"
    if row.get("kind") == "archived":
        return f"put back in the archive: {row['from']} → {row['to']}"
    return f"restored {row['from']} → {row['to']}"


def _back_already(
    mover: Mover, path: Path | str, rel: Any, label: str, in_archive: Any
) -> dict[str, Any] | None:
    """Where the journal says the note once at ``path`` is now (None: no such history, or
    the journal's last place of it is empty now). ``away`` is true when the last move took
    it away again (a later organize, a re-archive): it is not back, and the message names
    the place ``memoryd restore`` brings it back from."""

    from ..move_journal import AWAY_PREFIXES

    found = mover.where_now(path)
    if found is None:
        return None
    here, last = found
    if here is None or not os.path.lexists(here):
        return None
    command = last.batch.split(":", 1)[0]
    at = clock.iso(last.finished if last.finished is not None else last.created)
    where = rel(here) or here
    away = in_archive(here) or (last.undo_of is None and last.batch.startswith(AWAY_PREFIXES))
    if away:
        message = (
            f"moved on since: {command} put it at {where} at {at}; "
            f"`memoryd restore {where}` brings it back from there"
        )
    else:
        by = _BROUGHT_BY.get(command, command)
        message = (
            f"{label}: already back at {where} (brought back by {by} at {at}); nothing to restore"
        )
    return {"path": label, "now": where, "by": command, "at": at, "away": away, "message": message}


def _not_past(mover: Mover, newest: str, older: str | None) -> str:
    """Why ``--last`` stops: the newest run is undone already; the older run it would reach
    (None: no older run is left to undo either)."""
    undone_at = mover.undone_at(newest)
    when = f" (at {clock.iso(undone_at)})" if undone_at is not None else ""
    said = (
        f"the last restore{when} already undid {command_of(newest)}, the last run that moved files"
    )
    if older is None:
        return f"{said}; no older move is left to undo"
    run = _run_of(older, mover.batch_entries(older))
    return (
        f"{said}; --last does not reach back to the {run['command']} run of {run['at']} "
        f"({run['files']} files): `memoryd restore PATH` undoes an older move"
    )


def _run_of(batch: str, entries: list[Any]) -> dict[str, Any]:
    """What ``--last`` is about to undo, as the user knows it: which command, when, how much."""
    undoable = [
        rec
        for rec in entries
        if rec.state == "done" and rec.op in ("move", "copy") and rec.undo_of is None
    ]
    started = min((rec.created for rec in undoable), default=None)
    return {
        "command": command_of(batch),
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
    from ..workspace import archive_folder_of

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


def _archived_spelling(store: Store, ws: Path, spots: list[Path | str]) -> str | None:
    """The journaled original path of an archived note that one of ``spots`` names in
    another spelling the workspace's file system opens as the same file (``Café.md`` for an
    NFD ``café.md`` on a Mac), as the note opened before it was archived; None if none."""
    from ..move_journal import EXPIRE_BATCH, archived_moves
    from ..ondemand import Archived, archive_traits, archived_at_path

    recs = [Archived(r.id, r.src, r.dst, 0.0) for r in archived_moves(store, EXPIRE_BATCH)
            if r.dst is not None]  # fmt: skip
    real = os.path.realpath(ws)
    for spot in spots:
        rel = relative_to_workspace(ws, Path(os.path.abspath(spot)))
        if rel is None:
            continue
        # (the journal holds resolved paths: asked below the workspace's resolved spelling)
        found = archived_at_path(rel, [real], recs, traits_of=archive_traits([real]))
        if found is not None:
            return found.src
    return None
