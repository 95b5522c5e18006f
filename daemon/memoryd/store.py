"""The state database: one SQLite file, the only place memoryd keeps state.

This module is the connection (open, migrate, check the files are still the ones opened,
transactions, bulk-load settings) and the small tables several modules share (meta, counters,
jobs, marks); modules that own a table keep their statements next to their logic.

WAL mode lets every command read while the daemon writes; ``busy_timeout`` makes concurrent
writers wait. Ingest commits at ``synchronous=NORMAL``: a power cut may roll back the last
batch, hits and offset together, and the next scan re-reads it. The move journal needs its
intent on disk before a file is renamed, so :meth:`Store.durable` switches to ``FULL``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from . import faults, kept_strength
from .hit_counts import CLOCK_SKEW, HitTally, hit_counts
from .store_errors import (
    StoreDamaged,
    StoreError,
    StoreGone,
    describe_database_error,
    is_busy,
    is_damage,
)
from .store_schema import HIT_INDEXES, MIGRATIONS, SCHEMA_VERSION, column_there, split_sql

# Page cache of a bulk load (KiB): the dirty pages of one of its transactions fit (SQLite's
# default is 2 MiB). Memory the scan gives back when it ends.
BULK_CACHE_KIB = 64 << 10

# Set while a first scan loads in bulk (the hit indexes dropped), cleared once they are built.
BULK_UNFINISHED_META = "ingest.bulk_unfinished"
# The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


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

    Several commands started together on a new install all try; SQLite answers a switch that
    meets another one under way with SQLITE_BUSY at once (``busy_timeout`` does not cover it),
    so it is tried again here, for as long as a busy database is waited for elsewhere."""
    deadline = time.monotonic() + BUSY_WAIT_S
    pause = 0.002
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        faults.point("store.wal_busy")  # (tests: the other opener goes on here)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def state_db_exists(path: Path) -> bool:
    """Whether there is a state database at ``path`` to read: False when there is none yet
    (no file; a link to a file not made yet, which the first scan creates; an empty file
    with no write-ahead log beside it, which holds no table to read and which the first
    scan makes a database). A link that loops is a StoreError saying so; a folder on the
    way that cannot be searched raises its OSError (either would read as "not scanned yet"
    otherwise)."""
    try:
        if os.stat(path).st_size == 0:
            # (A new database's first pages may still be only in its WAL: then it is one.)
            wal = Path(f"{path}-wal")
            return wal.is_file() and wal.stat().st_size > 0
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(
                f"state database {path} cannot be opened (a symbolic link that loops)"
            ) from None
        raise
    return True


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
        that allows it (a plugin hook's command has well under a second; a fill takes tens)."""
        p = Path(path)
        if readonly:
            if not state_db_exists(p):
                raise StoreError(f"state database {p} does not exist yet (run `memoryd scan`)")
            uri = f"file:{p}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=BUSY_WAIT_S)
        else:
            # a folder memoryd makes is its own (OpenClaw makes its folders 0700 too): the
            # store holds what the agent was asked and the sections retire took
            p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
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
                store._migrate()
                # A first scan killed mid-way goes on without them (see Ledger.begin_bulk).
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
        """Bring the schema up to date: all steps in one ``BEGIN IMMEDIATE`` transaction, the
        version read again inside it (two commands started together on a new install)."""
        if self._schema_version() == SCHEMA_VERSION:
            return
        with self.transaction():
            version = self._schema_version()
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"state database {self.path} has schema {version}, newer than this memoryd "
                    f"({SCHEMA_VERSION}); upgrade memoryd"
                )
            for target in sorted(t for t in MIGRATIONS if t > version):
                for statement in split_sql(MIGRATIONS[target]):
                    if not column_there(self.conn, statement):
                        self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {target}")

    def _schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def check_files(self) -> None:
        """Raise :class:`StoreGone` if the database or its -wal is no longer where it was.

        SQLite keeps writing into an unlinked inode, so every later hit would be lost while the
        offsets say all was read: the daemon checks at every rescan and stops. The -wal is
        remembered from the first check that finds it.
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

        SQLite notices a file truncated or overwritten only when it reads the pages that are
        gone, and a checkpoint would write the recent pages into what is left: the daemon
        checks before every scan. A file still empty (its first page in the WAL) passes.

        The descriptor is kept open until :meth:`close`: closing any descriptor of the file
        drops this process's POSIX locks on it (SQLite's too), and another process could then
        take itself for the last connection and delete the WAL under us.
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
        """``PRAGMA quick_check``: raise :class:`StoreDamaged` naming the first problem found
        (every page read once, without ``integrity_check``'s index checks: docs/service.md)."""
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
        rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        have = {row[0] for row in rows}
        missing = [sql for name, sql in HIT_INDEXES.items() if name not in have]
        if missing:
            with self.transaction():
                for sql in missing:
                    self.conn.execute(sql)

    def start_bulk_load(self) -> None:
        """Write settings for a first scan of a backlog, until :meth:`end_bulk_load`.

        A cache large enough for a big transaction's dirty pages (else SQLite spills them to
        the WAL and writes them again at commit), and no automatic checkpoints (each rewrites
        the unique key's hot pages). Begun again before its end (a failed bulk scan retried),
        the settings kept are still those from before the first, never the bulk ones.
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
        """The usual settings back, and one checkpoint (``TRUNCATE``: an empty WAL behind; busy
        readers make it partial, and the next automatic one finishes it)."""
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
            faults.point("store.commit")  # (tests: a disk that fills up at the commit)
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
        self, now: float, windows: Iterable[float] = (), agents: Iterable[str] | None = None, *,
        skew: float = CLOCK_SKEW, total: bool = True,
    ) -> dict[str, HitTally]:  # fmt: skip
        """memory_path → its hits as of ``now`` (:func:`memoryd.hit_counts.hit_counts`)."""
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
        Keys of one kind compare in time order; an hourly key ends in "Z" (a UTC hour), and a
        local-hour key of an older memoryd is not compared with it."""
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
