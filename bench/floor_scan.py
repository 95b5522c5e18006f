#!/usr/bin/env python3
"""The least a cold scan that keeps memoryd's rows must do in CPython: a floor, not a scanner.

It reads every transcript, finds the lines holding ``memory_`` and decodes each with
orjson (the exact check every line must pass), then writes rows given to it ready-made
into the state database's own tables (schema and indexes copied from a real scan's
database): one transaction, the secondary indexes built after the load, one checkpoint.
What it leaves out is everything a scanner decides: which lines are calls and answers,
matching them, paths, times, offsets and checkpoints. So ``memoryd scan`` minus this
is what memoryd's deciding costs, and this divided by the prototype is the lowest ratio
any exact scanner writing the same rows could reach on this machine (``bench_scan.py``
times it in the same interleaved run).

    floor_scan.py --plan PLAN --db PATH

``PLAN`` is a ``marshal`` file written by :func:`write_plan`: the files to read, the
``CREATE`` statements and the rows of ``hits`` and ``calls``.
"""

from __future__ import annotations

import argparse
import gc
import marshal
import sqlite3
import sys

NEEDLE = b"memory_"
HIT_COLUMNS = (
    "agent, call_id, memory_path, kind, ts, query, score, start_line, end_line, session, source_id"
)


def write_plan(plan: str, db: str, files: list[str]) -> None:
    """The floor's input, from the database of a real scan of ``files``."""
    conn = sqlite3.connect(db)
    try:
        tables = [
            sql
            for (sql,) in conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN ('hits', 'calls')"
            )
        ]
        indexes = [
            sql
            for (sql,) in conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
                "AND tbl_name IN ('hits', 'calls')"
            )
        ]
        hits = conn.execute(f"SELECT {HIT_COLUMNS} FROM hits ORDER BY id").fetchall()
        calls = conn.execute("SELECT * FROM calls").fetchall()
    finally:
        conn.close()
    with open(plan, "wb") as fh:
        marshal.dump((files, tables, indexes, hits, calls), fh)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plan", required=True)
    ap.add_argument("--db", required=True)
    args = ap.parse_args()
    gc.disable()  # as memoryd's scan does: a pass over the heap frees nothing here
    import orjson  # as memoryd's scan does: the one decoder exact enough

    with open(args.plan, "rb") as fh:
        files, tables, indexes, hits, calls = marshal.loads(fh.read())
    loads, decoded = orjson.loads, 0
    for path in files:
        with open(path, "rb") as fh:
            data = fh.read()
        find, rfind, at = data.find, data.rfind, 0
        while (hit := find(NEEDLE, at)) >= 0:
            begin = rfind(b"\n", 0, hit) + 1
            end = find(b"\n", hit)
            end = len(data) if end < 0 else end
            try:
                loads(data[begin:end])
                decoded += 1
            except orjson.JSONDecodeError:
                pass
            at = end + 1
    conn = sqlite3.connect(args.db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("BEGIN")
    for sql in tables:
        conn.execute(sql)
    width = len(HIT_COLUMNS.split(","))
    conn.executemany(
        f"INSERT OR IGNORE INTO hits ({HIT_COLUMNS}) VALUES ({','.join('?' * width)})", hits
    )
    if calls:
        conn.executemany(
            f"INSERT OR IGNORE INTO calls VALUES ({','.join('?' * len(calls[0]))})", calls
        )
    conn.execute("COMMIT")
    conn.execute("BEGIN")
    for sql in indexes:
        conn.execute(sql)
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    conn.close()
    print(f"{decoded} lines decoded, {len(hits)} hits and {len(calls)} calls written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
