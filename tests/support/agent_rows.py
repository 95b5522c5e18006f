"""An OpenClaw agent store (``openclaw-agent.sqlite``) of one schema, written row by row as
OpenClaw writes it: its tables at schemas 13, 22 and 24, events compressed by OpenClaw's rule,
the archive tables its delete and cold storage fill.

Hand-driven, for the reader's own tests (``test_store_reader``) and those that put the store
under upkeep, a daemon or reused ids (``test_store_upkeep``, ``test_store_daemon``,
``test_reused_ids``); :mod:`support.openclaw_store` writes whole installs' stores from a corpus.
"""

from __future__ import annotations

import sqlite3

from support.scanner_install import Install

try:
    from compression import zstd  # type: ignore[import-not-found]
except ImportError:
    from backports import zstd  # type: ignore[no-redef]


EVENTS_24 = (
    "CREATE TABLE transcript_events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "event_json TEXT, created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER, "
    "navigation_json TEXT, PRIMARY KEY (session_id, seq))"
)
EVENTS_22 = (
    "CREATE TABLE transcript_events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "event_json TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq))"
)
WINDOWS = (
    "CREATE TABLE session_windows(session_id TEXT PRIMARY KEY, session_key TEXT NOT NULL, "
    "previous_session_id TEXT, reason TEXT, created_at INTEGER)"
)
NODES = (
    "CREATE TABLE session_nodes(session_key TEXT PRIMARY KEY, current_session_id TEXT, "
    "entry_json TEXT)"
)
# Before schema 14 (shapes not verified by the formats doc: these are one plausible reading).
SESSIONS_13 = (
    "CREATE TABLE sessions(session_key TEXT PRIMARY KEY, session_id TEXT, entry_json TEXT)"
)
ENTRIES_13 = (
    "CREATE TABLE session_entries(session_id TEXT NOT NULL, seq INTEGER NOT NULL, "
    "entry_json TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq))"
)


def frame(data: bytes) -> bytes:
    """A zstd frame as OpenClaw writes it: level 1, with a checksum."""
    opts = {
        zstd.CompressionParameter.compression_level: 1,
        zstd.CompressionParameter.checksum_flag: 1,
    }
    return zstd.compress(data, options=opts)


def openclaw_compresses(event: bytes) -> bool:
    """OpenClaw's rule: 1 KiB – 4 MiB, saving at least 64 bytes and 10 %."""
    if not 1024 <= len(event) <= 4 << 20:
        return False
    saved = len(event) - len(frame(event))
    return saved >= 64 and saved >= len(event) / 10


class Store:
    """An OpenClaw agent store of one schema, written as OpenClaw would."""

    def __init__(self, inst: Install, schema: int = 24, journal: str = "WAL") -> None:
        self.schema = schema
        self.path = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path, isolation_level=None)
        self.conn.execute(f"PRAGMA journal_mode = {journal}")
        self.conn.execute(f"PRAGMA user_version = {schema}")
        if schema >= 23:
            ddl = [EVENTS_24, WINDOWS, NODES]
        elif schema >= 14:
            ddl = [EVENTS_22, WINDOWS, NODES]
        else:
            ddl = [SESSIONS_13, ENTRIES_13]
        for stmt in ddl:
            self.conn.execute(stmt)

    def add_session(self, sid: str, key: str = "agent:main:main", previous: str | None = None):
        if self.schema >= 14:
            self.conn.execute(
                "INSERT INTO session_windows VALUES (?, ?, ?, 'initial', 0)", (sid, key, previous)
            )
            self.conn.execute(
                "INSERT OR REPLACE INTO session_nodes VALUES (?, ?, '{}')", (key, sid)
            )
        else:
            self.conn.execute("INSERT OR REPLACE INTO sessions VALUES (?, ?, '{}')", (key, sid))

    def append(self, sid: str, lines: list[bytes], compress: str = "openclaw") -> None:
        """Append events (the header is never compressed); ``compress``: openclaw, all, none."""
        top = self.conn.execute(
            f"SELECT MAX(seq) FROM {self.table} WHERE session_id = ?", (sid,)
        ).fetchone()[0]
        seq = -1 if top is None else top
        for line in lines:
            seq += 1
            event = line.rstrip(b"\n")
            packed = (
                self.schema >= 23
                and seq > 0
                and (compress == "all" or (compress == "openclaw" and openclaw_compresses(event)))
            )
            self.insert(sid, seq, event, packed)

    @property
    def table(self) -> str:
        return "transcript_events" if self.schema >= 14 else "session_entries"

    def insert(self, sid: str, seq: int, event: bytes, packed: bool) -> None:
        if packed:
            self.raw(sid, seq, None, frame(event), len(event))
        elif self.schema >= 23:
            self.raw(sid, seq, event.decode(), None, None)
        else:
            self.conn.execute(
                f"INSERT INTO {self.table} VALUES (?, ?, ?, 0)", (sid, seq, event.decode())
            )

    def raw(self, sid: str, seq: int, text: object, blob: object, n: object) -> None:
        self.conn.execute(
            "INSERT INTO transcript_events(session_id, seq, event_json, created_at, event_zstd, "
            "event_utf8_bytes) VALUES (?, ?, ?, 0, ?, ?)",
            (sid, seq, text, blob, n),
        )
ARCHIVES = (
    "CREATE TABLE session_transcript_archives(archive_name TEXT NOT NULL UNIQUE, "
    "session_id TEXT NOT NULL, session_key TEXT, reason TEXT NOT NULL, encoding TEXT NOT NULL, "
    "archive_blob BLOB NOT NULL, created_at INTEGER NOT NULL)"
)
COLD = (
    "CREATE TABLE session_transcript_cold_archives(archive_key TEXT PRIMARY KEY, "
    "session_id TEXT, archive_blob BLOB, created_at INTEGER)"
)

STAMP = "2026-09-20T08-00-00.000Z"  # a deleted or reset copy's time, as OpenClaw stamps it


def archive_store(inst: Install) -> Store:
    store = Store(inst)
    store.conn.execute(ARCHIVES)
    store.conn.execute(COLD)
    return store


def delete_session(store: Store, sid: str) -> bytes:
    """What OpenClaw's delete does: the rows out, the JSONL text into an archive row."""
    rows = store.conn.execute(
        "SELECT event_json, event_zstd FROM transcript_events WHERE session_id = ? ORDER BY seq",
        (sid,),
    ).fetchall()
    text = b"".join((t.encode() if t is not None else zstd.decompress(z)) + b"\n" for t, z in rows)
    store.conn.execute("DELETE FROM transcript_events WHERE session_id = ?", (sid,))
    return text


def merge_counts(*counts: dict[str, int]) -> dict[str, int]:
    """Hits per file of these counts taken together (as :func:`support.scanner_install.expected`
    adds conversations)."""
    out: dict[str, int] = {}
    for c in counts:
        for k, v in c.items():
            out[k] = out.get(k, 0) + v
    return out
