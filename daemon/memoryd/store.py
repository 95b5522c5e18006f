"""The state database: one SQLite file, the only place memoryd keeps state.

Schema and migrations live here, with the few queries several modules share.
Modules that own a table (the tailer its checkpoints, the mover its journal) keep
their statements next to their logic and use :meth:`Store.transaction`.

WAL mode lets every command read while the daemon writes; ``busy_timeout`` makes
concurrent writers wait instead of failing. Ingest commits at
``synchronous=NORMAL``: a power cut may roll back the last batch, hits and
offset together, and the next scan simply re-reads it. The move journal needs
its intent on disk before a file is renamed, so :meth:`Store.durable` switches
to ``FULL`` around it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from . import faults, kept_strength

_MIGRATIONS: dict[int, str] = {
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
    -- The tier store (seed 004): one row per note, keyed by its file name (the
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
    -- When expire first listed each memory file (issue 28): a note's age counts from the
    -- later of its own date and this, so an import of old notes is new. The files listed
    -- at the first run after this migration are the baseline (meta 'files.seen_since'):
    -- their age stays their own.
    CREATE TABLE IF NOT EXISTS files_seen (
        path       TEXT PRIMARY KEY,
        first_seen REAL NOT NULL
    ) WITHOUT ROWID;
    """,
    10: """
    -- Each hit's strength kept with it (issue 32): strong_from is when the hit became strong
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
}

_MIGRATIONS[10] = (
    _MIGRATIONS[10]
    .replace("@TRIGGERS@", kept_strength.TRIGGERS_SQL)
    .replace("@PENDING@", kept_strength.PENDING_FROM_START)
)
# (table, column) an ADD COLUMN adds that a migration run again skips (see Store._column_there).
_IDEMPOTENT_COLUMNS = frozenset({("hits", "strong_from"), ("hits", "anchor")})


SCHEMA_VERSION = max(_MIGRATIONS)

# The secondary indexes of ``hits`` (migrations 1, 5, 10 and 13). A first scan of a large
# backlog loads into an empty table without them and builds them once at its end, which costs less
# than keeping them up to date row by row (see ``Scanner``); any writable open
# rebuilds them if such a scan was killed before its end.
HIT_INDEXES = {
    "hits_by_path_ts": "CREATE INDEX IF NOT EXISTS hits_by_path_ts ON hits(memory_path, ts, agent)",
    "hits_by_ts": "CREATE INDEX IF NOT EXISTS hits_by_ts ON hits(ts)",
    # (migration 10; the strength triggers and the fill of a bulk load's end use it)
    "hits_by_session": "CREATE INDEX IF NOT EXISTS hits_by_session "
    "ON hits(agent, session, memory_path, ts)",
    "hits_by_path_anchor": "CREATE INDEX IF NOT EXISTS hits_by_path_anchor "
    "ON hits(memory_path, anchor, start_line, end_line, ts, agent)",
}


# Page cache of a bulk load (KiB): the dirty pages of one of its transactions fit (SQLite's
# default is 2 MiB). Memory the scan gives back when it ends.
BULK_CACHE_KIB = 64 << 10


# A hit dated up to this much after ``now`` counts, as happening now (the live view: a
# transcript written by another clock, or a clock stepped back, must never make a file in
# use look unused). A replay allows none: at run t it sees the hits with ts <= t.
CLOCK_SKEW = 86400.0
_DAY = 86400.0


# Set while a first scan loads in bulk (the hit indexes dropped), cleared once they are built.
BULK_UNFINISHED_META = "ingest.bulk_unfinished"

class StoreError(Exception):
    """The state database cannot be opened or is not memoryd's."""


class StoreGone(StoreError):
    """A file of the open state database was deleted or replaced under a running process."""


class StoreDamaged(StoreError):
    """The state database's file is damaged (truncated, overwritten, pages that do not read)."""

    def __init__(self, db: Path, detail: str) -> None:
        super().__init__(damaged_message(db, detail))
        self.db = db
        self.detail = detail


# The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def is_damage(exc: BaseException) -> bool:
    """Whether a SQLite error says the database file is damaged (not busy, full or read-only)."""
    if not isinstance(exc, sqlite3.Error):
        return False
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in str(exc)


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file now at ``path``; None when nothing is there."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


# How long a connection waits for a lock another one holds: SQLite's busy timeout, and the
# switch of a new database to WAL, which that timeout does not cover (see _use_wal).
BUSY_WAIT_S = 30.0


def _use_wal(conn: sqlite3.Connection) -> str:
    """Switch the database to WAL and return the journal mode it is in.

    A new database is switched by the first open; several commands started together on a
    new install all try. The switch needs the database to itself, and SQLite answers a
    switch that meets another one under way with SQLITE_BUSY at once, without waiting in the
    busy handler (waiting there could deadlock), so ``busy_timeout`` does not cover it: the
    switch is tried again here, for as long as a busy database is waited for elsewhere."""
    deadline = time.monotonic() + BUSY_WAIT_S
    pause = 0.002
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            # (the primary code: SQLITE_BUSY_RECOVERY and the other extended ones are busy too)
            busy = getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_BUSY
            if not busy or time.monotonic() >= deadline:
                raise
        faults.point("store.wal_busy")  # (tests: the other opener goes on here)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class Store:
    """A connection to the state database with memoryd's settings and schema."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None) -> None:
        self.conn = conn
        self.path = path
        # (device, inode) of state.db and its -wal as this connection first saw them.
        self._identities: dict[Path, tuple[int, int]] = {}
        self._before_bulk: tuple[int, int] | None = None  # settings a bulk load replaced
        self._header_seen = False  # state.db was seen starting with SQLite's header
        self._header_fd: int | None = None  # check_header's descriptor (see there)

    # ---------------------------------------------------------------- open/close

    @classmethod
    def open(
        cls, path: Path | str, *, readonly: bool = False, fill_strength: bool = True
    ) -> Store:
        """Open (creating and migrating unless readonly) the database at ``path``.

        ``fill_strength`` False leaves a pending fill of the kept strength to the next open
        that allows it (a plugin hook's command has well under a second; the fill of a large
        upgraded install takes tens, and readers rank calls again until it is done)."""
        p = Path(path)
        if readonly:
            if not p.exists():
                raise StoreError(f"state database {p} does not exist yet (run `memoryd scan`)")
            uri = f"file:{p}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_WAIT_S)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(p, isolation_level=None, timeout=BUSY_WAIT_S)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_WAIT_S * 1000)}")
            if not readonly:
                mode = _use_wal(conn)
                if mode.lower() != "wal":  # pragma: no cover - exotic file systems
                    raise StoreError(f"state database {p}: WAL mode unavailable ({mode})")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            store = cls(conn, p)
            faults.point("store.opened", conn)
            if not readonly:
                store.check_files()  # remembers the files' identities
            if not readonly:
                store._migrate()
                # A first scan killed mid-way goes on without them (its next scan loads the
                # rest in bulk, then builds them once); see Ledger.begin_bulk.
                if store.get_meta(BULK_UNFINISHED_META) is None:
                    store.ensure_hit_indexes()
                    # (a fill killed before its end, or migration 10's: kept_strength)
                    if fill_strength:
                        kept_strength.fill(conn)
            return store
        except sqlite3.Error as exc:
            conn.close()
            if is_damage(exc):
                raise StoreDamaged(p, str(exc)) from None
            raise StoreError(describe_database_error(p, exc)) from None

    @classmethod
    def memory(cls) -> Store:
        """An in-memory store (for pure-ish tests and dry runs without state)."""
        conn = sqlite3.connect(":memory:", isolation_level=None)
        store = cls(conn, None)
        store._migrate()
        kept_strength.fill(conn)
        return store

    def close(self) -> None:
        self.conn.close()
        if self._header_fd is not None:  # (after the connection: see check_header)
            os.close(self._header_fd)
            self._header_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _migrate(self) -> None:
        """Bring the schema up to date: all steps in one ``BEGIN IMMEDIATE`` transaction.

        The version is read again inside the transaction: two commands started
        together on a new install both see version 0 outside it, and the second
        must find the first one's work done instead of creating the tables again.
        """
        if self._schema_version() == SCHEMA_VERSION:
            return
        with self.transaction():
            version = self._schema_version()
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"state database {self.path} has schema {version}, newer than this memoryd "
                    f"({SCHEMA_VERSION}); upgrade memoryd"
                )
            for target in sorted(t for t in _MIGRATIONS if t > version):
                for statement in _split_sql(_MIGRATIONS[target]):
                    if not self._column_there(statement):
                        self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {target}")

    def _column_there(self, statement: str) -> bool:
        """Whether ``statement`` adds a column the table has already: a database whose
        version was set back is migrated again cleanly (SQLite's ADD COLUMN has no IF NOT
        EXISTS); only the columns added since migration 10 are looked for."""
        words = statement.split()
        if [w.upper() for w in words[:3]] != ["ALTER", "TABLE", words[2].upper()]:
            return False
        if len(words) < 6 or [w.upper() for w in words[3:5]] != ["ADD", "COLUMN"]:
            return False
        if (words[2], words[5]) not in _IDEMPOTENT_COLUMNS:
            return False
        cols = {r[1] for r in self.conn.execute(f"PRAGMA table_info({words[2]})")}
        return words[5] in cols

    def _schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def check_files(self) -> None:
        """Raise :class:`StoreGone` if the database or its -wal is no longer where it was.

        Someone may delete ``state.db-wal`` (or ``state.db``) under a running daemon.
        SQLite keeps writing into the unlinked inode, so every later hit would be
        lost while the offsets say all was read. A long-running process calls this
        now and then (the daemon: at every rescan) and stops when it fails; the next
        start opens the database that is really there and reads again from its
        offsets. The -wal is remembered from the first check that finds it.
        """
        if self.path is None:
            return
        for path in (self.path, Path(f"{self.path}-wal")):
            now = file_identity(path)
            before = self._identities.get(path)
            if before is None:
                if now is not None:
                    self._identities[path] = now
                elif path == self.path:
                    raise StoreGone(f"state database {path} was deleted while memoryd had it open")
                continue
            if now is None or now != before:
                how = "deleted" if now is None else "replaced"
                raise StoreGone(f"state database file {path} was {how} while memoryd had it open")

    def check_header(self) -> None:
        """Raise :class:`StoreDamaged` if ``state.db`` no longer starts as a SQLite database.

        A file truncated or overwritten under a running process is not noticed by SQLite
        until it reads the pages that are gone, and a checkpoint would then write the
        recent pages into what is left: the daemon checks before every scan (a 16-byte
        read) and stops instead. A file still empty (a new database whose first page is in
        the WAL) passes.

        The file is read through a descriptor kept open until :meth:`close`: closing any
        descriptor of the database file drops every POSIX lock this process holds on it
        (SQLite's own included), and another process closing its connection would then
        take itself for the last one and delete the WAL under us.
        """
        if self.path is None:
            return
        if self._header_fd is None:
            try:
                self._header_fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return  # (check_files says "deleted")
        faults.point("store.check_header")  # (tests: an I/O error here is retried)
        head = os.pread(self._header_fd, len(SQLITE_HEADER), 0)
        if head == SQLITE_HEADER:
            self._header_seen = True
            return
        if not head and not self._header_seen:
            return
        why = "truncated to 0 bytes" if not head else "its first bytes are not SQLite's header"
        raise StoreDamaged(self.path, why)

    def quick_check(self) -> None:
        """``PRAGMA quick_check``: raise :class:`StoreDamaged` naming the first problem found.

        Reads every page once, without the index checks of ``integrity_check`` (0.17 s
        against 4.1 s for a 105 MB state, 400,000 hits, cached): the daemon runs it at start
        and once a day.
        """
        if self.path is None:
            return
        try:
            rows = [r[0] for r in self.conn.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                raise StoreDamaged(self.path, str(exc)) from None
            raise
        if rows != ["ok"]:
            raise StoreDamaged(self.path, "; ".join(str(r) for r in rows))

    def bulk_unfinished(self) -> bool:
        """A first scan's bulk load began and did not end (the process was killed)."""
        return self.get_meta(BULK_UNFINISHED_META) is not None

    def hits_empty(self) -> bool:
        return self.conn.execute("SELECT 1 FROM hits LIMIT 1").fetchone() is None

    def drop_hit_indexes(self) -> None:
        """Drop the secondary indexes of ``hits`` for a bulk load (call inside a transaction)."""
        for name in HIT_INDEXES:
            self.conn.execute(f"DROP INDEX IF EXISTS {name}")

    def ensure_hit_indexes(self) -> None:
        """Build the secondary indexes of ``hits`` that are missing (after a bulk load)."""
        have = {
            row[0]
            for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
        missing = [sql for name, sql in HIT_INDEXES.items() if name not in have]
        if missing:
            with self.transaction():
                for sql in missing:
                    self.conn.execute(sql)

    def start_bulk_load(self) -> None:
        """Write settings for a first scan of a backlog, until :meth:`end_bulk_load`.

        A cache large enough for a big transaction's dirty pages (else SQLite spills them
        to the WAL mid-transaction and writes them again at commit), and no automatic
        checkpoints: each one copies the pages committed so far into the database, and the
        hot pages of the unique key are rewritten at every one. A scan killed meanwhile
        leaves a long WAL, which the next open reads as usual. Begun again before its end
        (a bulk scan that failed, retried on the same connection), the usual settings stay
        the ones from before the first: never the bulk ones, which would end every
        automatic checkpoint for the connection's life.
        """
        conn = self.conn
        if self._before_bulk is None:
            self._before_bulk = (
                conn.execute("PRAGMA cache_size").fetchone()[0],
                conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0],
            )
        conn.execute(f"PRAGMA cache_size = {-BULK_CACHE_KIB}")
        conn.execute("PRAGMA wal_autocheckpoint = 0")

    def end_bulk_load(self) -> None:
        """The usual settings back, and one checkpoint: each page written to the database once.

        ``TRUNCATE`` leaves an empty WAL behind. Busy readers make it partial; the next
        automatic checkpoint finishes it.
        """
        before = self._before_bulk
        if before is None:
            return
        self._before_bulk = None
        conn = self.conn
        conn.execute(f"PRAGMA cache_size = {int(before[0])}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {int(before[1])}")
        if not conn.in_transaction:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()

    # ---------------------------------------------------------------- transactions

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, rolled back on any exception."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            # After a full disk or an I/O error SQLite has rolled back by itself; a second
            # ROLLBACK would raise "no transaction is active" and hide the real cause.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    @contextlib.contextmanager
    def durable(self) -> Iterator[None]:
        """Commits inside are fsynced before they return (synchronous=FULL)."""
        self.conn.execute("PRAGMA synchronous = FULL")
        try:
            yield
        finally:
            self.conn.execute("PRAGMA synchronous = NORMAL")

    # ---------------------------------------------------------------- counters

    def bump(self, name: str, by: int = 1) -> None:
        """Add to a named counter (call inside a transaction)."""
        if by:
            self.conn.execute(
                "INSERT INTO counters(name, value) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                (name, by),
            )

    def counters(self) -> dict[str, int]:
        return dict(self.conn.execute("SELECT name, value FROM counters"))

    # ---------------------------------------------------------------- meta

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # ---------------------------------------------------------------- hits

    def hit_counts(
        self,
        now: float,
        windows: Iterable[float] = (),
        agents: Iterable[str] | None = None,
        *,
        skew: float = CLOCK_SKEW,
        total: bool = True,
    ) -> dict[str, HitTally]:
        """memory_path → its hits as of ``now``: see :func:`hit_counts`, the one count."""
        return hit_counts(self.conn, now, windows, agents, skew=skew, total=total)

    # ---------------------------------------------------------------- jobs

    def job_done(self, job: str, period: str) -> bool:
        row = self.conn.execute(
            "SELECT status FROM jobs WHERE job = ? AND period = ?", (job, period)
        ).fetchone()
        return bool(row and row[0] == "ok")

    def record_job(
        self, job: str, period: str, status: str, started: float, summary: str | None
    ) -> None:
        self.conn.execute(
            "INSERT INTO jobs(job, period, status, started, finished, summary) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(job, period) DO UPDATE SET "
            "status = excluded.status, started = excluded.started, "
            "finished = excluded.finished, summary = excluded.summary",
            (job, period, status, started, time.time(), summary),
        )

    def job_ran_since(self, job: str, period: str) -> bool:
        """Whether ``job`` has a run recorded (any status) under ``period`` or a later one.

        Keys of one kind compare in time order. An hourly key ends in "Z" (a UTC hour); a
        local-hour key an earlier version recorded does not, and is not compared with it: at
        worst the hour after an upgrade is organized twice, never an hour skipped.
        """
        row = self.conn.execute(
            "SELECT 1 FROM jobs WHERE job = ? AND period >= ? "
            "AND (period GLOB '*Z') = (? GLOB '*Z') LIMIT 1",
            (job, period, period),
        ).fetchone()
        return row is not None

    def runs_started_after(self, limit: float) -> list[tuple[str, str, float]]:
        """(job, period, started) of the runs recorded as started after ``limit``, oldest first."""
        return [
            (str(job), str(period), float(started))
            for job, period, started in self.conn.execute(
                "SELECT job, period, started FROM jobs WHERE started > ? ORDER BY started",
                (limit,),
            )
        ]

    def forget_runs_started_after(self, limit: float) -> None:
        """Delete the runs recorded as started after ``limit`` (call inside a transaction)."""
        self.conn.execute("DELETE FROM jobs WHERE started > ?", (limit,))

    def last_job(self, job: str) -> tuple[str, str, float | None, str | None] | None:
        """(period, status, finished, summary) of the most recent run of ``job``."""
        return self.conn.execute(
            "SELECT period, status, finished, summary FROM jobs WHERE job = ? "
            "ORDER BY started DESC LIMIT 1",
            (job,),
        ).fetchone()

    # ---------------------------------------------------------------- marks

    def marks(self, kind: str) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT path FROM marks WHERE kind = ?", (kind,))}

    def mark_notes(self, kind: str) -> dict[str, str]:
        """The marks of ``kind`` that carry a note (who set them, why), by path."""
        rows = self.conn.execute(
            "SELECT path, note FROM marks WHERE kind = ? AND note IS NOT NULL", (kind,)
        )
        return {path: note for path, note in rows if note}

    def set_mark(self, path: str, kind: str, note: str | None = None) -> bool:
        """Add a mark; False when it was already there."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO marks(path, kind, created, note) VALUES (?, ?, ?, ?)",
            (path, kind, time.time(), note),
        )
        return cur.rowcount > 0

    def clear_mark(self, path: str, kind: str) -> bool:
        cur = self.conn.execute("DELETE FROM marks WHERE path = ? AND kind = ?", (path, kind))
        return cur.rowcount > 0


_NEEDS_WRITE = "memoryd needs to write there (check owner, mode and mount)"
_READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)


def describe_state_os_error(db: Path, exc: OSError) -> str | None:
    """The state database's one read-only line for a file beside it that cannot be written
    (``tiers.lock``, ``mover.lock`` on a read-only mount), or None for any other error.

    The commands that move files lock them first: on a read-only state folder the lock is
    what fails, and ``…/tiers.lock: Read-only file system`` should say what every other
    write to the state says (docs/moves.md).
    """
    if exc.errno not in _READ_ONLY_ERRNOS or not isinstance(exc.filename, str | bytes):
        return None
    failing = Path(os.fsdecode(exc.filename))
    if failing.parent != db.parent:
        return None
    cause = exc.strerror or str(exc)
    return f"state database {db}: {failing} is read-only ({cause}); {_NEEDS_WRITE}"


def describe_database_error(db: Path | None, exc: sqlite3.Error) -> str:
    """One line for a person: which file of the state database, and what is wrong with it.

    SQLite's own words name neither the file nor the fix ("attempt to write a
    readonly database" says nothing of which of ``state.db``, its ``-wal``, its
    ``-shm`` or the folder is read-only), so the read-only case looks at each.
    """
    if db is None:
        return f"state database (in memory): {exc}"
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith("SQLITE_READONLY") or "readonly" in text:
        culprit = _read_only_part(db)
        if culprit == db:
            where = f"state database {db} is read-only"
        elif culprit is not None:
            where = f"state database {db}: {culprit} is read-only"
        else:
            where = f"state database {db} cannot be written"
        return f"{where} ({text}); {_NEEDS_WRITE}"
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text:
        return damaged_message(db, text)
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return f"state database {db}: the disk is full ({text}); free some space in {db.parent}"
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in text:
        culprit = _read_only_part(db)
        if culprit is not None:
            return (
                f"state database {db} cannot be opened: {culprit} is read-only ({text}); "
                f"{_NEEDS_WRITE}"
            )
        return f"state database {db} cannot be opened ({text})"
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in text:
        return f"state database {db}: the disk reported an error ({text})"
    return f"state database {db}: {text}"


def damaged_message(db: Path, detail: str) -> str:
    """The one line for a damaged state database: the file, what is wrong, the way out."""
    return (
        f"state database {db} is damaged ({detail}); restore it from a backup, or move it "
        "aside and memoryd starts a new one (the hits are counted again from the transcripts)"
    )


def _read_only_part(db: Path) -> Path | None:
    """The first of the folder, the database, its -wal and its -shm that cannot be written."""
    for path in (db.parent, db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if path.exists() and not os.access(path, os.W_OK):
            return path
    return None


class HitTally(NamedTuple):
    """One file's hits as of ``now``: in all, in each window asked for, and the last one."""

    total: int | None  # None when not asked for (``hit_counts(..., total=False)``)
    last: float | None  # never after ``now`` (a hit within the skew allowance counts as now)
    within: tuple[int, ...]  # hits in the last d days (now - d days <= ts), per window asked


def hit_counts(
    conn: sqlite3.Connection,
    now: float,
    windows: Iterable[float] = (),
    agents: Iterable[str] | None = None,
    *,
    skew: float = CLOCK_SKEW,
    total: bool = True,
    seek_files_max: int | None = None,
) -> dict[str, HitTally]:
    """memory_path → :class:`HitTally`: the one hit-count query.

    ``memoryd hits``, the signals every policy, report and ``explain`` read, and the
    reports count with it, so they agree on every file. A hit dated up to ``skew`` seconds
    after ``now`` counts as a hit at ``now``; a later one does not count at all (it has not
    happened yet, as far as ``now`` knows), so a history can be read "as of" any past day.
    ``windows`` are in days. ``total=False`` leaves the all-time count out (``None``): the
    hits older than the longest window are then not read at all.

    One statement that seeks, per file, in the covering index ``hits_by_path_ts
    (memory_path, ts, agent)``: the files by a skip scan (the next path after the last),
    the last hit by one step back from the upper bound, and each count by a range that
    SQLite only steps through. The ranges are disjoint bands between the windows' lower
    bounds (a window's count is the sum of the bands inside it), so every hit is visited
    once, and one of an unwanted band not at all. A GROUP BY over the whole index computes
    every aggregate on every row instead: two to ten times slower at 200 k hits on a few
    hundred files. The seeks cost per file, though, and the two meet at about 5,000 files
    (docs/benchmarks.md): past ``seek_files_max`` files (default :data:`SEEK_FILES_MAX`,
    found by a skip scan that stops there) the one pass runs instead, with the same results.
    """
    days = tuple(windows)
    upper = now + skew
    lows = [now - d * _DAY for d in days]
    params: dict[str, object] = {"upper": upper}
    # Several statements, one snapshot: a scan committing between them (the first hit of
    # another agent) must not make the agent filter, left out by the first, wrong for the last.
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        agent_sql = _agent_clause(conn, agents, params)
        limit = SEEK_FILES_MAX if seek_files_max is None else seek_files_max
        # Without the index (dropped by a first scan's bulk load until its end) every seek
        # would be a scan of the whole table: one pass instead.
        if not _has_path_index(conn) or _more_files_than(conn, limit):
            return _counts_in_one_pass(conn, now, lows, total, agent_sql, params)
        return _counts_by_file(conn, now, upper, lows, total, agent_sql, params)
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


def hit_tally_of_spellings(
    conn: sqlite3.Connection,
    spellings: Sequence[str],
    now: float,
    windows: Iterable[float],
    agents: Iterable[str] | None,
    *,
    skew: float = CLOCK_SKEW,
    total: bool = True,
) -> HitTally | None:
    """The :class:`HitTally` of one file whose hits are recorded under several spellings
    (``memory/Projects.md`` and ``memory/projects.md`` on a Mac: :mod:`memoryd.pathmatch`):
    one hit per call (agent, call id), under :func:`hit_counts`'s rule (a hit up to ``skew``
    after ``now`` counts as now, a later one not at all). None when it has no hit up to
    then. Asked only for files with other spellings (rare), so a plain read suffices."""
    sql = (
        "SELECT agent, call_id, MIN(ts) FROM hits WHERE memory_path IN "
        f"({','.join('?' * len(spellings))}) AND ts <= ?"
    )
    args: list[object] = [*spellings, now + skew]
    if agents is not None:
        ids = sorted(set(agents))
        sql += f" AND agent IN ({','.join('?' * len(ids))})"
        args.extend(ids)
    sql += " GROUP BY agent, call_id"
    times = sorted(min(ts, now) for _a, _c, ts in conn.execute(sql, args))
    if not times:
        return None
    within = tuple(sum(1 for t in times if t >= now - d * _DAY) for d in windows)
    return HitTally(len(times) if total else None, times[-1], within)


# Past this many files, one aggregate pass over the index costs less than the seeks per file.
SEEK_FILES_MAX = 3000


def _has_path_index(conn: sqlite3.Connection) -> bool:
    """Whether ``hits_by_path_ts`` exists (see :data:`HIT_INDEXES`)."""
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'hits_by_path_ts'"
    return conn.execute(sql).fetchone() is not None


def _more_files_than(conn: sqlite3.Connection, limit: int) -> bool:
    """Whether ``hits`` names more than ``limit`` files: a skip scan that stops there."""
    return len(_distinct(conn, "memory_path", limit + 1)) > limit


def _distinct(conn: sqlite3.Connection, column: str, limit: int = -1) -> list[str]:
    """The distinct values of ``column`` (the first column of an index of ``hits``), in
    order, at most ``limit`` of them: a skip scan, one seek per value, not a pass over
    every row."""
    sql = (
        f"WITH RECURSIVE v(x) AS (SELECT MIN({column}) FROM hits UNION ALL "
        f"SELECT (SELECT MIN({column}) FROM hits WHERE {column} > v.x) "
        "FROM v WHERE v.x IS NOT NULL LIMIT ?) SELECT x FROM v WHERE x IS NOT NULL"
    )
    return [x for (x,) in conn.execute(sql, (limit,))]


def _counts_by_file(
    conn: sqlite3.Connection,
    now: float,
    upper: float,
    lows: list[float],
    total: bool,
    agent_sql: str,
    params: dict[str, object],
) -> dict[str, HitTally]:
    """The seek plan: per file, its last hit and a range count per band."""
    # Band edges, newest first; a window starting after the upper bound holds no hit at all.
    edges = sorted({lo for lo in lows if lo <= upper}, reverse=True)

    def of_file(path: str, condition: str) -> str:
        return f"FROM hits WHERE memory_path = {path} AND {condition}{agent_sql}"

    counts = []
    top = "ts <= :upper"  # a band ends where its newer neighbour starts
    for i, edge in enumerate(edges):
        params[f"e{i}"] = edge
        counts.append(f"(SELECT COUNT(*) {of_file('paths.path', f'ts >= :e{i} AND {top}')})")
        top = f"ts < :e{i}"
    if total:
        counts.append(f"(SELECT COUNT(*) {of_file('paths.path', top)})")

    # The skip scan carries each file's last hit along, so a file with none (of these
    # agents, up to now) is left out before any count runs: a recursive table is never
    # inlined, its last hit is looked up once. (The next path is, twice: a seek each.)
    def last_of(path: str) -> str:
        return f"(SELECT ts {of_file(path, 'ts <= :upper')} ORDER BY ts DESC LIMIT 1)"

    after = "(SELECT MIN(memory_path) FROM hits WHERE memory_path > paths.path)"
    sql = (
        "WITH RECURSIVE paths(path, last) AS ("
        f"SELECT first.path, {last_of('first.path')} "
        "FROM (SELECT MIN(memory_path) AS path FROM hits) AS first "
        f"UNION ALL SELECT {after}, {last_of(after)} FROM paths WHERE paths.path IS NOT NULL) "
        f"SELECT path, last{''.join(f', {c}' for c in counts)} FROM paths WHERE last IS NOT NULL"
    )
    # Window j is the sum of the bands from the newest down to its own lower edge.
    upto = [edges.index(lo) + 1 if lo <= upper else 0 for lo in lows]
    out: dict[str, HitTally] = {}
    for path, newest, *bands in conn.execute(sql, params):
        since = [0]
        for n in bands[: len(edges)]:
            since.append(since[-1] + n)
        out[path] = HitTally(
            since[-1] + bands[-1] if total else None,
            min(newest, now),
            tuple(since[k] for k in upto),
        )
    return out


def _counts_in_one_pass(
    conn: sqlite3.Connection,
    now: float,
    lows: list[float],
    total: bool,
    agent_sql: str,
    params: dict[str, object],
) -> dict[str, HitTally]:
    """The one-pass plan: every aggregate on every index entry, grouped in index order."""
    params.update({f"w{j}": lo for j, lo in enumerate(lows)})
    within = "".join(f", SUM(ts >= :w{j})" for j in range(len(lows)))
    sql = (
        f"SELECT memory_path, COUNT(*), MAX(ts){within} FROM hits "
        f"WHERE ts <= :upper{agent_sql} GROUP BY memory_path"
    )
    return {
        path: HitTally(everything if total else None, min(last, now), tuple(since))
        for path, everything, last, *since in conn.execute(sql, params)
    }


def _agent_clause(
    conn: sqlite3.Connection, agents: Iterable[str] | None, params: dict[str, object]
) -> str:
    """`` AND +agent IN (:a0, …)`` for the per-file counts, its values put in ``params``;
    ``""`` when no hit is of another agent (then the filter would only cost time).

    The agents present come from a skip scan of the unique key ``(agent, call_id,
    memory_path)``: one seek per agent. The unary ``+`` keeps SQLite off that index in the
    counts (without statistics the planner takes ``agent IN`` for a selective search):
    the covering index ``hits_by_path_ts (memory_path, ts, agent)`` answers them instead.
    """
    if agents is None:
        return ""
    ids = sorted(set(agents))
    if set(_distinct(conn, "agent")) <= set(ids):
        return ""
    names = []
    for i, agent in enumerate(ids):
        params[f"a{i}"] = agent
        names.append(f":a{i}")
    return f" AND +agent IN ({','.join(names)})"


def _split_sql(script: str) -> list[str]:
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
