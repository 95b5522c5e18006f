"""One promotion run over a workspace: handed to a sub-session, settled, undone.

``hand_over`` records the run and snapshots every place it may write (``MEMORY.md`` and each
``skills/*/docs/retrospect.md``); ``settle`` reads what the sub-session wrote
(:mod:`.policy.promote_settle`), takes out again any ``MEMORY.md`` entry that would push the
file past its bootstrap budget, and records each entry that landed with its source note marked
promoted, all in one transaction (:mod:`.promoter`); ``undo_run`` (``restore --last``) takes
the run's entries out of the files as they are now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .policy import promote_settle as ps
from .promoter import Changed, Promoter, read_or_none

ATTEMPTS = 3  # reads and plans again when a save lands in between, then says so


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
    return None if data is None else data.decode("utf-8", "replace")


def settle(
    promoter: Promoter, run: str, ws: Path, budget: int, status: str
) -> dict[str, Any]:
    """Check what landed for ``run``, record it; the result (also stored with the run)."""
    row = promoter.run_row(run)
    assert row is not None
    plan = row["plan"]
    sources = frozenset(i["source"] for i in plan["items"])
    before = promoter.files_before(run)
    places = sorted(set(before) | set(destinations(ws)))
    entries: list[dict[str, Any]] = []
    landed: dict[str, bytes | None] = {}
    declined: list[dict[str, str]] = []
    errors: list[str] = []
    for rel in places:
        for _ in range(ATTEMPTS):
            now = read_or_none(ws / rel)
            text = _text(now)
            if text is None:
                break
            pieces = ps.landed(_text(before.get(rel)), text, run, sources)
            if not pieces:
                break
            out = ps.over_budget(text, pieces, budget) if rel == ps.MEMORY else []
            data = now
            if out:
                data = ps.without(text, out).encode("utf-8")
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
                                "replaced": p.replaced, "state": "declined" if gone else
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
        "errors": errors,
    }
    marks = [(s, d[0]) for s, d in promoted.items()]
    promoter.record_settled(run, landed, entries, result, marks)
    return result


def undo_run(promoter: Promoter, run: str, ws: Path) -> dict[str, Any]:
    """Take ``run``'s promoted entries out of their files as they are now: the file as it was
    before the run, byte for byte, when nothing changed it since; else each entry cut where it
    still is whole, every other edit kept. A new file left empty goes."""
    entries = [e for e in promoter.entries(run) if e.state == "promoted"]
    before = promoter.files_before(run)
    landed = promoter.landed_bytes(run)
    by_dest: dict[str, list[Any]] = {}
    for e in entries:
        by_dest.setdefault(e.dest, []).append(e)
    files: list[dict[str, Any]] = []
    undone: list[int] = []
    left: list[dict[str, str]] = []
    for rel, mine in by_dest.items():
        path = ws / rel
        for _ in range(ATTEMPTS):
            now = read_or_none(path)
            was = before.get(rel)
            if now is None:  # removed since: nothing to take out
                missing = list(range(len(mine)))
                break
            if now == was:  # as before the run already (an undo stopped after its write)
                missing = []
                files.append({"path": rel, "how": "as it was before the run already",
                              "entries": len(mine), "sources": sorted({e.source for e in mine})})
                break
            if now == landed.get(rel):
                new, missing, how = was, [], "as it was before the run, byte for byte"
            else:
                text, missing = ps.take_out(_text(now) or "", [(e.piece, e.replaced) for e in mine])
                new = None if (was is None and not text.strip()) else text.encode("utf-8")
                how = "entries taken out; edits made since kept"
            if new == now:
                break
            try:
                promoter.rewrite(run, path, now, new)
            except Changed:
                continue
            files.append({"path": rel, "how": how, "entries": len(mine) - len(missing),
                          "sources": sorted({e.source for n, e in enumerate(mine)
                                             if n not in missing})})  # fmt: skip
            break
        else:
            missing = list(range(len(mine)))
            left.append({"path": rel, "why": "kept changing while memoryd read it"})
        mine_undone = []
        for n, e in enumerate(mine):
            if n in missing:
                left.append({"path": rel, "source": e.source,
                             "why": "the entry is not there whole (edited or removed since): "
                             "left as it is"})  # fmt: skip
            else:
                mine_undone.append(e)
        # recorded file by file: an undo stopped between two files resumes where it was
        promoter.record_undone(run, [e.id for e in mine_undone],
                               sorted({e.source for e in mine_undone}))  # fmt: skip
        undone += [e.id for e in mine_undone]
    promoter.finish_undo(run)
    sources = sorted({e.source for e in entries if e.id in undone})
    return {"run": run, "files": files, "sources": sources, "left": left}
