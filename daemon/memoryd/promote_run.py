"""One promotion run over a workspace: handed to a sub-session, settled, undone.

``hand_over`` records the run and snapshots every place it may write (``MEMORY.md`` and each
``skills/*/docs/retrospect.md``); ``settle`` reads what the sub-session wrote
(:mod:`.policy.promote_settle`), takes out again any ``MEMORY.md`` entry that would push the
file past its bootstrap budget, and records each entry that landed with its source note marked
promoted, all in one transaction (:mod:`.promoter`); ``undo_run`` (``restore --last``) takes
the run's entries out of the files as they are now, by their recorded text: never a whole
earlier copy written back over changes made since.

A destination is data: a place that is a symlink, lies under a symlinked folder or outside
the workspace is refused at settle (said, counted), and an undo that meets one says so and
goes on with the other files.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from .move_files import MoveError
from .policy import promote_settle as ps
from .promoter import AlreadySettled, Changed, Promoter, read_or_none

ATTEMPTS = 3  # reads and plans again when a save lands in between, then says so
DEFAULT_TIMEOUT = 180.0  # seconds a sub-session has (the plugin's promoteTimeoutMs by default)


def destinations(ws: Path) -> list[str]:
    """The workspace-relative places a promotion may write that exist now."""
    out = [ps.MEMORY] if (ws / ps.MEMORY).is_file() else []
    skills = ws / "skills"
    if skills.is_dir():
        for doc in sorted(skills.glob("*/docs/retrospect.md")):
            rel = doc.relative_to(ws).as_posix()
            if ps.is_destination(rel) and doc.is_file() and not doc.is_symlink():
                out.append(rel)
    return out


def snapshot(ws: Path) -> dict[str, bytes | None]:
    """Every destination's bytes now (``MEMORY.md`` as None when there is none)."""
    files: dict[str, bytes | None] = {rel: read_or_none(ws / rel) for rel in destinations(ws)}
    files.setdefault(ps.MEMORY, None)
    return files


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "surrogateescape")


def refusal(promoter: Promoter, ws: Path, rel: str) -> str | None:
    """Why memoryd will not read or write ``rel`` of ``ws`` for a promotion; None: it may."""
    path = ws / rel
    if not ps.is_destination(rel) or ".." in Path(rel).parts:
        return f"{rel}: not a place a promotion writes"
    try:
        promoter.check_path(path)
    except MoveError as exc:
        return f"{rel}: refused ({exc})"
    if path.is_symlink():
        return f"{rel}: refused (a symlink)"
    return None


def overdue(row: dict[str, Any], now: float | None = None) -> bool:
    """Whether a handed-over run is older than the time its sub-session was given."""
    timeout = float(row["plan"].get("timeout", DEFAULT_TIMEOUT))
    return (time.time() if now is None else now) >= float(row["created"]) + timeout


def settle_overdue(promoter: Promoter, budget_of: Any) -> list[dict[str, Any]]:
    """Settle, as timed out with what landed, every run handed over and left past its time
    (a gateway restarted mid-wait, a plugin that gave up); their results."""
    out = []
    with promoter.locked():
        for row in promoter.pending():
            if overdue(row):
                ws = Path(row["plan"]["workspace"])
                with contextlib.suppress(AlreadySettled):
                    out.append(settle(promoter, row["run"], ws, budget_of(ws), "timed out"))
    return out


def settle(
    promoter: Promoter, run: str, ws: Path, budget: int, status: str
) -> dict[str, Any]:
    """Check what landed for ``run``, record it; the result (also stored with the run).
    Under the mover's lock, and recorded only while the run is still handed over
    (:class:`.promoter.AlreadySettled` otherwise)."""
    with promoter.locked():
        row = promoter.run_row(run)
        assert row is not None
        if row["state"] != "handed":
            raise AlreadySettled(run)
        return _settle(promoter, row, ws, budget, status)


def _settle(
    promoter: Promoter, row: dict[str, Any], ws: Path, budget: int, status: str
) -> dict[str, Any]:
    run = row["run"]
    plan = row["plan"]
    sources = frozenset(i["source"] for i in plan["items"])
    before = promoter.files_before(run)
    places = sorted(set(before) | set(destinations(ws)))
    entries: list[dict[str, Any]] = []
    landed: dict[str, bytes | None] = {}
    declined: list[dict[str, str]] = []
    errors: list[str] = []
    refused: list[str] = []
    for rel in places:
        why = refusal(promoter, ws, rel)
        if why is not None:
            refused.append(why)
            continue
        for _ in range(ATTEMPTS):
            try:
                now = read_or_none(ws / rel)
            except OSError as exc:
                errors.append(f"{rel}: not read ({exc})")
                break
            text = _text(now)
            if text is None:
                break
            pieces = ps.landed(_text(before.get(rel)), text, run, sources)
            if not pieces:
                break
            out = ps.over_budget(text, pieces, budget) if rel == ps.MEMORY else []
            data = now
            if out:
                data = ps.without(text, out).encode("utf-8", "surrogateescape")
                try:
                    promoter.rewrite(run, ws / rel, now, data)
                except Changed:
                    continue  # a save in between: read it again
            landed[rel] = data
            for p in pieces:
                gone = p in out
                why = (
                    f"would push MEMORY.md past its bootstrap budget ({len(text)} > {budget} "
                    "characters): taken out again, still nominated"
                ) if gone else None
                entries.append({"source": p.source, "dest": rel, "piece": p.text,
                                "replaced": "", "state": "declined" if gone else
                                "promoted", "note": why})  # fmt: skip
                if gone:
                    declined.append({"source": p.source, "dest": rel, "why": str(why)})
            break
        else:
            errors.append(f"{rel}: kept changing while memoryd read it; settle again")
    promoted: dict[str, list[str]] = {}
    for e in entries:
        if e["state"] == "promoted":
            promoted.setdefault(e["source"], [])
            if e["dest"] not in promoted[e["source"]]:
                promoted[e["source"]].append(e["dest"])
    result = {
        "run": run,
        "status": status,
        "promoted": [{"source": s, "dest": d[0], "also": d[1:]} for s, d in promoted.items()],
        "declined": [d for d in declined if d["source"] not in promoted],
        "not_landed": sorted(
            s for s in sources if s not in promoted and not any(d["source"] == s for d in declined)
        ),
        "left_for_user": plan.get("left", []),
        "refused": refused,
        "errors": errors,
    }
    marks = [(s, d[0]) for s, d in promoted.items()]
    promoter.record_settled(run, landed, entries, result, marks, refused=len(refused))
    return result


def undo_run(promoter: Promoter, run: str, ws: Path) -> dict[str, Any]:
    """Take ``run``'s promoted entries out of their files as they are now, each by its
    recorded text where it is still there whole; every other line stays. The file is then its
    earlier self byte for byte exactly when nothing else changed it. A file the run created
    goes only when nothing but what the run wrote was in it."""
    entries = [e for e in promoter.entries(run) if e.state in ("promoted", "undoing")]
    before = promoter.files_before(run)
    by_dest: dict[str, list[Any]] = {}
    for e in entries:
        by_dest.setdefault(e.dest, []).append(e)
    files: list[dict[str, Any]] = []
    undone: list[int] = []
    left: list[dict[str, str]] = []
    with promoter.locked():
        for rel, mine in by_dest.items():
            try:
                took = _undo_file(promoter, run, ws, rel, mine, before.get(rel), files, left)
            except (MoveError, OSError) as exc:
                left.append({"path": rel, "why": f"not undone: {exc}; left as it is"})
                continue
            # recorded file by file: an undo stopped between two files resumes where it was
            promoter.record_undone(run, [e.id for e in took], sorted({e.source for e in took}))
            undone += [e.id for e in took]
        promoter.finish_undo(run)
    sources = sorted({e.source for e in entries if e.id in undone})
    return {"run": run, "files": files, "sources": sources, "left": left}


def _undo_file(
    promoter: Promoter,
    run: str,
    ws: Path,
    rel: str,
    mine: list[Any],
    was: bytes | None,
    files: list[dict[str, Any]],
    left: list[dict[str, str]],
) -> list[Any]:
    """One file's part of :func:`undo_run`; the entries that are out of it now."""
    why = refusal(promoter, ws, rel)
    if why is not None:
        raise MoveError(why)
    path = ws / rel
    for _ in range(ATTEMPTS):
        now = read_or_none(path)
        if now is None:  # removed since: nothing to take out
            missing = list(range(len(mine)))
            break
        text, missing = ps.take_out(_text(now) or "", [e.piece for e in mine])
        new: bytes | None = text.encode("utf-8", "surrogateescape")
        if was is None and ps.only_scaffold(text, rel):
            new = None  # made by the run, nothing else in it
        if len(missing) == len(mine):
            break
        promoter.mark_undoing([e.id for n, e in enumerate(mine) if n not in missing])
        try:
            promoter.rewrite(run, path, now, new)
        except Changed:
            continue
        how = ("as it was before the run, byte for byte" if new == was else
               "the run's entries taken out; every other line kept")  # fmt: skip
        if was is None and new is not None:
            how = "the run's entries taken out; the file stays (it holds more than the run wrote)"
        files.append({"path": rel, "how": how, "entries": len(mine) - len(missing),
                      "sources": sorted({e.source for n, e in enumerate(mine)
                                         if n not in missing})})  # fmt: skip
        break
    else:
        left.append({"path": rel, "why": "kept changing while memoryd read it"})
        return []
    took = []
    for n, e in enumerate(mine):
        # (an entry found undoing was out already: an undo stopped after its rewrite)
        if n not in missing or e.state == "undoing":
            took.append(e)
        else:
            left.append({"path": rel, "source": e.source,
                         "why": "the entry is not there whole (edited or removed since): "
                         "left as it is"})  # fmt: skip
    return took
