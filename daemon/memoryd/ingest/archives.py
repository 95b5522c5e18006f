"""Events that left the live transcript store: archives of deleted, reset and cold sessions.

OpenClaw removes a session's rows from ``transcript_events`` when it is deleted, evicted by
the disk budget or moved to cold storage; if memoryd was not running then, those events are
only in an archive: the tables ``session_transcript_archives`` and
``session_transcript_cold_archives``, ``cold/<sha256>.jsonl.zst`` files of JSONL records, and
derived ``sessions/<sessionId>.jsonl.deleted.<ts>.zst`` files (docs/openclaw-formats.md §2b).

Each archive is read whole, once, and remembered by name with its size and a digest
(``archives_read``); reading one whose events memoryd already saw is harmless (hits are unique
per call). This module is the pure part: a table's columns, the lines of a stream, a record.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

import orjson

from . import sqlite_source

ZSTD_MAGIC = sqlite_source.ZSTD_MAGIC

ARCHIVES_TABLE = "session_transcript_archives"
COLD_TABLE = "session_transcript_cold_archives"
# The column naming each archive, by preference (schema 23's cold table calls it archive_name).
NAME_COLUMNS = {ARCHIVES_TABLE: ("archive_name",), COLD_TABLE: ("archive_key", "archive_name")}
# The columns each archive table is known with (read or not): a name column and the blob are
# required to read it; any other column is reported once, at debug level (nothing to act on).
# (Each table's last columns are schema 23's, 2026.9.6: generations and the publication of
# the derived .zst file; where a cold archive is kept and what it holds.)
# fmt: off
KNOWN_COLUMNS = {
    ARCHIVES_TABLE: (
        "archive_name", "archive_blob", "session_id", "session_key", "reason", "encoding",
        "created_at", "generation", "archive_sha256", "published_at", "publish_attempts",
        "last_publish_attempt_at", "last_publish_error",
    ),
    COLD_TABLE: (
        "archive_key", "archive_name", "archive_blob", "session_id", "created_at", "generation",
        "archive_sha256", "event_count", "raw_bytes", "archive_bytes", "last_seq", "archived_at",
        "storage",
    ),
}
# fmt: on
_IGNORED_KINDS = frozenset({"identity", "active", "index", "fts"})


class TableShape(NamedTuple):
    """An archive table as the store has it: what we can read and what we do not know."""

    table: str
    readable: bool  # has a name column and its blob column
    columns: frozenset[str]  # of KNOWN_COLUMNS, the ones present
    unknown: tuple[str, ...]  # columns we do not recognise (reported, not read)
    name: str = ""  # the column naming each archive ("" when none)


def table_shape(table: str, columns: tuple[str, ...]) -> TableShape:
    known = KNOWN_COLUMNS[table]
    have = {c.lower() for c in columns}
    name = next((c for c in NAME_COLUMNS[table] if c in have), "")
    return TableShape(
        table,
        bool(name) and "archive_blob" in have,
        frozenset(c for c in known if c in have),
        tuple(c for c in columns if c.lower() not in known),
        name,
    )


def archive_shapes(tables: dict[str, tuple[str, ...]]) -> list[TableShape]:
    return [table_shape(t, tables[t]) for t in KNOWN_COLUMNS if t in tables]


def list_archives(conn: Any, shape: TableShape) -> list[tuple[str, int, str]]:
    """(name, blob size, digest) of every archive in a table, without reading a blob (a row
    without one, a cold archive kept as a file, is left to the file reader)."""
    created = next((c for c in ("created_at", "archived_at") if c in shape.columns), "NULL")
    q = sqlite_source.quote
    rows = conn.execute(
        f"SELECT {q(shape.name)}, length(archive_blob), {created} FROM {q(shape.table)} "
        "WHERE archive_blob IS NOT NULL"
    ).fetchall()
    return [(str(n), int(size or 0), repr(c)) for n, size, c in rows if n is not None]


class Archive(NamedTuple):
    """One archive row's blob and what its columns say about it."""

    blob: bytes
    session_id: str | None
    session_key: str | None
    encoding: str | None


def fetch_archive(conn: Any, shape: TableShape, name: str) -> Archive | None:
    q = sqlite_source.quote
    cols = [
        c if c in shape.columns else "NULL"
        for c in ("archive_blob", "session_id", "session_key", "encoding")
    ]
    row = conn.execute(
        f"SELECT {', '.join(cols)} FROM {q(shape.table)} WHERE {q(shape.name)} = ? LIMIT 1",
        (name,),
    ).fetchone()
    if row is None:
        return None
    blob = row[0]
    if isinstance(blob, str):
        blob = blob.encode("utf-8", "surrogateescape")
    if not isinstance(blob, bytes):
        blob = b""
    session_id, session_key, encoding = (v if isinstance(v, str) else None for v in row[1:4])
    return Archive(blob, session_id, session_key, encoding)


def open_blob(blob: bytes, encoding: str | None) -> IO[bytes]:
    """A readable stream of an archive's text: decompressed when it is a zstd frame (by
    ``encoding``, else by the frame's magic when the column is missing or unknown)."""
    raw = io.BytesIO(blob)
    if encoding == "zstd" or (encoding != "identity" and blob.startswith(ZSTD_MAGIC)):
        return sqlite_source.zstd_module().ZstdFile(raw, "rb")
    return raw


def iter_lines(stream: IO[bytes], max_line: int) -> Iterator[bytes | None]:
    """The stream's lines without their ``\\n``; None for a line over ``max_line`` (skipped).
    A corrupt frame raises (the zstd binding's error, or EOFError)."""
    while True:
        line = stream.readline(max_line + 1)
        if not line:
            return
        if len(line) > max_line and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # skip the rest of the oversized line
                line = stream.readline(1 << 20)
            yield None
            continue
        yield line.rstrip(b"\r\n")


class Record(NamedTuple):
    """What one line of an archive says: a cold record or a plain transcript line."""

    kind: str  # "header", "event", "ignored" or "line" (a JSONL line, not a record)
    line: bytes  # the event's JSON text (for "event" and "line")
    session_id: str | None = None
    session_key: str | None = None


def read_record(line: bytes) -> Record:
    """Cold records carry ``kind``; any other line is a transcript line as it is."""
    if b'"kind"' not in line:
        return Record("line", line)
    try:
        doc = orjson.loads(line)
    except orjson.JSONDecodeError:
        return Record("line", line)
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str) or "type" in doc:
        return Record("line", line)
    kind = doc["kind"]
    if kind == "header":
        sid = doc.get("session_id", doc.get("sessionId"))
        key = doc.get("session_key", doc.get("sessionKey"))
        sid, key = (v if isinstance(v, str) else None for v in (sid, key))
        return Record("header", b"", sid, key)
    if kind == "event":
        row = doc.get("row")
        text = row.get("event_json") if isinstance(row, dict) else None
        if isinstance(text, str):
            return Record("event", text.encode("utf-8", "surrogatepass"))
        return Record("event", b"")  # an event row without its text: malformed
    if kind in _IGNORED_KINDS:
        return Record("ignored", b"")
    return Record("ignored", b"", None, kind)  # a kind we do not know (reported by the caller)


def is_zstd_file(head: bytes) -> bool:
    return head.startswith(ZSTD_MAGIC)
