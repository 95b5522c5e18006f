"""The daemon and the transcript store: input it cannot read never stops it."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from support import transcripts as tx
from support.agent_rows import EVENTS_24, Store, delete_session, frame
from support.daemon_harness import (
    DaemonProcess,
    NotifySocket,
    append,
    hit_count,
    hit_lines,
    make_install,
    process_state,
    run_cli,
    start,
    wait_until,
)
from support.scanner_install import conversation, expected

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


def _state_rows(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.timeout(300)
def test_a_clock_set_forward_a_week_under_the_daemon_forgets_no_gone_session_early(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """A store session deleted while the daemon runs is set aside; the daemon is stopped and
    the wall clock moves 8 days forward meanwhile (a clock set by hand, a bad NTP answer): the
    daemon sees the clock was set, and its next read of the store keeps the session within
    its grace period (it was forgotten there, the grace period measured across the setting)."""
    threshold = 3.0
    inst = make_install(
        tmp_path, f"[daemon]\nrescan_seconds = 3600.0\nclock_jump_seconds = {threshold}\n"
    )
    offset = tmp_path / "clock-offset"
    offset.write_text("0")
    store = Store(inst)  # (the harness's install has the same sessions folder)
    for sid in ("k", "d"):
        store.add_session(sid)
        store.append(sid, conversation(2, sid))
    d = start(inst, daemons, notify, MEMORYD_CLOCK_OFFSET_FILE=str(offset))
    d.wait_ready()
    cursors = "SELECT session_id FROM transcript_db_cursors ORDER BY session_id"
    wait_until(lambda: _state_rows(inst.db, cursors) == [("d",), ("k",)])
    delete_session(store, "d")
    wait_until(lambda: _state_rows(inst.db, "SELECT session_id FROM transcript_db_gone"))
    assert d.proc is not None
    d.send(signal.SIGSTOP)
    wait_until(lambda: process_state(d.proc.pid) == "T")
    stopped_at = time.monotonic()
    offset.write_text(str(8 * 86400))
    time.sleep(max(0.0, threshold + 2 - (time.monotonic() - stopped_at)))  # (a lower bound)
    d.send(signal.SIGCONT)
    gap = d.wait_event("daemon.gap")[0]
    assert gap["kind"] == "clock set forward"
    store.append("k", conversation(3, "k")[9:])  # the store changes: read
    wait_until(lambda: hit_count(inst.db) == sum(expected(2, 3).values()))
    assert _state_rows(inst.db, "SELECT session_id FROM transcript_db_gone") == [("d",)]
    assert d.events("ingest.store_sessions_forgotten") == []
    assert d.stop() == 0
    store.conn.close()


@pytest.mark.timeout(300)
def test_a_clock_set_between_the_daemon_check_and_its_scan_forgets_no_gone_session(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """The daemon stops right after it read the clocks for a scan, before the scan starts (a
    stop, a laptop lid shut at that instant), and the wall clock is set 8 days forward
    meanwhile: that scan forgets no session gone from the store (it runs on the time its
    check was made at), and the next one finds the step and moves the grace period with it."""
    threshold = 3.0
    inst = make_install(
        tmp_path, f"[daemon]\nrescan_seconds = 3600.0\nclock_jump_seconds = {threshold}\n"
    )
    offset, fault = tmp_path / "clock-offset", tmp_path / "fault"
    offset.write_text("0")
    fault.write_text("")
    store = Store(inst)
    for sid in ("k", "d"):
        store.add_session(sid)
        store.append(sid, conversation(2, sid))
    d = start(
        inst, daemons, notify, MEMORYD_CLOCK_OFFSET_FILE=str(offset), MEMORYD_FAULT=f"@{fault}"
    )
    d.wait_ready()
    cursors = "SELECT session_id FROM transcript_db_cursors ORDER BY session_id"
    wait_until(lambda: _state_rows(inst.db, cursors) == [("d",), ("k",)])
    delete_session(store, "d")
    wait_until(lambda: _state_rows(inst.db, "SELECT session_id FROM transcript_db_gone"))
    assert d.proc is not None
    fault.write_text("ingest.clocks_read:*:stop")
    store.append("k", conversation(3, "k")[9:])  # the store changes: a scan is due
    wait_until(lambda: process_state(d.proc.pid) == "T")
    fault.write_text("")
    stopped_at = time.monotonic()
    offset.write_text(str(8 * 86400))
    time.sleep(max(0.0, threshold + 2 - (time.monotonic() - stopped_at)))  # (a lower bound)
    d.send(signal.SIGCONT)
    wait_until(lambda: hit_count(inst.db) == sum(expected(2, 3).values()))
    assert _state_rows(inst.db, "SELECT session_id FROM transcript_db_gone") == [("d",)]
    store.append("k", conversation(4, "k")[len(conversation(3, "k")) :])  # the next scan
    wait_until(lambda: hit_count(inst.db) == sum(expected(2, 4).values()))
    assert _state_rows(inst.db, "SELECT session_id FROM transcript_db_gone") == [("d",)]
    assert d.events("ingest.store_sessions_forgotten") == []
    assert d.stop() == 0
    store.conn.close()
