"""Reading the move journal: its rows as :class:`MoveRecord`, the questions jobs and
commands ask of it, and :class:`JournalLookups`, the read-only half of
:class:`memoryd.mover.Mover`. The journal's SQL stays here and in :mod:`memoryd.mover`, which
writes it; nothing here touches a file.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from . import clock
from .store_schema import (
    AWAY_PREFIXES,
    EXPIRE_BATCH,
    ORGANIZE_BATCH,
    RECALL_BATCH,
    RESTORE_ON_DEMAND_BATCH,
    RETIRE_BATCH,
    UNDO_BATCH,
)

if TYPE_CHECKING:
    from .store import Store


class MoveRecord(NamedTuple):
    """One journal entry, as stored (a named tuple: `status` reads the journal through this
    module without importing dataclasses, tests/project/test_startup.py)."""

    id: int
    batch: str
    op: str
    src: str
    dst: str | None
    sha256: str | None
    size: int | None
    state: str
    reason: str | None
    created: float
    finished: float | None
    undo_of: int | None


_COLUMNS = "id, batch, op, src, dst, sha256, size, state, reason, created, finished, undo_of"


# ------------------------------------------------------------------ batch labels
# A batch is labelled ``<command>:…``. The labels are the moves table's contract and live in
# :mod:`memoryd.store_schema` (the ingest reads them too, below this layer); the batches are
# made here only.


def expire_batch(month: str) -> str:
    """A manual expire run's batch: ``expire:<month>:<nanoseconds>``."""
    return f"{EXPIRE_BATCH}{month}:{time.time_ns()}"


def scheduled_expire_prefix(month: str) -> str:
    """What every scheduled expire run of ``month`` starts its batch with (the run adds a
    nanosecond stamp): the month's cap counts the moves of these batches."""
    return f"{EXPIRE_BATCH}{month}:scheduled:"


def organize_batch(now: float) -> str:
    return f"{ORGANIZE_BATCH}{clock.iso(now)}:{_short_id()}"


def recall_batch() -> str:
    return f"{RECALL_BATCH}{_short_id()}"


def retire_batch(now: float) -> str:
    return f"{RETIRE_BATCH}{clock.iso(now)}:{_short_id()}"


def restore_on_demand_batch() -> str:
    return f"{RESTORE_ON_DEMAND_BATCH}{time.time_ns()}"


def undo_batch(batch: str) -> str:
    """The batch an undo of a ``batch`` entry is journaled under, unless the caller names one."""
    return f"{UNDO_BATCH}{batch}"


def command_of(batch: str) -> str:
    """The command whose run a journal batch is (``expire:2026-11:…`` → ``expire``)."""
    return batch.split(":", 1)[0]


def _short_id() -> str:
    import uuid

    return uuid.uuid4().hex[:8]


# ------------------------------------------------------------------ reading the journal


def _like_prefix(prefix: str) -> str:
    """A LIKE pattern for batches starting with ``prefix`` (``\\`` escapes its wildcards)."""
    return prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


# A done move ``m`` is *live* while the file it put at ``m.dst`` is still there by its doing:
# no later move that stands took the file away from there (a recall moving it back to the
# workspace), and no later move landed a file there (a re-archive of the note to the same
# name, after it had left). One note, one live row: a re-archive supersedes the older row,
# and a recall that is undone (``restore --last``) hands the file back to the row it left.
_LATER_MOVE = (
    "l.id > m.id AND l.op = 'move' AND ((l.src = m.dst AND l.state = 'done') OR "
    "(l.dst = m.dst AND l.undo_of IS NULL AND l.state IN ('done', 'undone')))"
)
_SUPERSEDED = f"EXISTS (SELECT 1 FROM moves l WHERE {_LATER_MOVE})"


def _columns_of(alias: str) -> str:
    return ", ".join(f"{alias}.{c}" for c in _COLUMNS.split(", "))


def archived_moves(store: Store, batch_prefix: str) -> list[MoveRecord]:
    """The live done moves of batches starting with ``batch_prefix``, oldest first: the files
    still archived by expire (their archived copy may be gone), one row per archived file."""
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM moves m WHERE m.op = 'move' AND m.state = 'done' "
        "AND m.undo_of IS NULL AND m.batch LIKE ? ESCAPE '\\' AND m.id NOT IN ("
        # (a list made once, not a scan per row: ``undo_of`` has no index of its own)
        "SELECT u.undo_of FROM moves u WHERE u.undo_of IS NOT NULL AND u.state = 'done') "
        f"AND NOT {_SUPERSEDED} ORDER BY m.id",
        (_like_prefix(batch_prefix),),
    ).fetchall()
    return [MoveRecord(*r) for r in rows]


def returned_since(store: Store, batch_prefix: str, since: float) -> list[tuple[str, float]]:
    """(where it is now, when) of each file a live move of a ``batch_prefix`` batch took away
    and a later move (an undo, or a move of its own) brought back at or after ``since``."""
    rows = store.conn.execute(
        "SELECT b.dst, MAX(b.finished) FROM moves a JOIN moves b "
        "ON b.undo_of = a.id OR (b.undo_of IS NULL AND b.src = a.dst AND b.id > a.id) "
        "WHERE a.op = 'move' AND a.undo_of IS NULL AND a.batch LIKE ? ESCAPE '\\' "
        "AND b.op = 'move' AND b.state = 'done' AND b.finished >= ? GROUP BY b.dst",
        (_like_prefix(batch_prefix), since),
    ).fetchall()
    return [(dst, finished) for dst, finished in rows if dst]


def superseded_by(store: Store, move_id: int) -> MoveRecord | None:
    """The later move that took the file of done move ``move_id`` away from its destination
    (or landed another file there), if any: that move's undo must not run any more."""
    row = store.conn.execute(
        f"SELECT {_columns_of('l')} FROM moves m, moves l WHERE m.id = ? AND {_LATER_MOVE} "
        "ORDER BY l.id LIMIT 1",
        (move_id,),
    ).fetchone()
    return MoveRecord(*row) if row else None


def moved_sources(store: Store, batch_prefix: str) -> list[str]:
    """The sources of the moves of batches starting with ``batch_prefix``, one per move,
    undone ones too (they moved)."""
    rows = store.conn.execute(
        "SELECT src FROM moves WHERE op = 'move' AND undo_of IS NULL "
        "AND state IN ('done', 'undone') AND batch LIKE ? ESCAPE '\\'",
        (_like_prefix(batch_prefix),),
    ).fetchall()
    return [src for (src,) in rows]


def undo_destinations_since(store: Store, batch_prefix: str, since: float) -> list[str]:
    """Where the done undos of batches starting with ``batch_prefix`` put files back, for
    those finished at or after ``since``."""
    rows = store.conn.execute(
        "SELECT dst FROM moves WHERE op = 'move' AND state = 'done' AND undo_of IS NOT NULL "
        "AND batch LIKE ? ESCAPE '\\' AND COALESCE(finished, created) >= ?",
        (_like_prefix(batch_prefix), since),
    ).fetchall()
    return [dst for (dst,) in rows if dst]


class JournalRun(NamedTuple):
    """One run that moved notes (one journal batch: ``expire:…``, ``organize:…``, a recall,
    any later command's), with what was put back of it since."""

    batch: str
    started: float
    entries: tuple[MoveRecord, ...]  # its own moves, copies, deletions (undos are not runs)
    restored: tuple[tuple[MoveRecord, MoveRecord], ...]  # (its entry, the done undo of it)


def journal_runs(store: Store, since: float, limit: int = 20) -> list[JournalRun]:
    """The runs that began at or after ``since``, newest first, at most ``limit`` of them;
    read only (the reflect page shows what each decided and what was restored since)."""
    batches = store.conn.execute(
        "SELECT batch, MIN(created) FROM moves WHERE undo_of IS NULL AND created >= ? "
        "GROUP BY batch ORDER BY MIN(created) DESC, batch LIMIT ?",
        (since, limit),
    ).fetchall()
    if not batches:
        return []
    names = [b for b, _ in batches]
    marks = ",".join("?" * len(names))
    entries: dict[str, list[MoveRecord]] = {b: [] for b in names}
    for row in store.conn.execute(
        f"SELECT {_COLUMNS} FROM moves WHERE undo_of IS NULL AND batch IN ({marks}) ORDER BY id",
        names,
    ):
        entries[row[1]].append(MoveRecord(*row))
    by_id = {e.id: e for lst in entries.values() for e in lst}
    restored: dict[str, list[tuple[MoveRecord, MoveRecord]]] = {b: [] for b in names}
    for row in store.conn.execute(
        f"SELECT {_columns_of('u')} FROM moves u JOIN moves m ON u.undo_of = m.id "
        f"WHERE u.state = 'done' AND m.batch IN ({marks}) ORDER BY u.id",
        names,
    ):
        undo = MoveRecord(*row)
        entry = by_id.get(undo.undo_of or -1)
        if entry is not None:
            restored[entry.batch].append((entry, undo))
    return [JournalRun(b, float(t), tuple(entries[b]), tuple(restored[b])) for b, t in batches]


class JournalLookups:
    """The journal's read-only questions, as methods of every :class:`memoryd.mover.Mover`
    (which sets these two attributes): a path is looked up under each spelling of its root."""

    store: Store
    _roots: list[tuple[Path, Path]]

    def get(self, move_id: int) -> MoveRecord | None:
        row = self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM moves WHERE id = ?", (move_id,)
        ).fetchone()
        return MoveRecord(*row) if row else None

    def unfinished(self) -> list[MoveRecord]:
        rows = self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM moves WHERE state = 'intent' ORDER BY id"
        ).fetchall()
        return [MoveRecord(*r) for r in rows]

    def _spellings(self, path: Path | str) -> set[str]:
        """``path`` (absolute) as given and below each root's resolved spelling."""
        p = str(Path(os.path.abspath(str(path))))
        candidates = {p}
        for given, real in self._roots:
            with contextlib.suppress(ValueError):
                candidates.add(str(real / Path(p).relative_to(given)))
        return candidates

    def live_away_moves(self, path: Path | str) -> list[MoveRecord]:
        """The live moves that took a note away (expire, organize) whose source or
        destination is ``path``, newest first: what ``restore PATH`` takes back.

        A recall's move (it brought the note back) is never one of them, nor a move whose
        file moved on since (:func:`superseded_by`).
        """
        candidates = self._spellings(path)
        marks = ",".join("?" * len(candidates))
        away = " OR ".join("m.batch LIKE ? ESCAPE '\\'" for _ in AWAY_PREFIXES)
        rows = self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM moves m WHERE m.op = 'move' AND m.state = 'done' "
            f"AND m.undo_of IS NULL AND ({away}) AND (m.src IN ({marks}) OR m.dst IN ({marks})) "
            f"AND NOT {_SUPERSEDED} ORDER BY m.id DESC",
            [*(_like_prefix(a) for a in AWAY_PREFIXES), *candidates, *candidates],
        ).fetchall()
        return [MoveRecord(*r) for r in rows]

    def where_now(self, path: Path | str) -> tuple[str | None, MoveRecord] | None:
        """Where the journal says the file once at ``path`` is now, and the move that put it
        there (None: no move of that path, done or undone, in the journal).

        The path is followed from its first move through every later move that happened
        (done, or undone by a later one) away from where the file was: expire, recall, undo,
        restore on demand. The place is None when the last of them deleted the file.
        """
        candidates = self._spellings(path)
        marks = ",".join("?" * len(candidates))
        first = self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM moves WHERE op IN ('move', 'delete') "
            f"AND state IN ('done', 'undone') AND (src IN ({marks}) OR dst IN ({marks})) "
            "ORDER BY id LIMIT 1",
            [*candidates, *candidates],
        ).fetchone()
        if first is None:
            return None
        rec = MoveRecord(*first)
        here: str | None = rec.src if rec.src in candidates else rec.dst
        last = rec
        after = rec.id - 1
        for _ in range(10_000):  # a bound, not a limit any real history reaches
            if here is None:
                break
            row = self.store.conn.execute(
                f"SELECT {_COLUMNS} FROM moves WHERE op IN ('move', 'delete') "
                "AND state IN ('done', 'undone') AND src = ? AND id > ? ORDER BY id LIMIT 1",
                (here, after),
            ).fetchone()
            if row is None:
                break
            last = MoveRecord(*row)
            here, after = last.dst, last.id
        return here, last

    def newest_run(self) -> str | None:
        """The batch of the newest move or copy that was not itself an undo, done or undone:
        the last run that moved files, whatever became of it since."""
        row = self.store.conn.execute(
            "SELECT batch FROM moves WHERE op IN ('move', 'copy') AND undo_of IS NULL "
            "AND state IN ('done', 'undone') ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return row[0] if row else None

    def undone_at(self, batch: str) -> float | None:
        """When the newest done undo of a move of ``batch`` finished (None: none undone)."""
        row = self.store.conn.execute(
            "SELECT MAX(COALESCE(u.finished, u.created)) FROM moves u JOIN moves m "
            "ON u.undo_of = m.id WHERE m.batch = ? AND u.state = 'done'",
            (batch,),
        ).fetchone()
        return float(row[0]) if row and row[0] is not None else None

    def find(self, path: Path | str) -> list[MoveRecord]:
        """Done moves whose source or destination is ``path`` (absolute), newest first."""
        candidates = self._spellings(path)
        marks = ",".join("?" * len(candidates))
        rows = self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM moves WHERE op = 'move' AND state = 'done' "
            f"AND undo_of IS NULL AND (src IN ({marks}) OR dst IN ({marks})) ORDER BY id DESC",
            [*candidates, *candidates],
        ).fetchall()
        return [MoveRecord(*r) for r in rows]

    def last_batch(self) -> str | None:
        """The batch of the newest done (not undone) move or copy."""
        row = self.store.conn.execute(
            "SELECT batch FROM moves WHERE op IN ('move', 'copy') AND state = 'done' "
            "AND undo_of IS NULL ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return row[0] if row else None

    def batch_entries(self, batch: str) -> list[MoveRecord]:
        rows = self.store.conn.execute(
            f"SELECT {_COLUMNS} FROM moves WHERE batch = ? ORDER BY id", (batch,)
        ).fetchall()
        return [MoveRecord(*r) for r in rows]
