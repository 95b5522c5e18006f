"""Layered recall: search hot/ → warm/ → gist/ → forgotten/ (:mod:`.search`), stop at the
first tier with a hit, then act on it.

More matches than ``recall_max_files`` means the words are too broad: the best few are
shown, nothing is rotated or counted, and the reader is asked to narrow the words (the
seed: "do not read them all in"), unless one note clearly leads.

A definite hit rotates the note back as the seed's table says (see
:func:`memoryd.tierstore.plan.rotation`), is recorded in ``hits`` as kind ``recall`` (agent
``memoryd``), and refreshes ``refcount.json``. After the four tiers come memoryd's archive
(the notes expire moved out, brought back through the journal), the sections ``retire``
archived, and the notes brought back moments ago.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import faults
from ..config import Config, Paths
from ..fsutil import NOT_A_NOTE_COUNTER, take_not_notes
from ..move_files import MoveError
from ..move_journal import recall_batch
from ..store import Store
from .layout import hit_key, placement_of, tiers_lock
from .plan import rotation
from .records import load_records, mark_rescued, reconcile, save_records, write_refcount
from .search import (
    ARCHIVE,
    Match,
    archive_brings_back,
    layered_search,
    match_file,
    needs_unicode_fold,
    normalise_words,
    read_all,
    read_shown,
    shown_text,
)


def no_match_message(words: list[str], delete_after_days: float) -> str:
    """What recall says when nothing matched: the three reasons it could be, in English."""
    quoted = " ".join(words)
    return (
        f"Nothing about '{quoted}' in the tier store or the archive. Possible reasons:\n"
        "  1. it was never recorded;\n"
        f"  2. it was deleted (after {delete_after_days:g} days in forgotten/ without a "
        "retrieval; a compressed copy may still be in the graveyard);\n"
        "  3. the words do not match: try other words."
    )


def skipped_message(n: int) -> str:
    """Said after the answer when files were skipped unread: without it a FIFO in place of the
    archived note ends in "it was never recorded", which memoryd cannot know."""
    files = "1 file" if n == 1 else f"{n} files"
    verb = "was" if n == 1 else "were"
    return (
        f"\n{files} in the tier store or the archive {verb} skipped unread: not a regular file "
        "(a FIFO, a device, a symlink); memoryd's log names each (note.not_a_note), and what you "
        "look for may be there."
    )


@dataclass
class RecallOutcome:
    words: list[str]
    tier: str | None
    matches: int
    shown: list[dict[str, Any]] = field(default_factory=list)
    too_many: bool = False
    rotations: list[dict[str, Any]] = field(default_factory=list)
    hits_recorded: int = 0
    message: str = ""
    not_notes: int = 0  # files read as notes that were none (a FIFO, a device...): skipped

    def as_dict(self) -> dict[str, Any]:
        return {
            "words": self.words,
            "tier": self.tier,
            "matches": self.matches,
            "too_many": self.too_many,
            "shown": self.shown,
            "rotations": self.rotations,
            "hits_recorded": self.hits_recorded,
            "message": self.message,
            **({"not_notes": self.not_notes} if self.not_notes else {}),
        }


def recall(
    cfg: Config,
    paths: Paths,
    store: Store,
    words: list[str],
    now: float,
    *,
    rotate: bool = True,
    with_text: bool = True,
    agent: str | None = None,
) -> RecallOutcome:
    """Search, and on a definite hit rotate, count and report (the seed's hit handling).
    A note found in memoryd's archive (only ``agent``'s, when given) is brought back through
    the journal, as a hand ``restore`` would, and counted as a recall hit."""
    take_not_notes()  # (what an earlier call in this process refused is not this one's)
    out = _recall(cfg, paths, store, words, now, rotate=rotate, with_text=with_text, agent=agent)
    refused = take_not_notes()
    if refused:
        out.not_notes = refused
        out.message += skipped_message(refused)
        if rotate:
            with store.transaction():
                store.bump(NOT_A_NOTE_COUNTER, refused)
    return out


def _recall(
    cfg: Config,
    paths: Paths,
    store: Store,
    words: list[str],
    now: float,
    *,
    rotate: bool,
    with_text: bool,
    agent: str | None,
) -> RecallOutcome:
    from ..mover import mover_for

    root = paths.tiers_root
    limit = max(1, cfg.tiers.recall_max_files)
    wanted = normalise_words(words)
    if not wanted:
        raise ValueError("recall needs at least one word")
    with tiers_lock(paths):
        mover = mover_for(store, paths) if rotate else None
        if mover is not None:
            mover.repair()
        result = layered_search(root, wanted)
        out = RecallOutcome(wanted, result.tier, len(result.matches))
        if result.tier is None:
            found = _recall_from_archive(
                cfg, paths, store, wanted, now, limit, rotate=rotate, agent=agent
            )
            if found is None:
                found = _recall_retired(paths, store, wanted, limit)
            if found is None:
                found = _restored_lately(paths, store, wanted, time.time(), agent, limit)
            if found is not None:
                if with_text is False:
                    for d in found.shown:
                        d.pop("text", None)
                return found
            out.message = no_match_message(wanted, cfg.tiers.delete_after_days)
            return out
        shown = result.shown(limit)
        out.too_many = result.too_many(limit)
        others: list[Match] = []
        lead = result.leader() if out.too_many else None
        if lead is not None:  # one note clearly ahead: it is the hit, the others are listed
            shown = [m for m in result.matches if m.note == lead]
            others = [m for m in result.matches if m.note != lead]
            out.too_many = False
        if out.too_many:
            out.message = (
                f"{len(result.matches)} files in {result.tier}/ match; showing the best "
                f"{len(shown)}. Narrow the words to read one."
            )
            out.shown = [_match_dict(m, None) for m in shown]
            return out

        notes = list(dict.fromkeys(m.note for m in shown))
        batch = recall_batch()
        moved_to: dict[str, str] = {}  # old rel → new rel
        for note in notes:
            if mover is None:
                break
            place = placement_of(root, note)
            for src, dst, reason in rotation(place, result.tier):
                row: dict[str, Any] = {"note": note, "src": src, "dst": dst, "reason": reason}
                try:
                    mover.move(root / src, root / dst, reason=reason, batch=batch)
                    with contextlib.suppress(OSError):
                        os.utime(root / dst, (now, now))  # "touch": its decay starts over
                    moved_to[src] = dst
                    row["status"] = "done"
                except (MoveError, OSError) as exc:
                    row["status"] = "failed"
                    row["error"] = str(exc)
                out.rotations.append(row)

        if rotate:
            _record(store, root, notes, wanted, now, marked=result.tier == "forgotten")
            out.hits_recorded = len(notes)
            write_refcount(store, root, now, only=notes)

        for m in shown:
            now_rel = moved_to.get(m.rel, m.rel)
            d = _match_dict(m, now_rel)
            if result.tier == "gist":
                place = placement_of(root, m.note)
                orig = next((f.rel for f in place.originals), None)
                d["original"] = orig
            if with_text and (text := read_shown(root / now_rel)) is not None:
                d["text"] = text
            out.shown.append(d)
        out.message = _hit_message(result.tier, out)
        if others:
            out.message += _others_line(others, [m.rel for m in others], len(result.matches))
        return out


def _recall_retired(
    paths: Paths, store: Store, words: list[str], limit: int
) -> RecallOutcome | None:
    """Sections ``memoryd retire`` moved into the archive: shown, nothing moved."""
    from .recall_retired import RETIRED, search_retired, shown

    found = search_retired(paths, store, words, match_file)
    if not found:
        return None
    out = RecallOutcome(words, RETIRED, len(found))
    out.shown = [shown(*f) for f in found[:limit]]
    first = found[0][0]
    out.message = (
        f"{len(found)} retired sections match (moved out of their notes by `memoryd retire`); "
        f"the best from {first.source} lines {first.first_line}-{first.last_line}, retired "
        f"{first.when}, kept in {first.archive}. `memoryd restore --last` puts the last "
        "retire's sections back."
    )
    return out


def _others_line(others: list[Any], names: list[str], total: int, shown: int = 10) -> str:
    """The line naming the matches left behind a clear leader (not moved, not counted)."""
    listed = ", ".join(names[:shown]) + (f", … ({len(names)} in all)" if len(names) > shown else "")
    return (
        f"\n{total} matched; this one clearly leads (more of the words, or far more often). "
        f"The others, not moved: {listed}. Narrow the words if it is not the one."
    )


WORKSPACE = "workspace"  # found nowhere else: back in the workspace (from the archive, lately)


@dataclass(frozen=True)
class ArchivedMatch:
    """An archived workspace note containing some of the words."""

    move_id: int
    src: str  # absolute: where it comes back to
    dst: str  # absolute: the archived copy
    agent: str
    rel: str  # its place in the workspace (where it comes back to)
    archived_rel: str
    archived_at: float
    words: tuple[str, ...]
    occurrences: int
    snippet: str
    mtime: float

    def rank_key(self) -> tuple[Any, ...]:
        return (-len(self.words), -self.occurrences, -self.archived_at, self.rel)


def search_archive(
    paths: Paths, store: Store, words: list[str], agent: str | None = None
) -> list[ArchivedMatch]:
    """The notes expire archived (still there, not restored) that contain any of ``words``."""
    from ..ondemand import archived_files

    fold = needs_unicode_fold(words)
    out: list[ArchivedMatch] = []
    for a in archived_files(store):
        owner = paths.owner_of(a.src)
        if owner is None or (agent is not None and owner[0] != agent):
            continue
        data = read_all(a.dst)
        if data is None:
            continue
        found, occ, _tag, snippet = match_file(data, words, ARCHIVE, fold)
        if not found:
            continue
        archived_rel = (paths.owner_of(a.dst) or (owner[0], a.dst))[1]
        try:
            mtime = os.lstat(a.dst).st_mtime
        except OSError:
            continue
        out.append(
            ArchivedMatch(
                a.move_id,
                a.src,
                a.dst,
                owner[0],
                owner[1],
                archived_rel,
                a.archived_at,
                found,
                occ,
                snippet,
                mtime,
            )
        )
    out.sort(key=ArchivedMatch.rank_key)
    return out


def _recall_from_archive(
    cfg: Config,
    paths: Paths,
    store: Store,
    words: list[str],
    now: float,
    limit: int,
    *,
    rotate: bool,
    agent: str | None,
) -> RecallOutcome | None:
    """The archive layer: None when nothing there matches either."""
    from ..mover import mover_for

    matches = search_archive(paths, store, words, agent)
    if not matches:
        return None
    out = RecallOutcome(words, ARCHIVE, len(matches))
    shown = matches[:limit]
    others: list[ArchivedMatch] = []
    brought = archive_brings_back([(len(m.words), m.occurrences) for m in matches], limit)
    if brought == 1 and len(matches) > limit:
        shown, others = matches[:1], matches[1:]
    elif brought == 0:
        out.too_many = True
        out.message = (
            f"{len(matches)} archived notes match; showing the best {len(shown)}. "
            "Narrow the words to read one."
        )
        out.shown = [_archived_dict(m, None) for m in shown]
        return out
    batch = recall_batch()
    mover = mover_for(store, paths) if rotate else None
    restored: list[ArchivedMatch] = []
    faults.point("recall.archive_chosen")
    for m in shown:
        d = _archived_dict(m, None)
        if mover is not None:
            row: dict[str, Any] = {
                "note": m.rel,
                "src": m.archived_rel,
                "dst": m.rel,
                "reason": "recalled from memoryd's archive",
            }
            try:
                # A move of its own (not an undo of expire's): `restore --last` then puts the
                # note back in the archive, and the mover refuses to overwrite a file there.
                mover.move(Path(m.dst), Path(m.src), reason=row["reason"], batch=batch)
                row["status"] = "done"
                d["now"] = m.rel
                restored.append(m)
            except (MoveError, OSError) as exc:
                if _brought_back_meanwhile(store, m):
                    # A restore on demand or by hand took this very row back first: the note
                    # is where the recall wanted it, which is what the agent must hear.
                    row["status"] = "done"
                    row["note_back"] = "already brought back by another restore"
                    d["now"] = m.rel
                    restored.append(m)
                else:
                    row["status"] = "failed"
                    row["error"] = str(exc)
            out.rotations.append(row)
        where = m.rel if d["now"] else m.archived_rel
        owner_ws = next((a.workspace for a in paths.agents if a.id == m.agent), paths.workspace)
        if (text := read_shown(owner_ws / where)) is not None:
            d["text"] = text
        out.shown.append(d)
    if rotate and restored:
        query = " ".join(words)
        with store.transaction():
            store.conn.executemany(
                "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
                "VALUES (?, ?, ?, 'recall', ?, ?)",
                [(m.agent, str(uuid.uuid4()), m.rel, now, query) for m in restored],
            )
            store.bump("tiers_recalls")
        out.hits_recorded = len(restored)
    n = len(shown)
    files = "note" if n == 1 else "notes"
    if restored:
        names = ", ".join(m.rel for m in restored)
        out.message = (
            f"{n} {files} found in memoryd's archive (expired, not in the tier store); "
            f"restored to the workspace: {names}. Undo with `memoryd restore --last`."
        )
    elif not out.rotations:
        out.message = f"{n} {files} found in memoryd's archive (nothing moved: --peek)."
    else:
        out.message = f"{n} {files} found in memoryd's archive, not brought back: " + "; ".join(
            _why_not_restored(m, r) for m, r in zip(shown, out.rotations, strict=True)
        )
    if others:
        out.message += _others_line(others, [m.rel for m in others], len(matches))
        out.shown += [_archived_dict(m, None) for m in others[:limit]]  # listed, no text
    return out


def _why_not_restored(m: ArchivedMatch, row: dict[str, Any]) -> str:
    """Why one archived note stayed in the archive, and what to do, in a person's words."""
    if os.path.lexists(m.src):
        return (
            f"a file is already at {m.rel} (memoryd never overwrites one); the archived copy "
            f"is shown from {m.archived_rel}: move or rename {m.rel} and recall again to "
            "bring it back"
        )
    return f"{m.rel} could not be brought back from {m.archived_rel} ({row.get('error')})"


# How far back a note brought back from the archive still answers a recall that finds it
# nowhere else: recalls started together wait at the lock, and the first brings it back.
RESTORED_LATELY_SECONDS = 3600.0


def _restored_lately(
    paths: Paths, store: Store, words: list[str], now: float, agent: str | None, limit: int
) -> RecallOutcome | None:
    """The notes containing ``words`` that came back from memoryd's archive in the last
    :data:`RESTORED_LATELY_SECONDS` and are there ("never recorded" would be false), at most
    ``limit`` (an undone expire run brings back many); None if none. Nothing moves and
    nothing is counted."""
    from ..move_journal import EXPIRE_BATCH, returned_since

    fold = needs_unicode_fold(words)
    out = RecallOutcome(words, WORKSPACE, 0)
    for dst, finished in returned_since(store, EXPIRE_BATCH, now - RESTORED_LATELY_SECONDS):
        owner = paths.owner_of(dst)
        if owner is None or (agent is not None and owner[0] != agent):
            continue
        data = read_all(dst)
        if data is None:
            continue
        found, occ, _tag, snippet = match_file(data, words, ARCHIVE, fold)
        if not found:
            continue
        out.shown.append(
            {
                "note": owner[1],
                "path": owner[1],
                "now": owner[1],
                "summary": False,
                "words": list(found),
                "occurrences": occ,
                "tag_match": False,
                "snippet": snippet,
                "agent": owner[0],
                "restored_at": finished,
                "text": shown_text(data),
            }
        )
        if len(out.shown) >= limit:
            break
    if not out.shown:
        return None
    out.matches = len(out.shown)
    names = ", ".join(d["note"] for d in out.shown)
    out.message = (
        f"Already back in the workspace: {names} (brought back from memoryd's archive "
        "moments ago, by another recall or a restore); nothing moved, read it there."
    )
    return out


def _brought_back_meanwhile(store: Store, m: ArchivedMatch) -> bool:
    """Whether the archive row ``m`` was listed from has been moved on since (undone, or a
    later move took the file) and a file is at the note's place in the workspace again."""
    from ..move_journal import superseded_by

    row = store.conn.execute("SELECT state FROM moves WHERE id = ?", (m.move_id,)).fetchone()
    moved_on = row is None or row[0] != "done" or superseded_by(store, m.move_id) is not None
    return moved_on and os.path.lexists(m.src)


def _archived_dict(m: ArchivedMatch, now_rel: str | None) -> dict[str, Any]:
    return {
        "note": m.rel,
        "path": m.archived_rel,
        "now": now_rel,
        "summary": False,
        "words": list(m.words),
        "occurrences": m.occurrences,
        "tag_match": False,
        "snippet": m.snippet,
        "agent": m.agent,
        "archived_at": m.archived_at,
    }


def _match_dict(m: Match, now_rel: str | None) -> dict[str, Any]:
    return {
        "note": m.note,
        "path": m.rel,
        "now": now_rel,
        "summary": m.is_summary,
        "words": list(m.words),
        "occurrences": m.occurrences,
        "tag_match": m.tag_match,
        "snippet": m.snippet,
    }


def _hit_message(tier: str, out: RecallOutcome) -> str:
    """What happened, said plainly: a move is only announced when one was made."""
    n = len(out.shown)
    files = "file" if n == 1 else "files"
    if tier == "hot":
        return f"{n} {files} in hot/ (already the hottest tier; nothing moved)."
    done = sum(1 for r in out.rotations if r.get("status") == "done")
    if not done:
        why = "--peek" if not out.rotations else "the moves failed"
        return f"{n} {files} in {tier}/ (nothing moved: {why})."
    if tier == "warm":
        return f"{n} {files} in warm/; moved back to hot/."
    if tier == "gist":
        return (
            f"{n} {files} in gist/ (summaries); summary and warm original moved to hot/: "
            "read the original there when the summary is not enough."
        )
    return (
        f"{n} {files} recovered from forgotten/ (about to be deleted); moved back to warm/ "
        "and marked, so it is never deleted."
    )


def _record(
    store: Store, root: Path, notes: list[str], words: list[str], now: float, *, marked: bool
) -> None:
    """Count the recall as a hit of each note; bring its record in line; mark forgotten ones."""
    query = " ".join(words)
    with store.transaction():
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) "
            "VALUES ('memoryd', ?, ?, 'recall', ?, ?)",
            [(str(uuid.uuid4()), hit_key(n), now, query) for n in notes],
        )
        records = load_records(store, notes)
        current = {n: placement_of(root, n) for n in notes}
        changed = reconcile(current, records, now)
        save_records(store, [r for n in notes if (r := changed.get(n, records.get(n)))])
        if marked:
            mark_rescued(store, records, notes, "recall")
        store.bump("tiers_recalls")
