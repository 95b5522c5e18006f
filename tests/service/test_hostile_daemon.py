"""The daemon under hostile conditions (issue 30): an ingest worker that stops making
progress is noticed and ``status`` says so; an I/O error in the check before a scan is a
failed scan, retried, never a dead worker. A real daemon, faults at named points."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from support import transcripts as tx
from support.daemon_harness import (
    DaemonProcess,
    append,
    hit_lines,
    make_install,
    real_hits,
    run_cli,
    wait_until,
)

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(240)]


def _daemon(tmp_path: Path, daemons: list[DaemonProcess], extra: str = "") -> tuple:
    fault = tmp_path / "fault.spec"
    fault.write_text("", encoding="utf-8")
    inst = make_install(tmp_path, f"[daemon]\nrescan_seconds = 3600.0\n{extra}", memory_files=3)
    d = DaemonProcess(inst, env_extra={"MEMORYD_FAULT": f"@{fault}"}).start()
    daemons.append(d)
    d.wait_ready(timeout=90)
    t = inst.transcript("s1")
    append(t, tx.header("s1", ts=time.time()) + hit_lines(["memory/n000.md"]))
    wait_until(lambda: real_hits(inst.db) == 1, timeout=60)
    return inst, d, fault, t


def test_an_ingest_worker_stuck_while_transcripts_wait_is_reported_and_status_says_so(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst, d, fault, t = _daemon(tmp_path, daemons, "stall_seconds = 1.0\n")
    fault.write_text("scan.planned:*:hang", encoding="utf-8")  # a read that never returns
    append(t, hit_lines(["memory/n001.md"]))
    second = inst.transcript("s2")
    append(second, tx.header("s2", ts=time.time()))

    def stalled() -> list | None:  # more is written while the worker hangs: it waits
        append(second, hit_lines(["memory/n002.md"]))
        d.check_alive()
        return d.events("ingest.worker_stalled") or None

    [event] = wait_until(stalled, timeout=60, step=0.5)
    written = 1 + len(second.read_bytes().splitlines()) // 2  # (n001, and each n002 pair)
    assert event["level"] == "critical" and event["waiting"] >= 1 and "scan" in event["doing"]
    out = run_cli(inst, "status", "--json")
    assert out.returncode == 1, out.stdout
    noted = json.loads(out.stdout)["daemon"]["ingest_stalled"]
    assert noted is not None and noted["waiting"] >= 1
    text = run_cli(inst, "status")
    assert "stalled:" in text.stdout and "no hits are counted" in text.stdout

    fault.write_text("", encoding="utf-8")  # the read returns: it moves again
    d.wait_event("ingest.worker_moving", timeout=60)
    wait_until(lambda: real_hits(inst.db) == 1 + written, timeout=60)
    assert run_cli(inst, "status", "--json").returncode == 0
    assert d.stop(timeout=60) == 0


def test_an_io_error_in_the_check_before_a_scan_is_retried_never_a_dead_worker(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst, d, fault, t = _daemon(tmp_path, daemons)
    fault.write_text("store.check_header:*:eio", encoding="utf-8")
    append(t, hit_lines(["memory/n001.md"]))
    [failed] = d.wait_event("ingest.scan_failed", timeout=60)
    assert "I/O error" in failed["error"]
    assert not d.events("ingest.worker_died")
    out = run_cli(inst, "status", "--json")
    assert (
        out.returncode == 1
        and "I/O error" in json.loads(out.stdout)["daemon"]["scan_failing"]["reason"]
    )

    fault.write_text("", encoding="utf-8")
    d.wait_event("ingest.scan_recovered", timeout=90)
    wait_until(lambda: real_hits(inst.db) == 2, timeout=60)
    d.check_alive()
    assert d.stop(timeout=60) == 0


def test_a_fifo_in_place_of_an_archived_note_a_search_asks_for_never_stalls_the_daemon(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    import math
    import os

    inst = make_install(tmp_path, "[daemon]\nrescan_seconds = 3600.0\n", memory_files=3)
    note = inst.workspace / "memory" / "boat.md"
    note.write_text(
        "# Sailing to Lofoten\nChartered the ketch Albatross from Svolvaer harbour.\n",
        encoding="utf-8",
    )
    old = time.time() - 90 * 86400
    os.utime(note, (old, old))
    forced = run_cli(inst, "expire", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    [copy] = [inst.workspace / a["to"] for a in json.loads(forced.stdout)["archive"]]
    copy.unlink()
    os.mkfifo(copy)

    d = DaemonProcess(inst, fake_jobs=False).start()
    daemons.append(d)
    d.wait_ready(timeout=90)
    live = inst.transcript("live")
    append(live, tx.header("live", ts=time.time()) + hit_lines(["memory/n000.md"]))
    wait_until(lambda: real_hits(inst.db) == 1, timeout=60)
    cid = f"toolu_{time.monotonic_ns()}"
    t = math.floor(time.time() * 1000 + 2) / 1000
    append(
        live,
        tx.call(cid, query="ketch Albatross Lofoten harbour", ts=t)
        + tx.result(cid, tx.search_payload(["memory/n001.md"]), ts=t + 0.2),
    )
    # The worker goes on: the next hits are counted, the FIFO is named once, the daemon stops.
    append(live, hit_lines(["memory/n002.md"]))
    wait_until(lambda: real_hits(inst.db) == 3, timeout=60)
    [event] = d.wait_event("note.not_a_note", timeout=60)
    assert event["file"] == str(copy) and "not a regular file" in event["why"]
    assert not d.events("ingest.worker_stalled")
    assert d.stop(timeout=60) == 0
    assert copy.is_fifo() and not note.exists()
