"""Promotion's journal and its one kind of write: a destination file rewritten compare-and-swap.

A promotion run (``memoryd promote --handoff``) is handed to a sub-session of the user's agent,
which writes the entries itself; memoryd then settles it (``--settle RUN``): it reads what
landed (:mod:`.policy.promote_settle`), records each marked entry, and marks its source note
promoted. Tables (migration 14):

* ``promote_runs``: the run, its plan (JSON), ``handed`` → ``settled`` → ``undone``;
* ``promote_files``: every destination file's bytes when the run was handed over (``before``,
  NULL: no file) and when it was settled (``landed``): ``restore --last`` gives ``before``
  back byte for byte while the file still holds ``landed``;
* ``promote_entries``: each entry that landed (its lines, what they replaced), ``promoted``,
  ``declined`` (it would push ``MEMORY.md`` past its bootstrap budget: taken out again) or
  ``undone``;
* ``promote_writes``: memoryd's own rewrites of a destination (a declined entry taken out, an
  undo), one row each, written durably before the file changes (``intent``), holding the
  file's bytes as memoryd read them.

A rewrite goes as :class:`.retirer.Retirer`'s do, with its pieces: under the mover's lock,
swapped in one step (else through an aside name), and a save that landed in between wins
(:class:`Changed`: the caller reads and plans again; a leftover is kept at
``<file>.memoryd-kept-p<id>``). :meth:`Promoter.repair` finishes or rolls back a rewrite a
crash stopped: the file holding the new bytes is done, the old rolled back; anything else is
a save, which stays.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from . import faults
from .fsutil import exchange, fsync_dir, write_new
from .locks import held
from .move_files import make_folders
from .retirer import Changed, _give_back, _names, _read, _swap, _unlink, sha
from .retirer import _keep as _keep_at
from .store import Store

__all__ = ["AlreadySettled", "Changed", "Entry", "Promoter", "read_or_none", "sha"]


def read_or_none(path: Path) -> bytes | None:
    """A regular file's bytes, never through a symlink; None when there is none."""
    return _read(path)


# Counts destinations a settle refused (a symlink, a symlinked folder, outside the workspace).
REFUSED_COUNTER = "promote_dest_refused"


class AlreadySettled(Exception):
    """The run was settled (by another settle) since it was read as handed over."""


class Entry(NamedTuple):
    id: int
    run: str
    source: str
    dest: str  # workspace-relative
    piece: str
    replaced: str
    state: str
    note: str | None


class Promoter:
    """The promotion journal of one state database; see the module docstring."""

    def __init__(self, store: Store, check_path: Any) -> None:
        self.store = store
        self.check_path = check_path
        self._lock = store.path.parent / "mover.lock" if store.path is not None else None
        self._depth = 0  # (the lock is taken once however deep the calls that want it)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The mover's lock (no move, restore, retire or other promotion step meanwhile);
        re-entered freely by this object."""
        lock = None if self._depth else self._lock
        with held(lock) if lock is not None else contextlib.nullcontext():
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1

    # ------------------------------------------------------------------ runs

    def hand_over(self, run: str, plan: dict[str, Any], files: dict[str, bytes | None]) -> None:
        """Record a run handed to a sub-session, with its destination files as they are."""
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO promote_runs(run, created, plan, state) VALUES (?, ?, ?, 'handed')",
                (run, time.time(), json.dumps(plan)),
            )
            conn.executemany(
                "INSERT INTO promote_files(run, dest, before) VALUES (?, ?, ?)",
                [(run, rel, data) for rel, data in files.items()],
            )

    def run_row(self, run: str) -> dict[str, Any] | None:
        row = self.store.conn.execute(
            "SELECT run, created, plan, state, settled, result FROM promote_runs WHERE run = ?",
            (run,),
        ).fetchone()
        if row is None:
            return None
        return {
            "run": row[0],
            "created": row[1],
            "plan": json.loads(row[2]),
            "state": row[3],
            "settled": row[4],
            "result": json.loads(row[5]) if row[5] else None,
        }

    def files_before(self, run: str) -> dict[str, bytes | None]:
        rows = self.store.conn.execute(
            "SELECT dest, before FROM promote_files WHERE run = ?", (run,)
        )
        return {str(d): b for d, b in rows}

    def entries(self, run: str) -> list[Entry]:
        sql = (
            "SELECT id, run, source, dest, piece, replaced, state, note FROM promote_entries "
            "WHERE run = ? ORDER BY id"
        )
        return [Entry(*r) for r in self.store.conn.execute(sql, (run,))]

    def newest_settled(self) -> tuple[str, float] | None:
        """The newest settled run that promoted something (not undone), and when."""
        row = self.store.conn.execute(
            "SELECT r.run, r.settled FROM promote_runs r WHERE r.state IN ('settled', 'undone') "
            "AND EXISTS (SELECT 1 FROM promote_entries e WHERE e.run = r.run "
            "AND e.state IN ('promoted', 'undoing', 'undone')) ORDER BY r.settled DESC LIMIT 1"
        ).fetchone()
        return (str(row[0]), float(row[1])) if row else None

    def record_settled(
        self,
        run: str,
        landed: dict[str, bytes | None],
        entries: list[dict[str, Any]],
        result: dict[str, Any],
        marks: list[tuple[str, str]],
        refused: int = 0,
    ) -> None:
        """The run's outcome, its entries and the promoted marks, in one transaction; only
        while the run is still handed over (:class:`AlreadySettled` otherwise: nothing
        recorded twice)."""
        now = time.time()
        with self.store.durable(), self.store.transaction() as conn:
            cur = conn.execute(
                "UPDATE promote_runs SET state = 'settled', settled = ?, result = ? "
                "WHERE run = ? AND state = 'handed'",
                (now, json.dumps(result), run),
            )
            if cur.rowcount != 1:
                raise AlreadySettled(run)
            for rel, data in landed.items():
                conn.execute(
                    "INSERT INTO promote_files(run, dest, before, landed) VALUES (?, ?, NULL, ?) "
                    "ON CONFLICT(run, dest) DO UPDATE SET landed = excluded.landed",
                    (run, rel, data),
                )
            conn.executemany(
                "INSERT INTO promote_entries(run, source, dest, piece, replaced, state, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (run, e["source"], e["dest"], e["piece"], e["replaced"], e["state"],
                     e.get("note"))
                    for e in entries
                ],
            )
            for source, dest in marks:
                conn.execute(
                    "INSERT INTO marks(path, kind, created, note) VALUES (?, 'promoted', ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (source, now, f"promoted to {dest} (run {run})"),
                )
            if refused:
                self.store.bump(REFUSED_COUNTER, refused)

    def pending(self) -> list[dict[str, Any]]:
        """The runs handed over and not settled yet, oldest first."""
        rows = self.store.conn.execute(
            "SELECT run FROM promote_runs WHERE state = 'handed' ORDER BY created"
        ).fetchall()
        return [r for r in (self.run_row(str(x[0])) for x in rows) if r is not None]

    def mark_undoing(self, ids: list[int]) -> None:
        """Entries about to be taken out: durably said before their file changes, so an
        undo stopped after the rewrite still counts them out (the next undo finishes it)."""
        with self.store.durable(), self.store.transaction() as conn:
            conn.executemany(
                "UPDATE promote_entries SET state = 'undoing' WHERE id = ? AND state = 'promoted'",
                [(i,) for i in ids],
            )

    def record_undone(self, run: str, undone: list[int], sources: list[str]) -> None:
        with self.store.transaction() as conn:
            conn.executemany(
                "UPDATE promote_entries SET state = 'undone' WHERE id = ?", [(i,) for i in undone]
            )
            for source in sources:
                conn.execute(
                    "DELETE FROM marks WHERE path = ? AND kind = 'promoted' AND note LIKE ?",
                    (source, f"% (run {run})"),
                )

    def finish_undo(self, run: str) -> None:
        """The run is undone (``restore --last`` no longer reaches it)."""
        with self.store.transaction() as conn:
            conn.execute("UPDATE promote_runs SET state = 'undone' WHERE run = ?", (run,))

    # ------------------------------------------------------------------ the rewrite

    def rewrite(self, run: str, path: Path, expect: bytes | None, new: bytes | None) -> None:
        """Make ``path`` hold ``new`` (None: no file) while it holds ``expect`` (None: no
        file); :class:`Changed` otherwise (nothing changed)."""
        path = self.check_path(path)
        with self.locked():
            now = read_or_none(path)
            if now != expect:
                raise Changed(f"{path}: changed since memoryd read it")
            with self.store.durable(), self.store.transaction() as conn:
                cur = conn.execute(
                    "INSERT INTO promote_writes(run, dest, before, after_sha, state, created) "
                    "VALUES (?, ?, ?, ?, 'intent', ?)",
                    (run, str(path), expect, sha(new), time.time()),
                )
                row_id = int(cur.lastrowid or 0)
            faults.point("promote.journaled", path)
            try:
                self._place(row_id, path, expect, new)
            except Changed as exc:
                self._finish(row_id, "rolled_back", str(exc))
                raise
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    state, what = self._repair_one(row_id, path, expect, sha(new))
                    self._finish(row_id, state, f"{type(exc).__name__}: {exc}; {what}")
                raise
            self._finish(row_id, "done")

    def _finish(self, row_id: int, state: str, note: str | None = None) -> None:
        with self.store.transaction() as conn:
            conn.execute(
                "UPDATE promote_writes SET state = ?, finished = ?, note = ? WHERE id = ?",
                (state, time.time(), note, row_id),
            )

    def _place(self, row_id: int, path: Path, expect: bytes | None, new: bytes | None) -> None:
        tmp, aside = _names(path, row_id, "p")
        mode = 0o644
        if expect is not None:
            with contextlib.suppress(OSError):
                mode = os.stat(path).st_mode & 0o7777
        if new is None:  # the file goes: renamed aside, checked, removed
            assert expect is not None
            os.rename(path, aside)
            if read_or_none(aside) != expect:  # a save landed in between: it gets its name back
                where = "" if _give_back(aside, path) else (
                    f"; kept at {_keep(aside, path, row_id)}")  # fmt: skip
                raise Changed(f"{path}: edited while memoryd took its entries out; the edit "
                              f"stays{where}")  # fmt: skip
            _unlink(aside)
            return
        make_folders(path.parent, self.check_path)
        # (a file rewritten keeps its own mode, whatever the umask; a new one takes the umask)
        write_new(tmp, new, mode, exact=expect is not None)
        if expect is None:
            try:
                os.link(tmp, path)  # (fails when a save made the file meanwhile: it wins)
            except FileExistsError:
                _unlink(tmp)
                raise Changed(f"{path}: made while memoryd wrote it; that file stays") from None
            _unlink(tmp)
            return
        faults.point("promote.swap", path)
        if _swap(tmp, path, "promote.exchange"):
            fsync_dir(path.parent)
            faults.point("promote.swapped", path)
            if read_or_none(tmp) != expect:  # a save since the check: swapped back, it wins
                if not exchange(tmp, path):
                    kept = _keep(tmp, path, row_id)
                    raise Changed(f"{path}: edited while memoryd rewrote it; kept at {kept}")
                fsync_dir(path.parent)
                spare = read_or_none(tmp) == new
                kept_at = None if spare else _keep(tmp, path, row_id)
                _unlink(tmp)
                where = f"; what was written meanwhile is kept at {kept_at}" if kept_at else ""
                raise Changed(f"{path}: edited while memoryd rewrote it; the edit stays{where}")
            _unlink(tmp)
            return
        # No swap here: the file goes aside, is checked, and the new one is linked in.
        os.rename(path, aside)
        faults.point("promote.aside", path)
        if read_or_none(aside) != expect:  # a save landed between the check and the rename
            back = _give_back(aside, path)
            where = "" if back else f"; its earlier version is kept at {_keep(aside, path, row_id)}"
            _unlink(tmp)
            raise Changed(f"{path}: edited while memoryd rewrote it; the edit stays{where}")
        try:
            os.link(tmp, path)
        except FileExistsError:  # saved anew while there was no file: that save wins
            kept = _keep(aside, path, row_id)
            _unlink(tmp)
            raise Changed(f"{path}: saved while memoryd rewrote it; the save stays, the file as "
                          f"it was is kept at {kept}") from None  # fmt: skip
        fsync_dir(path.parent)
        _unlink(tmp)
        _unlink(aside)

    # ------------------------------------------------------------------ repair

    def repair(self) -> list[str]:
        """Finish or roll back every rewrite a crash stopped; one line each."""
        out = []
        with self.locked():
            rows = self.store.conn.execute(
                "SELECT id, dest, before, after_sha FROM promote_writes WHERE state = 'intent'"
            ).fetchall()
            for row_id, dest, before, after_sha in rows:
                try:
                    state, what = self._repair_one(int(row_id), Path(dest), before, after_sha)
                except OSError as exc:
                    out.append(f"promote write #{row_id} {dest}: could not repair yet: {exc}")
                    continue
                self._finish(int(row_id), state, f"repair: {what}")
                out.append(f"promote write #{row_id} {dest}: {what} ({state})")
        return out

    def _repair_one(
        self, row_id: int, path: Path, before: bytes | None, after_sha: str
    ) -> tuple[str, str]:
        tmp, aside = _names(path, row_id, "p")
        now = read_or_none(path) if os.path.lexists(path) else None
        put = read_or_none(aside) if os.path.lexists(aside) else None
        if put is not None:
            if now is None:  # stopped with the file aside: it gets its name back
                _give_back(aside, path)
                now = put
            elif put == before:
                _unlink(aside)  # (the file as memoryd read it; the journal row holds it too)
            else:
                _keep(aside, path, row_id)
        left = read_or_none(tmp) if os.path.lexists(tmp) else None
        if now is None and left is not None and left == before and after_sha:
            os.rename(tmp, path)  # stopped between the rename aside and its check
            fsync_dir(path.parent)
            return "rolled_back", "file as it was"
        if sha(now) == after_sha:
            if left is not None and (left == before or sha(left) == after_sha):
                os.unlink(tmp)
            elif left is not None:
                return "done", f"rewritten; a save kept at {_keep(tmp, path, row_id)}"
            return "done", "rewritten"
        if now == before:
            if left is not None and sha(left) == after_sha:
                os.unlink(tmp)
            elif left is not None:
                return "rolled_back", f"as it was; a save kept at {_keep(tmp, path, row_id)}"
            return "rolled_back", "file as it was"
        # A save since: it stays; a leftover is kept where it holds anything but our bytes.
        if left is not None and sha(left) != after_sha and left != before:
            return "rolled_back", f"saved meanwhile; kept at {_keep(tmp, path, row_id)}"
        if left is not None:
            os.unlink(tmp)
        return "rolled_back", "saved meanwhile; the save stays"


def _keep(path: Path, dest: Path, row_id: int) -> Path:
    return _keep_at(path, dest, row_id, "p")
