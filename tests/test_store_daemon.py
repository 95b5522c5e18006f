"""The daemon and the transcript store: input it cannot read never stops it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import transcripts as tx
from daemon_harness import (
    DaemonProcess,
    append,
    hit_count,
    hit_lines,
    make_install,
    run_cli,
    start,
    wait_until,
)
from test_store_reader import EVENTS_24, frame

pytestmark = pytest.mark.timeout(120)


def test_the_daemon_lives_through_a_store_it_cannot_read_and_reads_it_once_it_can(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path, '[log]\nlevel = "debug"\n')
    db = inst.sessions.parent / "agent" / "openclaw-agent.sqlite"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE journal(k TEXT, v TEXT)")  # a layout memoryd does not know
    append(inst.transcript("s1"), hit_lines(["memory/n001.md"]))
    d = start(inst, daemons)
    d.wait_ready()
    failed = d.wait_event("ingest.source_failed")
    assert failed[0]["source"] == str(db)
    assert failed[0]["reason"] == "unsupported layout (no transcript_events table)"
    assert hit_count(inst.db) == 1
    status = json.loads(run_cli(inst, "status", "--json").stdout)
    assert [f["source"] for f in status["failed_sources"]] == [str(db)]

    # OpenClaw upgrades the store and writes to it: compressed rows, one of them corrupt.
    conn.execute(EVENTS_24)
    rows = [tx.header("sx")] + [
        hit_lines([f"memory/n{i:03d}.md"], call_id=f"st{i}") for i in range(2, 6)
    ]
    events = [ln for chunk in rows for ln in chunk.splitlines()]
    conn.execute("BEGIN")
    for seq, event in enumerate(events):
        conn.execute(
            "INSERT INTO transcript_events(session_id, seq, event_json, created_at, event_zstd, "
            "event_utf8_bytes) VALUES ('sx', ?, NULL, 0, ?, ?)"
            if seq
            else "INSERT INTO transcript_events(session_id, seq, event_json, created_at, "
            "event_zstd, event_utf8_bytes) VALUES ('sx', ?, ?, 0, NULL, ?)",
            (seq, frame(event), len(event)) if seq else (seq, event.decode(), None),
        )
    conn.execute(
        "INSERT INTO transcript_events(session_id, seq, event_json, created_at, event_zstd, "
        "event_utf8_bytes) VALUES ('sx', 99, NULL, 0, ?, 10)",
        (b"\x28\xb5\x2f\xfd not a frame",),
    )
    conn.execute("COMMIT")
    wait_until(lambda: hit_count(inst.db) == 5, timeout=20)
    d.wait_event("ingest.malformed_event")
    d.check_alive()
    status = json.loads(run_cli(inst, "status", "--json").stdout)
    assert status["failed_sources"] == [] and status["malformed_lines"] == 1
    conn.close()
