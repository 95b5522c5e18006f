"""The strength each hit keeps (``hits.strong_from``, migration 10): its triggers and its fill.

Two ways keep the column right. Row by row, the triggers below update it in the
transaction that writes or deletes a hit; that is what a live batch pays. A bulk load (a
first scan of a large backlog) and migration 10 on a full table use the other: the
column filled from the whole table at once (:func:`fill`), each row's value by the same
rule as the triggers (:data:`STRENGTH_SQL`, :func:`memoryd.strength.strong_flags`). The
triggers cost a first scan more than the rest of the ingest did (docs/benchmarks.md), so a
bulk load drops them and fills the column at its end.

While the column is not right for every row, the meta row ``hits.strength_pending``
(:data:`PENDING_META`) says so, and holds the first id the fill has still to do; the readers
of the column (:class:`memoryd.signals.Snapshot`, by :func:`strengths_kept`) then rank every
call again, as before migration 10, instead of trusting it. It is set in the transaction
that drops the triggers (or adds the column), so no reader ever sees a wrong strength taken
for a kept one, and cleared in the transaction that fills the last rows. The fill goes in chunks of
rows, each its own short transaction with its place in the meta row: a process killed
meanwhile leaves a resumable fill, and other writers (whose busy timeout is 30 s) never
wait for the whole table (one transaction held the write lock for tens of seconds:
docs/benchmarks.md).

The triggers are created again before the fill starts: a hit written meanwhile by another
process updates the rows it touches as usual, and a row the fill has not reached yet is
computed from the whole table when it is (whatever a trigger wrote into it before).
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

# Rows one transaction of the fill computes: about 0.2-0.5 s of the write lock on a
# loaded machine (the whole of 416 k hits took 25-58 s in one), well under the 30 s other
# writers wait before they give up.
FILL_ROWS = 8192

# (rows filled, rows in all) after each transaction of the fill.
FillProgress = Callable[[int, int], None]


def strengths_kept(conn: Any) -> bool:
    """Whether every hit's kept strength (``hits.strong_from``) can be read as it is: the
    database has the column (migration 10; a read-only open does not migrate) and no fill
    of it is pending (a first scan's bulk load, killed or still loading, or migration 10's
    fill not yet done). When not, the readers rank every call again, as before the column."""
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
    transaction (:data:`FILL_ROWS`), and clear the mark with the last: returns the rows
    computed. Each transaction reads the mark again (two processes filling at once share
    the work).
    The triggers are created first (with the first chunk), so rows written meanwhile
    keep theirs."""
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
