"""Layered recall (seed 004): search hot/ → warm/ → gist/ → forgotten/, stop at the first hit.

Matching is the seed's ``grep -il "w1\\|w2"``: a file matches when it contains any
of the words, case-insensitively (substrings, so Chinese words need no
tokenising). Within a tier, files are ranked by how many different words they
contain, then (in gist/) whether a word is among the gist's tags, then how often
the words occur, then by recency. More matches than ``recall_max_files`` means the
words are too broad: the best few are shown, nothing is rotated or counted, and
the reader is asked to narrow the words (the seed: "do not read them all in").

A definite hit rotates the note back as the seed's table says (see
:func:`memoryd.tierstore.plan.rotation`), is recorded in ``hits`` as kind ``recall`` (agent
``memoryd``), and refreshes ``refcount.json``. Searching is pure reading;
:func:`recall` is the shell that moves, records and reports.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import faults
from ..config import Config, Paths
from ..fsutil import NOT_A_NOTE_COUNTER, read_note, take_not_notes
from ..mover import MoveError
from ..store import Store
from ..workspace import is_utf8_name, relative_to_workspace
from .gist import TAGS_LABEL
from .layout import TIERS, hit_key, note_of, placement_of, tiers_lock
from .plan import rotation
from .records import load_records, mark_rescued, reconcile, save_records, write_refcount

SNIPPET = 160


@dataclass(frozen=True)
class Match:
    """One matching file: where it is, which words it has, and a line to show."""

    tier: str
    filename: str
    note: str
    is_summary: bool
    words: tuple[str, ...]
    occurrences: int
    tag_match: bool
    mtime: float
    snippet: str

    @property
    def rel(self) -> str:
        return f"{self.tier}/{self.filename}"

    def rank_key(self) -> tuple[Any, ...]:
        return (-len(self.words), not self.tag_match, -self.occurrences, -self.mtime, self.rel)


LEAD_OCCURRENCES = 3  # a lead by occurrences alone needs at least this many
LEAD_RATIO = 2.0  # … and this many times the runner-up's


def clearly_ahead(leader: tuple[int, int], runner_up: tuple[int, int]) -> bool:
    """Whether the best match clearly leads the next best (each: distinct query words it
    holds, occurrences of them). Pure.

    The rule, stated: it holds *more of the query's words* than any other match (the note
    that has "kayak" and "june" over the notes that only mention June), or as many but the
    words occur at least :data:`LEAD_OCCURRENCES` times in it and at least
    :data:`LEAD_RATIO` times as often as in the runner-up (a note about kayaks over notes
    that say the word once). Anything closer is no clear lead: narrow the words."""
    (words, occ), (rival_words, rival_occ) = leader, runner_up
    if words != rival_words:
        return words > rival_words
    return occ >= LEAD_OCCURRENCES and occ >= LEAD_RATIO * rival_occ


def archive_brings_back(ranked: list[tuple[int, int]], limit: int) -> int:
    """How many of the ranked archive matches (each: distinct query words it holds,
    occurrences) recall brings back: all of them up to ``limit``; of more, the leader alone
    when it is :func:`clearly_ahead`, else none (the agent must narrow its words). Pure:
    ``simulate`` replays the same rule (:func:`archive_recall_picks`)."""
    if len(ranked) <= limit:
        return len(ranked)
    return 1 if clearly_ahead(ranked[0], ranked[1]) else 0


def archive_recall_picks(query: str, texts: Mapping[str, str], limit: int = 3) -> list[str]:
    """The archived notes (path → text) a recall with ``query``'s words would bring back,
    ranked as :func:`search_archive` ranks them (the time each was archived unknown: by
    path). Pure; what ``simulate``'s harm replay asks of recall."""
    words = normalise_words([query])
    if not words:
        return []
    fold = _needs_unicode_fold(words)
    needles = [w.encode("utf-8") for w in words]
    found = []
    for path, text in texts.items():
        # (match_file's words found and their occurrences, the note's text lowered once
        # for every search a replay asks of it: thousands, over the same notes)
        hay = _archived_haystack(text, fold)
        got = occ = 0
        for wb in needles:
            n = hay.count(wb)
            if n:
                got += 1
                occ += n
        if got:
            found.append((-got, -occ, path))
    found.sort()
    n = archive_brings_back([(-w, -o) for w, o, _ in found], limit)
    return [p for _, _, p in found[:n]]


@functools.lru_cache(maxsize=4096)
def _archived_haystack(text: str, fold: bool) -> bytes:
    return haystack(text.encode("utf-8"), fold)


def haystack(data: bytes, fold: bool) -> bytes:
    """A note's bytes as :func:`match_file` looks for the words in them: case-folded
    (``fold``, for non-ASCII words), else lowered as ASCII (enough for caseless scripts)."""
    if fold:
        return data.decode("utf-8", errors="replace").casefold().encode("utf-8")
    return data.lower()


def normalise_words(words: list[str]) -> list[str]:
    """Search words: split on whitespace, lower-cased, duplicates dropped, order kept."""
    out: list[str] = []
    for w in words:
        for part in w.split():
            low = part.casefold()
            if low and low not in out:
                out.append(low)
    return out


def _needs_unicode_fold(words: list[str]) -> bool:
    return any(not w.isascii() and w.upper() != w.lower() for w in words)


def match_file(
    data: bytes, words: list[str], tier: str, fold: bool | None = None
) -> tuple[tuple[str, ...], int, bool, str]:
    """(words found, occurrences, tag match, snippet) of one file's bytes (pure).

    ``fold``: whether non-ASCII case folding is needed (computed from ``words``
    when not given; callers matching many files compute it once).
    """
    if fold is None:
        fold = _needs_unicode_fold(words)
    hay = haystack(data, fold)
    found: list[str] = []
    occurrences = 0
    first_at = -1
    for w in words:
        wb = w.encode("utf-8")
        n = hay.count(wb)
        if n:
            found.append(w)
            occurrences += n
            at = hay.find(wb)
            if first_at < 0 or at < first_at:
                first_at = at
    if not found:
        return (), 0, False, ""
    tag_match = False
    if tier == "gist":
        for head in hay.split(b"\n", 4)[:4]:
            s = head.strip()
            label = TAGS_LABEL.encode("utf-8")
            if s.startswith(label) or s.startswith(b"tags:"):
                tag_match = any(w.encode("utf-8") in s for w in found)
                break
    start = hay.rfind(b"\n", 0, first_at) + 1
    end = hay.find(b"\n", first_at)
    raw = data.decode("utf-8", errors="replace") if len(hay) != len(data) else None
    if raw is None:
        line = data[start : end if end >= 0 else len(data)].decode("utf-8", errors="replace")
    else:  # case folding changed lengths: locate the line in the decoded text instead
        line = next((ln for ln in raw.splitlines() if any(w in ln.casefold() for w in found)), "")
    line = line.strip()
    if len(line) > SNIPPET:
        line = line[: SNIPPET - 1] + "…"
    return tuple(found), occurrences, tag_match, line


def _read_all(path: str | Path) -> bytes | None:
    """A note's bytes (never through a symlink, never blocking on a FIFO); None if no note."""
    got = read_note(path)
    return None if got is None else got[0]


def _read_shown(path: str | Path) -> str | None:
    """The text shown of a note found (None: it is no note any more)."""
    data = _read_all(path)
    return None if data is None else data.decode("utf-8", errors="replace")


def search_tier(root: Path, tier: str, words: list[str]) -> list[Match]:
    """Every file of ``root/tier`` containing any of ``words``, best first.

    The hot path of recall reads every file of a tier, so it stays close to the
    system calls: one ``scandir`` (file type from the directory entry, no stat),
    one open and read per file, and a ``stat`` only for the files that match.
    """
    folder = root / tier
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return []
        entries = list(os.scandir(folder))
    except OSError:
        return []
    faults.point("recall.listed")
    fold = _needs_unicode_fold(words)
    out: list[Match] = []
    for entry in entries:
        name = entry.name
        if not name.endswith(".md") or name.startswith(".") or not is_utf8_name(name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
        except OSError:
            continue
        data = _read_all(entry.path)
        if data is None:
            continue
        found, occ, tag, snippet = match_file(data, words, tier, fold)
        if found:
            try:
                mtime = entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            note, is_summary = note_of(tier, name)
            out.append(Match(tier, name, note, is_summary, found, occ, tag, mtime, snippet))
    out.sort(key=Match.rank_key)
    return out


@dataclass
class SearchResult:
    words: list[str]
    tier: str | None  # the tier where the search stopped (None: nothing anywhere)
    matches: list[Match]  # every match in that tier, best first
    searched: list[str]

    def shown(self, limit: int) -> list[Match]:
        return self.matches[:limit]

    def too_many(self, limit: int) -> bool:
        return len(self._notes()) > limit

    def _notes(self) -> list[str]:
        return list(dict.fromkeys(m.note for m in self.matches))

    def leader(self) -> str | None:
        """The note that clearly leads the others (:func:`clearly_ahead`), or None."""
        if not self.matches:
            return None
        best = self.matches[0]
        rival = next((m for m in self.matches if m.note != best.note), None)
        if rival is None:
            return best.note
        ahead = clearly_ahead(
            (len(best.words), best.occurrences), (len(rival.words), rival.occurrences)
        )
        return best.note if ahead else None


def layered_search(root: Path, words: list[str]) -> SearchResult:
    """Search the tiers in the seed's order and stop at the first with a match."""
    searched: list[str] = []
    for tier in TIERS:
        searched.append(tier)
        matches = search_tier(root, tier, words)
        if matches:
            return SearchResult(words, tier, matches, searched)
    return SearchResult(words, None, [], searched)


def no_match_message(words: list[str], delete_after_days: float) -> str:
    """The seed's three possible reasons, in English."""
    quoted = " ".join(words)
    return (
        f"Nothing about '{quoted}' in the tier store. Possible reasons:\n"
        "  1. it was never recorded;\n"
        f"  2. it was deleted (after {delete_after_days:g} days in forgotten/ without a "
        "retrieval; a compressed copy may still be in the graveyard);\n"
        "  3. the words do not match: try other words."
    )


def skipped_message(n: int) -> str:
    """Said after the answer when files were skipped unread: without it a FIFO in place of the
    archived note ends in "it was never recorded", which memoryd cannot know (issue 30)."""
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

    After the four tiers comes a fifth layer, memoryd's own archive: the workspace notes
    expire moved out (only ``agent``'s, when given). A note found there is brought back
    through the journal, as a hand ``restore`` would, and counted as a recall hit of the
    workspace file.
    """
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
                found = _restored_lately(paths, store, wanted, time.time(), agent)
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
        batch = f"recall:{uuid.uuid4().hex[:8]}"
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
            if with_text and (text := _read_shown(root / now_rel)) is not None:
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


ARCHIVE = "archive"  # the layer after forgotten/: what expire archived from the workspaces
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


def _owner(paths: Paths, path: str) -> tuple[str, str] | None:
    """(agent, path relative to its workspace) of an absolute workspace path."""
    for a in paths.agents:
        rel = relative_to_workspace(a.workspace, path)
        if rel is not None:
            return a.id, rel
    return None


def search_archive(
    paths: Paths, store: Store, words: list[str], agent: str | None = None
) -> list[ArchivedMatch]:
    """The notes expire archived (still there, not restored) that contain any of ``words``."""
    from ..ondemand import archived_files

    fold = _needs_unicode_fold(words)
    out: list[ArchivedMatch] = []
    for a in archived_files(store):
        owner = _owner(paths, a.src)
        if owner is None or (agent is not None and owner[0] != agent):
            continue
        data = _read_all(a.dst)
        if data is None:
            continue
        found, occ, _tag, snippet = match_file(data, words, ARCHIVE, fold)
        if not found:
            continue
        archived_rel = (_owner(paths, a.dst) or (owner[0], a.dst))[1]
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
    batch = f"recall:{uuid.uuid4().hex[:8]}"
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
        if (text := _read_shown(owner_ws / where)) is not None:
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
# nowhere else: recalls started together (an agent asking twice, two agents) wait for one
# another at the tier store's lock, and the first brings the note back before the others look.
RESTORED_LATELY_SECONDS = 3600.0


def _restored_lately(
    paths: Paths, store: Store, words: list[str], now: float, agent: str | None
) -> RecallOutcome | None:
    """The notes containing ``words`` that came back from memoryd's archive to the workspace
    in the last :data:`RESTORED_LATELY_SECONDS` (by a recall, a restore, the restore on
    demand) and are there: "never recorded, or deleted" would be false. None if there are
    none. Nothing moves and nothing is counted (the restore was counted when it was made)."""
    from ..ondemand import ARCHIVE_BATCH_PREFIX

    rows = store.conn.execute(
        "SELECT b.dst, MAX(b.finished) FROM moves a JOIN moves b "
        "ON b.undo_of = a.id OR (b.undo_of IS NULL AND b.src = a.dst AND b.id > a.id) "
        "WHERE a.op = 'move' AND a.undo_of IS NULL AND a.batch LIKE ? "
        "AND b.op = 'move' AND b.state = 'done' AND b.finished >= ? GROUP BY b.dst",
        (ARCHIVE_BATCH_PREFIX + "%", now - RESTORED_LATELY_SECONDS),
    ).fetchall()
    fold = _needs_unicode_fold(words)
    out = RecallOutcome(words, WORKSPACE, 0)
    for dst, finished in rows:
        owner = _owner(paths, dst) if dst else None
        if owner is None or (agent is not None and owner[0] != agent):
            continue
        data = _read_all(dst)
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
                "text": data.decode("utf-8", errors="replace"),
            }
        )
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
    from ..mover import superseded_by

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
