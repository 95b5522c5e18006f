"""The shell that rewrites a note and its archive file for ``retire`` (and back for
``restore --last``), journaled and compare-and-swap, so that no crash and no edit loses text.

One rewrite is one row of the ``retires`` table, written durably before anything changes,
holding every byte of the note as the plan read it. Under the mover's lock the file that
gains text is written first (a retire: the archive, then the note; an undo: the note, then
the archive), and the new note is swapped in under the note's name in one step
(:func:`.fsutil.exchange`; where names cannot be swapped, the note is renamed aside and the
new one linked in). A save that landed after the plan read the note wins. What repair does
after a crash at each step is the table in docs/sections.md ("Compare and swap, journaled");
its rule: the archive goes back only when the note holds the text again, and a leftover that
holds what a person wrote, or the only copy of ``before``, is kept at
``<note>.memoryd-kept-r<id>`` (visible, no ``.md``), never removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from . import faults
from .fsutil import exchange, fsync_dir, read_regular, side_name, write_atomic, write_new
from .locks import held
from .move_files import MoveError, make_folders
from .store import Store

ABSENT = ""  # the sha of "no file" (an archive that did not exist)


class Changed(Exception):
    """The note (or its archive file) is not what the plan read: nothing changed; plan again."""


class RetireRow(NamedTuple):
    id: int
    batch: str
    src: str
    archive: str
    before: bytes
    after_sha: str
    archive_before: bytes | None
    archive_after_sha: str
    archive_after: bytes | None
    sections: str  # JSON: what the row took (or put back), for the undo and the report
    state: str
    undo_of: int | None
    created: float
    finished: float | None
    note: str | None

    def taken(self) -> list[dict[str, Any]]:
        out = json.loads(self.sections or "[]")
        return out if isinstance(out, list) else []


_COLS = (
    "id, batch, src, archive, before, after_sha, archive_before, archive_after_sha, "
    "archive_after, sections, state, undo_of, created, finished, note"
)


def sha(data: bytes | None) -> str:
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


def _names(src: Path, row_id: int, tag: str = "r") -> tuple[Path, Path]:
    """The temporary and the aside name of a rewrite (``tag``: ``r`` retire's, ``p``
    promotion's)."""
    return (
        side_name(src, ".", f".memoryd-{tag}{row_id}.new"),
        side_name(src, ".", f".memoryd-{tag}{row_id}.aside"),
    )


def _read(path: Path) -> bytes | None:
    """A regular file's bytes, never through a symlink; None when there is none."""
    try:
        return read_regular(path)[0]
    except FileNotFoundError:
        return None


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
        fsync_dir(path.parent)


def _give_back(aside: Path, src: Path) -> bool:
    """The aside file gets its name back, never over a file there now."""
    try:
        os.link(aside, src)
    except FileExistsError:
        return False
    os.unlink(aside)
    fsync_dir(src.parent)
    return True


def _peek(path: Path) -> bytes | None:
    """A leftover file's bytes; None when there is none or it is no regular file."""
    try:
        return _read(path)
    except OSError:
        return None


def _archive_mode(archive: Path, note_mode: int) -> int:
    """The permissions of an archive file written anew: no wider than it had, nor than the
    note whose sections it takes (a private ``MEMORY.md``'s sections stay private)."""
    try:
        had = os.lstat(archive).st_mode & 0o777
    except FileNotFoundError:
        had = 0o666
    return had & note_mode & 0o666 | 0o600  # (always the owner's to read and write)


def _mode_of(path: Path) -> int:
    try:
        return os.lstat(path).st_mode & 0o777
    except OSError:
        return 0o600


def _holds(path: Path, data: bytes) -> bool:
    return os.path.lexists(path) and _peek(path) == data


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _spare(row: RetireRow, path: Path) -> bool:
    """Nothing a person wrote: no file, the journaled ``before`` or the rewrite's own note."""
    if not os.path.lexists(path):
        return True
    data = _peek(path)
    return data is not None and (data == row.before or sha(data) == row.after_sha)


def _holds_taken(row: RetireRow, note: bytes) -> bool:
    """Whether every section the row took from ``before`` is in ``note`` whole (so the archive
    may give it back). Anything unreadable answers no: the archive then stays."""
    if row.undo_of is not None:
        return False
    text, was = note.decode("utf-8", "replace"), row.before.decode("utf-8", "replace")
    spans = [(t.get("begin"), t.get("end")) for t in row.taken() if "title" in t]
    if not spans or not all(isinstance(b, int) and isinstance(e, int) for b, e in spans):
        return False
    return all(was[b:e].strip() in text for b, e in spans)


def _keep(path: Path, src: Path, row_id: int, tag: str = "r") -> Path:
    """Give a leftover a visible name beside the note (``MEMORY.md.memoryd-kept-r<id>``;
    ``tag`` names whose journal row it is: ``r`` retire's, ``p`` promotion's)."""
    kept = side_name(src, "", f".memoryd-kept-{tag}{row_id}")
    n = 1
    while os.path.lexists(kept):
        n += 1
        kept = side_name(src, "", f".memoryd-kept-{tag}{row_id}-{n}")
    os.rename(path, kept)
    fsync_dir(src.parent)
    return kept


def _keep_leftovers(
    row: RetireRow, src: Path, paths: tuple[Path, ...], *, before_spare: bool = True
) -> list[Path]:
    """Remove each leftover holding the rewrite's own note (or, with ``before_spare``, the
    journaled ``before``); keep any other at a visible name. The paths kept at."""
    kept = []
    for path in paths:
        if not os.path.lexists(path):
            continue
        data = _peek(path)
        if data is not None and (
            sha(data) == row.after_sha or (before_spare and data == row.before)
        ):
            _unlink(path)
        else:
            kept.append(_keep(path, src, row.id))
    return kept


def _kept_at(kept: list[Path]) -> str:
    return "".join(f"; kept at {k}" for k in kept)


def _swap(tmp: Path, src: Path, point: str = "retire.exchange") -> bool:
    """Swap the new note in (:func:`.fsutil.exchange`); False where it cannot be done."""
    try:
        faults.point(point)  # (a test makes it EINVAL: a file system that cannot)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    return exchange(tmp, src)


class Retirer:
    """Journaled rewrites of notes and their archive files; see the module docstring."""

    def __init__(self, store: Store, check_path: Any) -> None:
        self.store = store
        self.check_path = check_path  # the mover's: inside the roots, no symlink on the way
        self._lock = store.path.parent / "mover.lock" if store.path is not None else None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        if self._lock is None:
            yield
            return
        with held(self._lock):
            yield

    # ------------------------------------------------------------------ the journal

    def rows(self, where: str = "1", params: tuple[Any, ...] = ()) -> list[RetireRow]:
        sql = f"SELECT {_COLS} FROM retires WHERE {where} ORDER BY id"
        return [RetireRow(*r) for r in self.store.conn.execute(sql, params)]

    def newest_run(self) -> tuple[str, float] | None:
        """The batch and time of the newest retire run (not an undo), done or undone."""
        row = self.store.conn.execute(
            "SELECT batch, created FROM retires WHERE undo_of IS NULL "
            "AND state IN ('done', 'undone') ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return (str(row[0]), float(row[1])) if row else None

    def newer_than_moves(self, created: float) -> bool:
        """Whether a retire run of ``created`` is newer than the move journal's newest run."""
        row = self.store.conn.execute(
            "SELECT MAX(created) FROM moves WHERE op IN ('move', 'copy') AND undo_of IS NULL "
            "AND state IN ('done', 'undone')"
        ).fetchone()
        return row is None or row[0] is None or created > float(row[0])

    def _finish(self, row_id: int, state: str, note: str | None = None) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE retires SET state = ?, finished = ?, note = ? WHERE id = ?",
                (state, time.time(), note, row_id),
            )
            if state == "done":
                conn.execute(
                    "UPDATE retires SET state = 'undone' WHERE state = 'done' AND id = "
                    "(SELECT undo_of FROM retires WHERE id = ?)",
                    (row_id,),
                )

    # ------------------------------------------------------------------ the rewrite

    def swap(
        self,
        src: Path,
        before: bytes,
        after: bytes,
        archive: Path,
        archive_before: bytes | None,
        archive_after: bytes | None,
        *,
        batch: str,
        sections: list[dict[str, Any]],
        undo_of: int | None = None,
    ) -> int:
        """Rewrite ``src`` from ``before`` to ``after`` and its archive file to
        ``archive_after`` (None: no archive file), only while ``src`` holds ``before`` and
        the archive file ``archive_before``; :class:`Changed` otherwise. Returns the journal
        row's id."""
        src, archive = self.check_path(src), self.check_path(archive)
        with self.locked():
            now, st = read_regular(src)
            if now != before:
                raise Changed(f"{src}: changed since the plan read it")
            if _read(archive) != archive_before:
                raise Changed(f"{archive}: changed since the plan read it")
            with self.store.durable(), self.store.transaction() as conn:
                cur = conn.execute(
                    "INSERT INTO retires(batch, src, archive, before, after_sha, archive_before, "
                    "archive_after_sha, archive_after, sections, state, undo_of, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'intent', ?, ?)",
                    (
                        batch,
                        str(src),
                        str(archive),
                        before,
                        sha(after),
                        archive_before,
                        sha(archive_after),
                        archive_after,
                        json.dumps(sections),
                        undo_of,
                        time.time(),
                    ),
                )
                row_id = int(cur.lastrowid or 0)
            row = self.rows("id = ?", (row_id,))[0]
            faults.point("retire.journaled")
            try:
                self._apply(row, src, after, archive, archive_after, st.st_mode & 0o7777)
            except Changed as exc:
                self._finish(row_id, "rolled_back", str(exc))
                raise
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    state, what = self._repair_one(row)
                    self._finish(row_id, state, f"{type(exc).__name__}: {exc}; {what}")
                raise
            self._finish(row_id, "done")
            return row_id

    def _apply(
        self,
        row: RetireRow,
        src: Path,
        after: bytes,
        archive: Path,
        archive_after: bytes | None,
        mode: int,
    ) -> None:
        # The file that gains text is written first, the one that loses it last: a retire
        # writes the archive, then the note; an undo the note, then the archive. A crash in
        # between leaves the text in both, never in neither.
        gains = archive_after is not None and len(archive_after) >= len(row.archive_before or b"")
        if gains:
            self._write_archive(archive, archive_after, mode)
            faults.point("retire.archived")
        tmp, aside = _names(src, row.id)
        write_new(tmp, after, mode, exact=True)  # (the note's own mode, whatever the umask)
        if _swap(tmp, src):
            self._check_swapped(row, src, tmp, aside)
        else:
            self._place_through_aside(row, src, tmp, aside)
        faults.point("retire.placed")
        _unlink(tmp)
        _unlink(aside)
        if not gains:
            self._write_archive(archive, archive_after, mode)
            faults.point("retire.archived")

    def _check_swapped(self, row: RetireRow, src: Path, tmp: Path, aside: Path) -> None:
        """After the swap: ``src`` holds the new note, ``tmp`` what ``src`` held, which must
        be the plan's ``before``; a save that landed since the check is swapped back."""
        fsync_dir(src.parent)
        faults.point("retire.swapped")
        if _read(tmp) == row.before:
            return
        # The save gets its name back by the same swap; whatever ``tmp`` holds then that is
        # not the new note is kept. (Where the swap back fails, the save keeps a name of its own.)
        if not exchange(tmp, src):
            kept = _keep(tmp, src, row.id)
            raise Changed(f"{src}: edited while memoryd rewrote it; the edit is kept at {kept}")
        fsync_dir(src.parent)
        kept_at = None if _spare(row, tmp) else _keep(tmp, src, row.id)
        _unlink(tmp)
        self._archive_back(row)
        where = f"; what was written meanwhile is kept at {kept_at}" if kept_at else ""
        raise Changed(f"{src}: edited while memoryd rewrote it; the edit stays{where}")

    def _place_through_aside(self, row: RetireRow, src: Path, tmp: Path, aside: Path) -> None:
        """Where names cannot be swapped: the note goes aside, the new one is linked in (no
        note for that moment), and a save made meanwhile wins."""
        os.rename(src, aside)
        faults.point("retire.aside")
        if _read(aside) != row.before:  # a save landed between the check and the rename
            back = _give_back(aside, src)
            where = "" if back else f"; its earlier version is kept at {_keep(aside, src, row.id)}"
            _unlink(tmp)
            self._archive_back(row)
            raise Changed(f"{src}: edited while memoryd rewrote it; the edit stays{where}")
        try:
            os.link(tmp, src)
        except FileExistsError:  # saved anew while there was no note: that save wins
            kept = _keep(aside, src, row.id)  # (the note as it was: the save may lack it)
            _unlink(tmp)
            self._archive_back(row)
            raise Changed(
                f"{src}: saved while memoryd rewrote it; the save stays, the note as it was "
                f"is kept at {kept}"
            ) from None
        fsync_dir(src.parent)

    def _write_archive(self, archive: Path, data: bytes | None, note_mode: int = 0o644) -> None:
        if data is None:
            _unlink(archive)
        else:
            make_folders(archive.parent, self.check_path)
            write_atomic(archive, data, _archive_mode(archive, note_mode))

    def _archive_back(self, row: RetireRow) -> str:
        """The archive file as it was before ``row``, if it still holds what ``row`` wrote."""
        archive = Path(row.archive)
        now = _read(archive)
        if now == row.archive_before:
            return "archive as it was"
        if sha(now) != row.archive_after_sha:
            return "archive changed since; left as it is"
        if row.archive_before is None:
            _unlink(archive)
        else:
            write_atomic(archive, row.archive_before, _archive_mode(archive, 0o644))
        return "archive put back"

    # ------------------------------------------------------------------ repair

    def repair(self) -> list[str]:
        """Complete or roll back every unfinished row; one line per row saying what."""
        out = []
        with self.locked():
            for row in self.rows("state = 'intent'"):
                try:
                    state, what = self._repair_one(row)
                except (OSError, MoveError) as exc:
                    # Left unfinished, so the next repair tries again: the row holds every
                    # byte of the note, which may be set aside (a dotfile) until then.
                    out.append(f"retire #{row.id} {row.src}: could not repair yet: {exc}")
                    continue
                self._finish(row.id, state, f"repair: {what}")
                out.append(f"retire #{row.id} {row.src}: {what} ({state})")
        return out

    def _repair_one(self, row: RetireRow) -> tuple[str, str]:
        """What a stopped rewrite left, finished or rolled back, by the rule in the module
        docstring."""
        src = self.check_path(row.src)
        self.check_path(row.archive)
        tmp, aside = _names(src, row.id)
        now = _read(src) if os.path.lexists(src) else None
        # The rewrite happened when the note is the new one, the swap put ``before`` under the
        # temporary name, or the new note was linked in: an edit since stays, and the archive.
        swapped = _holds(tmp, row.before)
        linked = now is not None and _same_file(tmp, src)
        if now is not None and (sha(now) == row.after_sha or swapped or linked):
            if not (swapped or linked or _spare(row, tmp)):
                # Stopped after the swap met a save (it is under the temporary name): the save
                # wins, by a swap that keeps whatever is at the note's name now.
                return self._give_save_back(row, src, tmp, aside, now)
            edited = sha(now) != row.after_sha
            if linked:
                _unlink(tmp)  # (a second name of the note itself)
            kept = _keep_leftovers(row, src, (tmp, aside))
            archive = Path(row.archive)
            if _read(archive) == row.archive_before != row.archive_after:
                self._write_archive(archive, row.archive_after, _mode_of(src))  # (its turn came)
            what = "note rewritten" + ("; edited since, the edit stays" if edited else "")
            return "done", what + _kept_at(kept)
        if now is None and _holds(aside, row.before):
            _give_back(aside, src)
            now = row.before
        if _spare(row, tmp):
            _unlink(tmp)
        if now == row.before:
            if _holds(aside, row.before):
                _unlink(aside)
            what = "note as it was" + _kept_at(_keep_leftovers(row, src, (tmp, aside)))
            return "rolled_back", f"{what}; {self._archive_back(row)}"
        # The note is neither: saved anew while aside, or saved over before the swap. Whatever
        # else is left may hold text that is nowhere else: kept, and the archive stays as it is.
        kept = _keep_leftovers(row, src, (tmp, aside), before_spare=False)
        if not kept and now is not None and _holds_taken(row, now):
            return "rolled_back", f"note saved meanwhile; the save stays; {self._archive_back(row)}"
        what = "note saved meanwhile; the save stays; the archive left as it is"
        return "rolled_back", what + _kept_at(kept)

    def _give_save_back(
        self, row: RetireRow, src: Path, tmp: Path, aside: Path, now: bytes
    ) -> tuple[str, str]:
        if not exchange(tmp, src):
            if _read(src) != now:  # written since the read: nothing is overwritten
                return "rolled_back", f"the save is kept at {_keep(tmp, src, row.id)}"
            os.replace(tmp, src)  # (where names cannot be swapped)
        fsync_dir(src.parent)
        kept = _keep_leftovers(row, src, (tmp, aside))
        what = "note saved meanwhile; the save stays" + _kept_at(kept)
        return "rolled_back", f"{what}; {self._archive_back(row)}"
