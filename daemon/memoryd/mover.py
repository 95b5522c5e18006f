"""Journaled, crash-safe file operations: the only code that moves a person's notes.

Every operation is written to the ``moves`` table *before* the file system
changes (the intent, committed with ``synchronous=FULL``), performed, and then
marked done. Whatever kills the process in between, :meth:`Mover.repair`
(called at the start of every acting command) finds the unfinished entry and
either completes it or rolls it back, so each file exists exactly once.

Journal rows
------------
``op``      ``move`` | ``copy`` | ``delete``
``src``     absolute path the operation reads (for ``delete``: the file deleted)
``dst``     absolute destination (``None`` for ``delete``)
``sha256``  / ``size`` of ``src`` when the intent was written
``batch``   a label grouping one run's entries (``expire:2026-11:…``), undone together
``undo_of`` for an entry that undoes another, that entry's id

States
------
``intent``       written before anything happened; the only unfinished state
``done``         the file system reflects the operation
``rolled_back``  repair found the operation had not (fully) happened and undid its traces
``failed``       the operation could not happen (source vanished or changed); nothing touched
``undone``       a ``done`` entry later reversed by an entry whose ``undo_of`` points to it

How a move happens, and what repair does at each crash point
------------------------------------------------------------
Same file system: ``link(src, dst)`` (atomic, fails if ``dst`` exists, so nothing is
ever overwritten), fsync the folder, then *retire* ``src``.
Other file system (``EXDEV``): copy into a temp file ``.<name>.memoryd-<id>.tmp``
beside ``dst``, fsync, compare its sha256 with the journal, ``link`` it to ``dst``,
unlink the temp file, then retire ``src``.

Retiring a source never unlinks a path it merely hashed earlier (an editor that
saves by renaming a temp file over the note would lose that save): ``src`` is
renamed aside to ``.<name>.memoryd-<id>.aside`` in its own folder, the file
renamed is verified (sha256, and inode / size / mtime as checked), and only then
unlinked. If it is not the checked file it gets its name back (never over a
newer file) and memoryd's link or copy goes: ``rolled_back``. Any ``OSError``
after the intent (a read-only folder, a full disk) rolls back the same way, so a
file always ends with exactly one name.

==========================  ===============================================
after a crash we find        repair
==========================  ===============================================
the aside file, as journal   move/delete was retiring it: unlink it, done
the aside file, edited       give it its name back, remove our copy, rolled_back
  … and its name is taken    keep it aside (reported), drop our link to it, failed
src, no dst                  nothing happened: remove our temp file, rolled_back
src and dst, both as journal link/copy landed: retire src, done
src edited since the intent  remove our link/copy of the old content, rolled_back
src and dst, dst differs     dst is somebody else's: leave both, failed
no src, dst                  move finished: done
neither                      the file vanished outside memoryd: failed
==========================  ===============================================

Copies are the same without retiring the source (both present → done). A delete
whose file is still there is rolled back (the file stays; the caller's next run
decides again); a delete whose file is gone is done.

Safety rules enforced on every path: it must lie inside one of ``roots`` after
resolution; no component below the root may be a symlink; the source must be a
regular file (opened with ``O_NOFOLLOW``). Entries of concurrent processes never
meet half-way: every operation and every repair holds an ``flock`` on
``mover.lock`` beside the database, so repair only ever sees entries whose
process died.

Each operation and its repair meet at the crash points of the table above, so they stay in
one module; what does not meet there lives beside it: the journal's reading in
:mod:`memoryd.move_journal`, the file primitives in :mod:`memoryd.move_files`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from . import faults
from .fsutil import CLOEXEC, NOFOLLOW, NONBLOCK, fsync_dir, write_all
from .locks import held as held_lock
from .move_files import (
    _CHUNK,
    MoveError,
    _aside_name,
    _identity,
    _same_file,
    _temp_name,
    _unlink_durably,
    fingerprint,
    make_folders,
    sha256_file,
)
from .move_journal import JournalLookups, MoveRecord, command_of, superseded_by, undo_batch
from .store import Store

if TYPE_CHECKING:
    from .config import Paths


class _AsideTaken(MoveError):
    """The private name a source is renamed to is taken: nothing was renamed."""


def mover_for(store: Store, paths: Paths) -> Mover:
    """The mover every memoryd command and job uses: all the roots memoryd moves files in
    (the workspaces, the tier store, memoryd's own folder). The journal is shared, so with
    fewer roots ``repair`` would give up on another job's interrupted move as "outside its
    roots"; each job still only plans paths inside its own area."""
    workspaces = dict.fromkeys([paths.workspace, *(a.workspace for a in paths.agents)])
    return Mover(store, [*workspaces, paths.tiers_root, paths.memoryd_dir])


class Mover(JournalLookups):
    """Journaled move / copy / delete confined to ``roots``; see the module docstring."""

    def __init__(self, store: Store, roots: Sequence[Path | str]) -> None:
        if not roots:
            raise ValueError("Mover needs at least one root")
        self.store = store
        # Each root as given (absolute, normalised) and resolved: a path is accepted
        # when it is below either spelling, and its real location is below the real root.
        self._roots: list[tuple[Path, Path]] = []
        for r in roots:
            given = Path(os.path.abspath(os.path.expanduser(str(r))))
            self._roots.append((given, Path(os.path.realpath(given))))
        self._lock_path = store.path.parent / "mover.lock" if store.path is not None else None

    # ------------------------------------------------------------------ safety

    def check_path(self, path: Path | str) -> Path:
        """The absolute path if it is safe to touch, else MoveError.

        Safe: below a root (lexically and after resolution), and no component
        between the root and the path itself is a symlink. The path need not exist.
        """
        raw = str(path)
        if not raw or "\x00" in raw:
            raise MoveError(f"{raw!r}: not a usable path")
        p = Path(os.path.abspath(os.path.expanduser(raw)))
        for given, real in self._roots:
            for root in (given, real):
                try:
                    rel = p.relative_to(root)
                except ValueError:
                    continue
                if not rel.parts:
                    raise MoveError(f"{p}: is a root folder itself")
                cur = real
                for part in rel.parts:
                    cur = cur / part
                    try:
                        st = os.lstat(cur)
                    except FileNotFoundError:
                        break
                    except OSError as exc:
                        raise MoveError(f"{p}: cannot inspect {cur}: {exc.strerror}") from None
                    if stat.S_ISLNK(st.st_mode):
                        raise MoveError(f"{p}: {cur} is a symlink; memoryd never follows one")
                target = real.joinpath(*rel.parts)
                resolved = Path(os.path.realpath(target))
                if resolved != target and not resolved.is_relative_to(real):
                    raise MoveError(f"{p}: resolves outside {real}")
                return target
        raise MoveError(f"{p}: outside the folders memoryd may touch")

    def _ensure_parent(self, dst: Path) -> None:
        """Create dst's missing folders one by one, each re-checked (no symlink races)."""
        make_folders(dst.parent, self.check_path)
        if not stat.S_ISDIR(os.lstat(dst.parent).st_mode):
            raise MoveError(f"{dst.parent}: not a folder")

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        if self._lock_path is None:
            return contextlib.nullcontext()
        return held_lock(self._lock_path)

    def settled(self) -> contextlib.AbstractContextManager[None]:
        """Hold the journal's lock: a move another process is making (a hand ``restore`` whose
        file is placed but not yet journaled done) has ended, and none starts, inside."""
        return self._locked()

    # ------------------------------------------------------------------ journal

    def _intent(
        self,
        op: str,
        src: Path,
        dst: Path | None,
        sha: str | None,
        size: int | None,
        reason: str,
        batch: str,
        undo_of: int | None = None,
    ) -> int:
        with self.store.durable(), self.store.transaction() as conn:
            row = (batch, op, str(src), str(dst) if dst else None, sha, size, reason, time.time())
            cur = conn.execute(
                "INSERT INTO moves(batch, op, src, dst, sha256, size, state, reason, created, "
                "undo_of) VALUES (?, ?, ?, ?, ?, ?, 'intent', ?, ?, ?)",
                (*row, undo_of),
            )
            return int(cur.lastrowid or 0)

    def _finish(self, move_id: int, state: str, note: str | None = None) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE moves SET state = ?, finished = ?, reason = CASE WHEN ? IS NULL THEN "
                "reason ELSE COALESCE(reason, '') || ' [' || ? || ']' END WHERE id = ?",
                (state, time.time(), note or None, note or None, move_id),
            )
            if state == "done":
                row = conn.execute("SELECT undo_of FROM moves WHERE id = ?", (move_id,)).fetchone()
                if row and row[0] is not None:
                    conn.execute(
                        "UPDATE moves SET state = 'undone' WHERE id = ? AND state = 'done'",
                        (row[0],),
                    )

    # ------------------------------------------------------------------ operations

    def _prepare(
        self, src: Path | str, dst: Path | str | None
    ) -> tuple[Path, Path | None, str, int, os.stat_result]:
        s = self.check_path(src)
        d = self.check_path(dst) if dst is not None else None
        try:
            sha, size, st = fingerprint(s)
        except FileNotFoundError:
            raise MoveError(f"{s}: does not exist") from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise MoveError(f"{s}: is a symlink; memoryd never follows one") from None
            raise MoveError(f"{s}: cannot read: {exc.strerror}") from None
        if d is not None:
            if d == s:
                raise MoveError(f"{s}: source and destination are the same")
            if os.path.lexists(d):
                raise MoveError(f"{d}: already exists; memoryd never overwrites a file")
        return s, d, sha, size, st

    def move(self, src: Path | str, dst: Path | str, *, reason: str, batch: str) -> int:
        """Move a regular file to ``dst`` (which must not exist); returns the journal id."""
        with self._locked():
            return self._move_locked(src, dst, reason=reason, batch=batch, undo_of=None)

    def _move_locked(
        self,
        src: Path | str,
        dst: Path | str,
        *,
        reason: str,
        batch: str,
        undo_of: int | None,
        expect_sha: str | None = None,
    ) -> int:
        """:meth:`move` for a caller that already holds the lock (the lock is not reentrant).

        ``expect_sha``: move only a source that holds exactly these bytes.
        """
        s, d, sha, size, checked = self._prepare(src, dst)
        if expect_sha is not None and sha != expect_sha:
            raise MoveError(f"{s}: changed since it was journaled; left in place")
        faults.point("mover.checked")
        assert d is not None
        self._ensure_parent(d)
        move_id = self._intent("move", s, d, sha, size, reason, batch, undo_of)
        faults.point("mover.journaled")
        self._land(move_id, s, d, sha, self._place)
        try:
            faults.point("mover.placed")
            self._retire(s, move_id, sha, checked)
        except BaseException as exc:
            self._roll_back(move_id, s, d, sha, exc)
            raise
        self._finish(move_id, "done")
        return move_id

    def copy(self, src: Path | str, dst: Path | str, *, reason: str, batch: str) -> int:
        """Copy a regular file to ``dst`` (which must not exist), verified by sha256."""
        with self._locked():
            s, d, sha, size, _ = self._prepare(src, dst)
            assert d is not None
            self._ensure_parent(d)
            move_id = self._intent("copy", s, d, sha, size, reason, batch)
            self._land(move_id, s, d, sha, self._copy_verified)
            self._finish(move_id, "done")
            return move_id

    def delete(
        self, path: Path | str, *, reason: str, batch: str, expect_sha256: str | None = None
    ) -> int:
        """Delete a regular file, journaled with its sha256 and size (no undo).

        With ``expect_sha256`` (the hash of a copy the caller kept, e.g. in the
        graveyard) the file is deleted only while it still holds exactly those
        bytes; an edit made after the copy is left in place (MoveError).
        """
        with self._locked():
            return self._delete_locked(
                path, reason=reason, batch=batch, undo_of=None, expect_sha256=expect_sha256
            )

    def _delete_locked(
        self,
        path: Path | str,
        *,
        reason: str,
        batch: str,
        undo_of: int | None,
        expect_sha256: str | None = None,
    ) -> int:
        """:meth:`delete` for a caller that already holds the lock (undo of a copy)."""
        s, _, sha, size, checked = self._prepare(path, None)
        if expect_sha256 is not None and sha != expect_sha256:
            raise MoveError(f"{s}: changed since its copy was kept; left in place")
        faults.point("mover.checked")
        move_id = self._intent("delete", s, None, sha, size, reason, batch, undo_of)
        faults.point("mover.journaled")
        try:
            self._retire(s, move_id, sha, checked)
        except BaseException as exc:
            self._roll_back(move_id, s, None, sha, exc)
            raise
        self._finish(move_id, "done")
        return move_id

    def _land(
        self, move_id: int, s: Path, d: Path, sha: str, put: Callable[[Path, Path, str, int], None]
    ) -> None:
        """Make ``d`` by ``put`` (link or copy); on any failure, back to the source alone."""
        try:
            put(s, d, sha, move_id)
        except MoveError as exc:  # refused: whatever is at d now is not memoryd's
            self._roll_back(move_id, s, d, sha, exc, d_may_be_ours=False)
            raise
        except BaseException as exc:
            self._roll_back(move_id, s, d, sha, exc)
            raise

    def _place(self, s: Path, d: Path, sha: str, move_id: int) -> None:
        """Make ``d`` a verified copy of ``s`` without overwriting: link, else copy."""
        try:
            os.link(s, d, follow_symlinks=False)
        except FileExistsError:
            raise MoveError(f"{d}: already exists; memoryd never overwrites a file") from None
        except OSError as exc:
            if exc.errno not in (errno.EXDEV, errno.EPERM, errno.ENOTSUP, errno.EMLINK):
                raise MoveError(f"{s} → {d}: {exc.strerror}") from None
            self._copy_verified(s, d, sha, move_id)
            return
        fsync_dir(d.parent)

    def _copy_verified(self, s: Path, d: Path, sha: str, move_id: int) -> None:
        tmp = _temp_name(d, move_id)
        h = hashlib.sha256()
        src_fd = os.open(s, os.O_RDONLY | NOFOLLOW | NONBLOCK | CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(src_fd).st_mode):  # swapped since it was hashed
                raise MoveError(f"{s}: not a regular file; left in place")
            out_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                while chunk := os.read(src_fd, _CHUNK):
                    h.update(chunk)
                    write_all(out_fd, chunk)
                os.fsync(out_fd)
                st = os.fstat(src_fd)
                os.fchmod(out_fd, stat.S_IMODE(st.st_mode))
            finally:
                os.close(out_fd)
            with contextlib.suppress(OSError):
                os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(src_fd)
        if h.hexdigest() != sha or sha256_file(tmp)[0] != sha:
            os.unlink(tmp)
            raise MoveError(f"{s}: changed while it was being copied; left in place")
        try:
            os.link(tmp, d, follow_symlinks=False)
        except FileExistsError:
            os.unlink(tmp)
            raise MoveError(f"{d}: already exists; memoryd never overwrites a file") from None
        except OSError:
            # No hard links on this file system: the check-then-rename is the best we have.
            if os.path.lexists(d):
                os.unlink(tmp)
                raise MoveError(f"{d}: already exists; memoryd never overwrites a file") from None
            os.rename(tmp, d)
        else:
            os.unlink(tmp)
        fsync_dir(d.parent)

    def _retire(self, s: Path, move_id: int, sha: str, checked: os.stat_result | None) -> None:
        """Remove the name ``s``, but only the very file that was checked: renamed aside,
        verified, then unlinked (the module docstring says why). A save that lands after the
        rename creates a new ``s`` that memoryd never touches; a save before it is what was
        renamed aside, fails the check and is put back (MoveError).
        """
        aside = _aside_name(s, move_id)
        faults.point("mover.unlink_src")
        if os.path.lexists(aside):
            # A version an earlier run kept there (a state database made anew numbers its
            # journal from 1 again): renaming onto it would destroy it.
            raise _AsideTaken(
                f"{s}: {aside} already exists (a version kept earlier); left in place"
            )
        os.rename(s, aside)
        faults.point("mover.aside")
        now_sha, _, st = fingerprint(aside)
        same = checked is None or _identity(st) == _identity(checked)
        if now_sha != sha or not same:
            kept = self._put_back(aside, s)
            extra = "" if kept else f" (an earlier version is kept at {aside})"
            raise MoveError(f"{s}: changed during the operation; left in place{extra}")
        faults.point("mover.before_unlink")
        _unlink_durably(aside)

    @staticmethod
    def _put_back(aside: Path, s: Path) -> bool:
        """Give a file renamed aside its name back, never over a newer file; False if taken."""
        try:
            os.link(aside, s, follow_symlinks=False)
        except FileExistsError:
            return False
        except OSError:
            if os.path.lexists(s):
                return False
            os.rename(aside, s)  # no hard links here: the check-then-rename is the best we have
        else:
            os.unlink(aside)
        fsync_dir(s.parent)
        return True

    def _roll_back(
        self,
        move_id: int,
        s: Path,
        d: Path | None,
        sha: str | None,
        exc: BaseException,
        *,
        d_may_be_ours: bool = True,
    ) -> None:
        """An operation failed in-process: back to exactly one name, the source's.

        Whatever failed (an ``OSError`` from a read-only folder, a full disk on the
        folder fsync, Ctrl-C, an edit found by :meth:`_retire`), the source gets its
        name back and memoryd's own link or copy at ``d`` goes, so the entry is
        ``rolled_back``. If even that fails, the entry stays an ``intent`` and the
        next :meth:`repair` settles it. ``d_may_be_ours=False`` (the operation was
        refused, e.g. ``d`` already existed) leaves ``d`` alone whatever it holds.
        """
        try:
            if d is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(_temp_name(d, move_id))
            aside = _aside_name(s, move_id)
            ours = not isinstance(exc, _AsideTaken)  # else the file there is not memoryd's
            kept_aside = ours and os.path.lexists(aside) and not self._put_back(aside, s)
            # memoryd's link to the file kept aside (an edit in place reached it too) is a
            # second name for that version: the aside name, reported, is the one it keeps.
            if (
                d_may_be_ours
                and d is not None
                and (
                    (os.path.lexists(s) and self._is_ours(d, s, sha))
                    or (kept_aside and _same_file(d, aside))
                )
            ):
                _unlink_durably(d)
            if os.path.lexists(s):
                state = "rolled_back"
                what = "left in place"
            else:
                state, what = "failed", "source gone"
            if kept_aside:
                what += f"; an earlier version is kept at {aside}"
            self._finish(move_id, state, f"{type(exc).__name__}: {exc}; {what}")
        except Exception:  # the intent stays for repair; the caller raises the first error
            return

    @staticmethod
    def _is_ours(d: Path, s: Path, sha: str | None) -> bool:
        """``d`` is memoryd's link or copy of ``s`` (the same inode, or the journaled bytes)."""
        if not os.path.lexists(d):
            return False
        if _same_file(d, s):
            return True
        try:
            return sha is not None and sha256_file(d)[0] == sha
        except (OSError, MoveError):
            return False

    # ------------------------------------------------------------------ repair

    def repair(self) -> list[str]:
        """Complete or roll back every unfinished entry; one line per entry saying what."""
        out: list[str] = []
        with self._locked():
            for rec in self.unfinished():
                try:
                    state, what = self._repair_one(rec)
                except (OSError, MoveError) as exc:
                    state, what = "failed", f"could not repair: {exc}"
                self._finish(rec.id, state, f"repair: {what}")
                out.append(f"#{rec.id} {rec.op} {rec.src}: {what} ({state})")
        # (retire's rewrites of notes share the lock and the repair: memoryd.retirer)
        from .retirer import Retirer

        return out + Retirer(self.store, self.check_path).repair()

    def _repair_one(self, rec: MoveRecord) -> tuple[str, str]:
        src = Path(rec.src)
        dst = Path(rec.dst) if rec.dst else None
        # Journal rows are data too: never act on one that points outside the roots.
        self.check_path(src)
        if dst is not None:
            self.check_path(dst)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_temp_name(dst, rec.id))
        aside = _aside_name(src, rec.id)
        if os.path.lexists(aside):
            return self._settle_aside(rec, src, dst, aside)
        src_there = os.path.lexists(src)
        if rec.op == "delete":
            if src_there:
                return "rolled_back", "file still there; not deleted"
            return "done", "file already deleted"
        assert dst is not None
        dst_there = os.path.lexists(dst)
        if not dst_there:
            if src_there:
                return "rolled_back", "nothing had happened; file left in place"
            return "failed", "file vanished (neither source nor destination exists)"
        linked = src_there and rec.op == "move" and _same_file(src, dst)
        if not linked and sha256_file(dst)[0] != rec.sha256:
            return "failed", "destination holds other content; both left alone"
        if rec.op == "copy" or not src_there:
            return "done", "destination complete"
        try:
            self._retire(src, rec.id, rec.sha256 or "", None)
        except MoveError:
            if self._is_ours(dst, src, rec.sha256):
                _unlink_durably(dst)
            return "rolled_back", "source edited since the intent; memoryd's copy removed"
        return "done", "destination complete; source removed"

    def _settle_aside(
        self, rec: MoveRecord, src: Path, dst: Path | None, aside: Path
    ) -> tuple[str, str]:
        """The process died after renaming the source aside: finish, or put it back."""
        matches = sha256_file(aside)[0] == rec.sha256
        if rec.op == "delete":
            if matches:
                _unlink_durably(aside)
                return "done", "file deleted"
            if not self._put_back(aside, src):
                return "failed", f"file changed and its name is taken; kept at {aside}"
            return "rolled_back", "file changed since the intent; left in place"
        assert dst is not None
        if matches and self._is_ours(dst, aside, rec.sha256):
            _unlink_durably(aside)
            return "done", "destination complete; source removed"
        if not self._put_back(aside, src):
            if _same_file(dst, aside):  # our link to it: one name for that version, not two
                _unlink_durably(dst)
            return "failed", f"source changed and its name is taken; kept at {aside}"
        if self._is_ours(dst, src, rec.sha256):
            _unlink_durably(dst)
        return "rolled_back", "source edited since the intent; memoryd's copy removed"

    # ------------------------------------------------------------------ undo

    def undo(self, move_id: int, *, batch: str | None = None, unchanged: bool = False) -> int:
        """Reverse a done move (move back) or copy (delete the copy); returns the new id.

        ``unchanged``: reverse a move only while its destination still holds the bytes the
        journal recorded (what an automatic restore needs; a person restoring by hand gets
        their edited file back).

        The entry is read under the lock: another process (a hand ``restore``, the daemon's
        restore on demand) may undo the same entry meanwhile, and an expire may then have
        archived the file again to the same name; deciding on a stale read would move that
        newer archive back under the old entry's name.
        """
        with self._locked():
            rec = self.get(move_id)
            if rec is None:
                raise MoveError(f"no journal entry #{move_id}")
            if rec.state != "done":
                raise MoveError(
                    f"journal entry #{move_id} is {rec.state}, not done; nothing to undo"
                )
            label = batch or undo_batch(rec.batch)
            if rec.op == "move":
                assert rec.dst is not None
                later = superseded_by(self.store, rec.id)
                if later is not None:
                    # The note moved on (a recall took it back, or it was archived again
                    # under the same name): this entry's undo would move another row's file.
                    raise MoveError(
                        f"{rec.dst}: moved on since (journal entry #{later.id}, "
                        f"{command_of(later.batch)}); journal entry #{rec.id} has nothing "
                        "left to undo"
                    )
                return self._move_locked(
                    rec.dst,
                    rec.src,
                    reason=f"undo #{rec.id}",
                    batch=label,
                    undo_of=rec.id,
                    expect_sha=rec.sha256 if unchanged else None,
                )
            if rec.op == "copy":
                # Undoing a copy deletes a file, so it must be memoryd's copy and nothing
                # more: not once the copy holds an edit (whatever ``unchanged`` says, a
                # delete cannot give an edit back), nor once it is the note's only file.
                assert rec.dst is not None
                if not os.path.lexists(self.check_path(rec.src)):
                    raise MoveError(
                        f"{rec.dst}: its original {rec.src} is gone; this copy is the only "
                        "one left, so it stays"
                    )
                return self._delete_locked(
                    rec.dst,
                    reason=f"undo #{rec.id}",
                    batch=label,
                    undo_of=rec.id,
                    expect_sha256=rec.sha256,
                )
        raise MoveError(f"journal entry #{move_id} is a delete; deleted files cannot be restored")

    def undo_batch(self, batch: str) -> list[tuple[MoveRecord, int | MoveError | OSError]]:
        """Undo every done move or copy of ``batch``, newest first (``restore --last``).

        Each entry comes with the id of its undo, or the error that left it where it is: one
        file that cannot go back (a new file at its old place, an archived copy edited away)
        does not keep the others of the batch from going back.
        """
        out: list[tuple[MoveRecord, int | MoveError | OSError]] = []
        for rec in reversed(self.batch_entries(batch)):
            if rec.state == "done" and rec.op in ("move", "copy") and rec.undo_of is None:
                try:
                    out.append((rec, self.undo(rec.id)))
                except (MoveError, OSError) as exc:
                    out.append((rec, exc))
        return out
