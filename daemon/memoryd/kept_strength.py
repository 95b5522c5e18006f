"""The strength each hit keeps (``hits.strong_from``, migration 10): its triggers and its fill.

Row by row, the triggers below update it in the transaction that writes or deletes a hit (what
a live batch pays). A bulk load (a first scan) and migration 10 drop them and fill the column
from the whole table (:func:`fill`) by the same rule (:data:`STRENGTH_SQL`,
:func:`memoryd.strength.strong_flags`): the triggers cost a first scan more than the rest of
the ingest (docs/benchmarks.md).

While the column is not right for every row, the meta row :data:`PENDING_META` says so (the
first id still to fill), and the readers (:func:`strengths_kept`) rank every call again. It is
set in the transaction that drops the triggers and cleared in the one that fills the last
rows, so no reader takes a wrong strength for a kept one. The fill goes in short chunks with
its place in the meta row: resumable after a kill, and other writers never wait long. The
triggers come back before it starts, so rows written meanwhile keep theirs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from . import faults

# The meta row set while ``hits.strong_from`` is not right for every row (a bulk load's,
# or migration 10's, fill to do); its value, the first id to fill.
PENDING_META = "hits.strength_pending"

# A hit's strong_from from the other rows: a get at its own time; a search result at its
# own time when no result of its call scored higher or one has no score; else at the
# first get of the file by the same agent in the same session at or after it.
STRENGTH_SQL = """CASE
        WHEN kind != 'search' THEN ts
        WHEN score IS NULL OR NOT EXISTS (SELECT 1 FROM hits AS c
            WHERE c.agent = hits.agent AND c.call_id = hits.call_id AND c.kind = 'search'
            AND (c.score IS NULL OR c.score > hits.score)) THEN ts
        WHEN EXISTS (SELECT 1 FROM hits AS c
            WHERE c.agent = hits.agent AND c.call_id = hits.call_id AND c.kind = 'search'
            AND c.score IS NULL) THEN ts
        WHEN session IS NULL OR session = '' THEN NULL
        ELSE (SELECT min(g.ts) FROM hits AS g
            WHERE g.agent = hits.agent AND g.session = hits.session
            AND g.memory_path = hits.memory_path AND g.kind != 'search' AND g.ts >= hits.ts)
    END"""

TRIGGER_NAMES = ("hits_strength_insert", "hits_strength_delete")

# The triggers, as migration 10 created them (its text includes these), one statement each.
_INSERT_TRIGGER = """
    CREATE TRIGGER IF NOT EXISTS hits_strength_insert AFTER INSERT ON hits BEGIN
        UPDATE hits SET strong_from = ts
            WHERE NEW.kind != 'search' AND id = NEW.id;
        UPDATE hits SET strong_from = NEW.ts
            WHERE NEW.kind != 'search' AND NEW.session != ''
            AND agent = NEW.agent AND session = NEW.session AND memory_path = NEW.memory_path
            AND kind = 'search' AND ts <= NEW.ts AND (strong_from IS NULL OR strong_from > NEW.ts);
        UPDATE hits SET strong_from = @STRENGTH@
            WHERE NEW.kind = 'search' AND id = NEW.id;
        -- (the other results of its call: all of unknown rank once one has no score; a
        -- lower one ranked first so far is not any more; the others stay as they were)
        UPDATE hits SET strong_from = ts
            WHERE NEW.kind = 'search' AND NEW.score IS NULL
            AND agent = NEW.agent AND call_id = NEW.call_id AND kind = 'search';
        UPDATE hits SET strong_from = @STRENGTH@
            WHERE NEW.kind = 'search' AND agent = NEW.agent AND call_id = NEW.call_id
            AND kind = 'search' AND score < NEW.score AND strong_from = ts;
    END"""
_DELETE_TRIGGER = """
    CREATE TRIGGER IF NOT EXISTS hits_strength_delete AFTER DELETE ON hits BEGIN
        UPDATE hits SET strong_from = @STRENGTH@
            WHERE OLD.kind = 'search' AND agent = OLD.agent AND call_id = OLD.call_id;
        UPDATE hits SET strong_from = @STRENGTH@
            WHERE OLD.kind != 'search' AND OLD.session != ''
            AND agent = OLD.agent AND session = OLD.session AND memory_path = OLD.memory_path
            AND kind = 'search' AND ts <= OLD.ts;
    END"""
TRIGGERS = tuple(
    sql.replace("@STRENGTH@", STRENGTH_SQL) for sql in (_INSERT_TRIGGER, _DELETE_TRIGGER)
)
# Both, as one script (migration 10's text).
TRIGGERS_SQL = "".join(f"{sql};\n" for sql in TRIGGERS)

# The meta row that says the fill is to do from the first row (an upsert: a statement of
# migration 10, and of the transaction that drops the triggers).
PENDING_FROM_START = (
    f"INSERT INTO meta(key, value) VALUES ('{PENDING_META}', '0') "
    "ON CONFLICT(key) DO UPDATE SET value = '0'"
)

# Rows one transaction of the fill computes: a fraction of a second of the write lock, well
# under the 30 s other writers wait (docs/benchmarks.md).
FILL_ROWS = 8192

# (rows filled, rows in all) after each transaction of the fill.
FillProgress = Callable[[int, int], None]


def strengths_kept(conn: Any) -> bool:
    """Whether every hit's kept strength (``hits.strong_from``) can be read as it is: the
    column is there (a read-only open does not migrate) and no fill of it is pending."""
    if int(conn.execute("PRAGMA user_version").fetchone()[0]) < 10:
        return False
    row = conn.execute("SELECT 1 FROM meta WHERE key = ?", (PENDING_META,)).fetchone()
    return row is None


def drop_triggers(conn: sqlite3.Connection) -> None:
    """For a bulk load (inside its transaction): no triggers, and the column marked as to be
    filled from the first row (the rows a trigger-less load writes, and the older rows
    its later gets make strong, are all refilled)."""
    for name in TRIGGER_NAMES:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute(PENDING_FROM_START)


def create_triggers(conn: sqlite3.Connection) -> None:
    """The triggers back (inside a transaction; those there already stay)."""
    for statement in TRIGGERS:
        conn.execute(statement)


def pending_from(conn: sqlite3.Connection) -> int | None:
    """The first id the fill has still to do; None when every row's strength is right."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (PENDING_META,)).fetchone()
    return None if row is None else int(row[0])


def fill(
    conn: sqlite3.Connection,
    rows: int | None = None,
    progress: FillProgress | None = None,
) -> int:
    """Fill ``strong_from`` from where the fill stands to the last row, ``rows`` ids a
    transaction, and clear the mark with the last: returns the rows computed. Each
    transaction reads the mark again, so two processes filling at once share the work."""
    step = FILL_ROWS if rows is None else rows
    done = 0
    total: int | None = None
    if pending_from(conn) is None:  # (every writable open asks: no write lock for that)
        return 0
    while True:
        conn.execute("BEGIN IMMEDIATE")
        try:
            start = pending_from(conn)
            if start is None:
                conn.execute("COMMIT")
                return done
            create_triggers(conn)
            (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM hits").fetchone()
            end = start + step
            conn.execute(
                f"UPDATE hits SET strong_from = {STRENGTH_SQL} WHERE id >= ? AND id < ?",
                (start, end),
            )
            faults.point("strength.chunk")  # (tests: killed with a chunk written, not committed)
            if end > last:
                conn.execute("DELETE FROM meta WHERE key = ?", (PENDING_META,))
            else:
                conn.execute("UPDATE meta SET value = ? WHERE key = ?", (str(end), PENDING_META))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        faults.point("strength.committed")  # (tests: another writer between two chunks)
        done += min(end, last + 1) - start
        if progress is not None:
            if total is None:
                total = max(last + 1 - start, 1)
            progress(min(done, total), total)
        if end > last:
            return done
