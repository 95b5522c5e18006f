"""The state database's schema: every migration's DDL, in order, and how a script is applied.

:meth:`memoryd.store.Store.open` runs the steps a database lacks; tests and benchmarks build
older versions from :data:`MIGRATIONS`. Nothing here opens a database.
"""

from __future__ import annotations

import sqlite3

from . import kept_strength

# What a move's ``batch`` starts with, by the command that made it (``<command>:…``): written
# here only, so that every reader (``restore``, ``status``, the replay, restore on demand, the
# ingest's archived copies) finds what the writers (:mod:`memoryd.move_journal`) wrote.
EXPIRE_BATCH = "expire:"  # every expire run's, manual or scheduled
ORGANIZE_BATCH = "organize:"
RECALL_BATCH = "recall:"
RETIRE_BATCH = "retire:"
RESTORE_ON_DEMAND_BATCH = "restore-on-demand:"  # one batch a restore
UNDO_BATCH = "undo:"
# Batches of the moves that take a note away from where its user keeps it (the workspace,
# or a hotter tier); what ``restore PATH`` takes back. Recalls and restores bring notes back.
AWAY_PREFIXES = (EXPIRE_BATCH, ORGANIZE_BATCH)

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

    -- One row per transcript file ever seen. Identity is (dev, ino) plus a hash of
    -- the first head_len bytes; offset is the byte after the last complete line
    -- whose hits are committed.
    CREATE TABLE sources (
        id          INTEGER PRIMARY KEY,
        agent       TEXT NOT NULL,
        kind        TEXT NOT NULL,
        path        TEXT NOT NULL,
        dev         INTEGER NOT NULL,
        ino         INTEGER NOT NULL,
        head_len    INTEGER NOT NULL,
        head_hash   TEXT NOT NULL,
        offset      INTEGER NOT NULL DEFAULT 0,
        size        INTEGER NOT NULL DEFAULT 0,
        mtime_ns    INTEGER NOT NULL DEFAULT 0,
        malformed   INTEGER NOT NULL DEFAULT 0,
        oversized   INTEGER NOT NULL DEFAULT 0,
        resets      INTEGER NOT NULL DEFAULT 0,
        first_seen  REAL NOT NULL,
        last_read   REAL,
        vanished_at REAL
    );
    CREATE INDEX sources_by_path ON sources(path);
    CREATE INDEX sources_by_inode ON sources(dev, ino);

    -- Every memory tool call seen; answered = 0 are the ones still waiting for a
    -- result line (possibly in a later file, after a restart).
    CREATE TABLE calls (
        agent    TEXT NOT NULL,
        call_id  TEXT NOT NULL,
        tool     TEXT NOT NULL,
        query    TEXT,
        ts       REAL,
        session  TEXT,
        answered INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (agent, call_id)
    ) WITHOUT ROWID;
    CREATE INDEX calls_pending ON calls(answered) WHERE answered = 0;

    -- One row per (call, memory file): three chunks of one file in one result are one hit.
    CREATE TABLE hits (
        id          INTEGER PRIMARY KEY,
        agent       TEXT NOT NULL,
        call_id     TEXT NOT NULL,
        memory_path TEXT NOT NULL,
        kind        TEXT NOT NULL,
        ts          REAL NOT NULL,
        query       TEXT,
        score       REAL,
        start_line  INTEGER,
        end_line    INTEGER,
        session     TEXT,
        source_id   INTEGER,
        UNIQUE (agent, call_id, memory_path)
    );
    CREATE INDEX hits_by_path_ts ON hits(memory_path, ts);
    CREATE INDEX hits_by_ts ON hits(ts);

    -- Completed (or failed) runs of each job, one row per period key.
    CREATE TABLE jobs (
        job      TEXT NOT NULL,
        period   TEXT NOT NULL,
        status   TEXT NOT NULL,
        started  REAL NOT NULL,
        finished REAL,
        summary  TEXT,
        PRIMARY KEY (job, period)
    );

    -- The move journal: intent is written (durably) before the file system changes.
    CREATE TABLE moves (
        id       INTEGER PRIMARY KEY,
        batch    TEXT NOT NULL,
        op       TEXT NOT NULL,
        src      TEXT NOT NULL,
        dst      TEXT,
        sha256   TEXT,
        size     INTEGER,
        state    TEXT NOT NULL,
        reason   TEXT,
        created  REAL NOT NULL,
        finished REAL,
        undo_of  INTEGER
    );
    CREATE INDEX moves_by_state ON moves(state);
    CREATE INDEX moves_by_src ON moves(src);
    CREATE INDEX moves_by_dst ON moves(dst);

    -- User marks (marked, pinned glob) and flags (promoted), by workspace-relative path.
    CREATE TABLE marks (
        path    TEXT NOT NULL,
        kind    TEXT NOT NULL,
        created REAL NOT NULL,
        note    TEXT,
        PRIMARY KEY (path, kind)
    );

    -- Running totals that outlive individual sources (malformed lines, bad paths, ...).
    CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
    """,
    2: """
    -- The tier store: one row per note, keyed by its file name (the
    -- tier-independent part of its hit key tiers/<name>). tier is where the note's
    -- original is (hot, warm, forgotten; gist when only its summary is left;
    -- deleted / missing afterwards); entered is when it got there.
    CREATE TABLE tier_files (
        name        TEXT PRIMARY KEY,
        tier        TEXT NOT NULL,
        created     REAL NOT NULL,
        entered     REAL NOT NULL,
        summarized  REAL,
        user_marked INTEGER NOT NULL DEFAULT 0,
        promoted    INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX tier_files_by_tier ON tier_files(tier);
    """,
    3: """
    -- Read position in OpenClaw's SQLite transcripts (builds since 2026-07): the last
    -- seq read per session, committed together with the hits those rows gave.
    CREATE TABLE transcript_db_cursors (
        source_id  INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        PRIMARY KEY (source_id, session_id)
    ) WITHOUT ROWID;
    """,
    4: """
    -- Sources the last scans could not read (a store of unknown layout, a locked or
    -- corrupt file, an unexpected error), with the reason: shown by `memoryd status`,
    -- removed once a scan reads the source again.
    CREATE TABLE source_failures (
        source TEXT PRIMARY KEY,
        kind   TEXT NOT NULL,
        agent  TEXT NOT NULL,
        reason TEXT NOT NULL,
        at     REAL NOT NULL
    );
    -- A fingerprint of the bytes just before a file's offset: a file rewritten in place
    -- with the same first bytes and a longer tail (`cat new > F`) is read again from 0.
    ALTER TABLE sources ADD COLUMN tail_hash TEXT;
    -- Archives read whole (deleted, reset and cold-stored sessions, from tables and
    -- .zst files), by name with their size and a hash: never read twice.
    CREATE TABLE archives_read (
        agent   TEXT NOT NULL,
        name    TEXT NOT NULL,
        size    INTEGER NOT NULL,
        digest  TEXT NOT NULL,
        read_at REAL NOT NULL,
        PRIMARY KEY (agent, name)
    ) WITHOUT ROWID;
    """,
    5: """
    -- Per-file counts read (memory_path, ts, agent) only: with all three in one index the
    -- GROUP BY memory_path of `hits`, `explain`, `reflect` … walks the index alone, in
    -- order, and never the table (a 200 k-hit database: tens of ms instead of hundreds).
    -- It keeps the old (memory_path, ts) index's name: it serves every query that did.
    DROP INDEX IF EXISTS hits_by_path_ts;
    CREATE INDEX hits_by_path_ts ON hits(memory_path, ts, agent);
    """,
    6: """
    -- Marks live in the marks table only (the tier store no longer keeps its own copy in
    -- tier_files.user_marked / promoted). Carry over what only those columns said, so a
    -- note an earlier organize protected stays protected; the columns stay, unused.
    INSERT OR IGNORE INTO marks(path, kind, created, note)
        SELECT 'tiers/' || name, 'marked', entered, 'carried over from the tier store records'
        FROM tier_files WHERE user_marked = 1;
    INSERT OR IGNORE INTO marks(path, kind, created, note)
        SELECT 'tiers/' || name, 'promoted', entered, 'carried over from the tier store records'
        FROM tier_files WHERE promoted = 1;
    """,
    7: """
    -- A transcript store whose order column repeats within a session (a layout found by its
    -- column names, not OpenClaw's own tables): how many rows of the cursor's seq were read,
    -- in the table's order. NULL: every one of them (a unique order column, and every cursor
    -- written before this column existed).
    ALTER TABLE transcript_db_cursors ADD COLUMN seq_rows INTEGER;
    """,
    8: """
    -- Store sessions seen gone from the store's live table (deleted, reset into an archive,
    -- cold-stored): their cursor, moved here from transcript_db_cursors (which then holds
    -- the sessions of the live table only, read at every read of the store), and since when.
    -- Moved back if the session is there again; forgotten once gone for
    -- ingest.vanished_grace_days (docs/ingest-sources.md, "Sessions that left the store").
    -- (IF NOT EXISTS: a database whose version was set back is migrated again cleanly.)
    CREATE TABLE IF NOT EXISTS transcript_db_gone (
        source_id  INTEGER NOT NULL,
        session_id TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        seq_rows   INTEGER,
        gone_at    REAL NOT NULL,
        PRIMARY KEY (source_id, session_id)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS transcript_db_gone_by_time ON transcript_db_gone(source_id, gone_at);
    """,
    9: """
    -- When expire first listed each memory file: a note's age counts from the
    -- later of its own date and this, so an import of old notes is new. The files listed
    -- at the first run after this migration are the baseline (meta 'files.seen_since'):
    -- their age stays their own.
    CREATE TABLE IF NOT EXISTS files_seen (
        path       TEXT PRIMARY KEY,
        first_seen REAL NOT NULL
    ) WITHOUT ROWID;
    """,
    10: """
    -- Each hit's strength kept with it: strong_from is when the hit became strong
    -- (memoryd.strength.strong_flags: a get, or a search result ranked first or of unknown
    -- rank, at its own time; another result at the first read of it after it, a get of the
    -- file by the same agent in the same session; NULL: not strong). A hit is strong as
    -- known at t when strong_from <= t: the expire plan reads this column instead of
    -- ranking every call and matching every read of the history again.
    -- Kept by the triggers below in the transaction that writes or deletes the hit, for
    -- every writer of the table; the session index finds a file's reads in a session.
    ALTER TABLE hits ADD COLUMN strong_from REAL;
    CREATE INDEX IF NOT EXISTS hits_by_session ON hits(agent, session, memory_path, ts);
    @TRIGGERS@
    -- Every row's value, filled after this transaction in chunks (memoryd.kept_strength):
    -- until then the readers rank every call again (one transaction for 416 k hits held
    -- the write lock 25-58 s, longer than other writers wait).
    @PENDING@;
    """,
    11: """
    -- The text a hit returned, as fingerprints of its lines (section_map.chunk_anchor): which
    -- sections of the file it covered, found again in the file as it is when asked
    -- (`memoryd sections`). NULL for hits counted before: their line range is all there is.
    ALTER TABLE hits ADD COLUMN anchor TEXT;
    """,
    12: """
    -- The retire journal (memoryd.retirer): one row per rewrite of a note and of its archive
    -- file, written before either changes. `before` is every byte of the note the plan read
    -- (what `restore --last` puts back), the archive file's bytes before and after (NULL: no
    -- file); an undo is a row of its own (undo_of).
    CREATE TABLE IF NOT EXISTS retires (
        id INTEGER PRIMARY KEY,
        batch TEXT NOT NULL,
        src TEXT NOT NULL,
        archive TEXT NOT NULL,
        before BLOB NOT NULL,
        after_sha TEXT NOT NULL,
        archive_before BLOB,
        archive_after_sha TEXT NOT NULL,
        archive_after BLOB,
        sections TEXT NOT NULL,
        state TEXT NOT NULL,
        undo_of INTEGER,
        created REAL NOT NULL,
        finished REAL,
        note TEXT
    );
    CREATE INDEX IF NOT EXISTS retires_batch ON retires(batch);
    """,
    13: """
    -- The hits of one file with what places them in its sections (`memoryd sections`): all
    -- the columns that query reads in one index, so it never visits the table (60 k hits of a
    -- 1 MB MEMORY.md: 35 ms instead of 105, docs/benchmarks.md). Ordered by what places a
    -- hit, not by time: the counts' time ranges keep to the narrower hits_by_path_ts.
    CREATE INDEX IF NOT EXISTS hits_by_path_anchor
        ON hits(memory_path, anchor, start_line, end_line, ts, agent);
    """,
    14: """
    -- Promotion carried out by a sub-session of the user's agent (memoryd.promoter): each run
    -- handed over, its destination files as they were then (`before`, NULL: no file) and as
    -- settled (`landed`), each marked entry that landed, and memoryd's own rewrites of a
    -- destination (a declined entry taken out, an undo), journaled before the file changes.
    CREATE TABLE IF NOT EXISTS promote_runs (
        run TEXT PRIMARY KEY,
        created REAL NOT NULL,
        plan TEXT NOT NULL,
        state TEXT NOT NULL,
        settled REAL,
        result TEXT
    );
    CREATE TABLE IF NOT EXISTS promote_files (
        run TEXT NOT NULL,
        dest TEXT NOT NULL,
        before BLOB,
        landed BLOB,
        PRIMARY KEY (run, dest)
    );
    CREATE TABLE IF NOT EXISTS promote_entries (
        id INTEGER PRIMARY KEY,
        run TEXT NOT NULL,
        source TEXT NOT NULL,
        dest TEXT NOT NULL,
        piece TEXT NOT NULL,
        replaced TEXT NOT NULL,
        state TEXT NOT NULL,
        note TEXT
    );
    CREATE INDEX IF NOT EXISTS promote_entries_run ON promote_entries(run);
    CREATE TABLE IF NOT EXISTS promote_writes (
        id INTEGER PRIMARY KEY,
        run TEXT NOT NULL,
        dest TEXT NOT NULL,
        before BLOB,
        after_sha TEXT NOT NULL,
        state TEXT NOT NULL,
        created REAL NOT NULL,
        finished REAL,
        note TEXT
    );
    """,
}

MIGRATIONS[10] = (
    MIGRATIONS[10]
    .replace("@TRIGGERS@", kept_strength.TRIGGERS_SQL)
    .replace("@PENDING@", kept_strength.PENDING_FROM_START)
)
# (table, column) an ADD COLUMN adds that a migration run again skips (see column_there).
IDEMPOTENT_COLUMNS = frozenset({("hits", "strong_from"), ("hits", "anchor")})


SCHEMA_VERSION = max(MIGRATIONS)

# The secondary indexes of ``hits`` (migrations 1, 5, 10 and 13). A first scan of a large
# backlog loads without them and builds them once at its end (cheaper than row by row); any
# writable open rebuilds them if such a scan was killed before its end.
HIT_INDEXES = {
    "hits_by_path_ts": "CREATE INDEX IF NOT EXISTS hits_by_path_ts ON hits(memory_path, ts, agent)",
    "hits_by_ts": "CREATE INDEX IF NOT EXISTS hits_by_ts ON hits(ts)",
    # (migration 10; the strength triggers and the fill of a bulk load's end use it)
    "hits_by_session": "CREATE INDEX IF NOT EXISTS hits_by_session "
    "ON hits(agent, session, memory_path, ts)",
    "hits_by_path_anchor": "CREATE INDEX IF NOT EXISTS hits_by_path_anchor "
    "ON hits(memory_path, anchor, start_line, end_line, ts, agent)",
}


def split_sql(script: str) -> list[str]:
    """Statements of a migration script: comments dropped first, then split on ';' (a
    trigger's body, whose statements end in ';' too, stays whole until its END;)."""
    lines = [ln.split("--", 1)[0] for ln in script.splitlines()]
    out: list[str] = []
    pending = ""
    for piece in "\n".join(lines).split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                out.append(pending.strip().rstrip(";"))
            pending = ""
    if pending.strip(" \n;"):
        out.append(pending.strip().rstrip(";"))
    return out


def column_there(conn: sqlite3.Connection, statement: str) -> bool:
    """Whether ``statement`` adds a column the table has already: a database whose
    version was set back is migrated again cleanly (SQLite's ADD COLUMN has no IF NOT
    EXISTS); only the columns added since migration 10 are looked for."""
    words = statement.split()
    if [w.upper() for w in words[:3]] != ["ALTER", "TABLE", words[2].upper()]:
        return False
    if len(words) < 6 or [w.upper() for w in words[3:5]] != ["ADD", "COLUMN"]:
        return False
    if (words[2], words[5]) not in IDEMPOTENT_COLUMNS:
        return False
    cols = {r[1] for r in conn.execute(f"PRAGMA table_info({words[2]})")}
    return words[5] in cols
