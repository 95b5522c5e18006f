"""Signals and the notify protocol: SIGHUP reloads, SIGTERM / SIGINT stop, WATCHDOG, status."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from support.daemon_harness import (
    DaemonProcess,
    NotifySocket,
    append,
    hit_count,
    hit_lines,
    make_install,
    run_cli,
    settle,
    start,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)


def test_sighup_with_a_valid_config_reloads_it(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    d = start(inst, daemons, notify)
    notify.wait_for("READY", "1")
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    wait_until(lambda: hit_count(inst.db) == 1, timeout=60)
    assert not d.events("ingest.batch"), "per-batch lines are debug only"

    inst.write_config('[log]\nlevel = "debug"\n')
    mark = notify.index()
    d.send(signal.SIGHUP)
    reloading = notify.wait_for("RELOADING", "1", after=mark)
    assert int(reloading["MONOTONIC_USEC"]) > 0
    ready = notify.wait_for("READY", "1", after=mark)
    assert "configuration reloaded" in ready["STATUS"]
    assert notify.messages.index(reloading) < notify.messages.index(ready)
    d.wait_event("daemon.reloaded")

    # The new level is live: the batches are logged at debug. The new hit is in one of the
    # passes after the reload: a batch, or the reload's own rescan if it ran after the append
    # (a file event may also make a batch that finds nothing left to read). A pass logs its
    # line just after its commit: wait for the line, not only for the hit.
    append(inst.transcript("s"), hit_lines(["memory/n002.md"]))
    wait_until(lambda: hit_count(inst.db) == 2, timeout=60)

    def passes_after_reload() -> list[dict]:
        logs = d.logs()
        logs = logs[next(i for i, e in enumerate(logs) if e.get("event") == "daemon.reloaded") :]
        return [e for e in logs if e.get("event") in ("ingest.batch", "ingest.rescan")]

    passes = wait_until(
        lambda: (
            (p := passes_after_reload())
            and any(e["event"] == "ingest.batch" for e in p)
            and sum(e["hits"] for e in p) == 1
            and p
        ),
        timeout=60,
    )
    assert all(e["level"] == "debug" for e in passes if e["event"] == "ingest.batch")
    assert d.stop() == 0


def test_sighup_with_an_invalid_config_keeps_the_old_one_and_says_why(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    d = start(inst, daemons, notify)
    notify.wait_for("READY", "1")
    text = inst.config.read_text()
    inst.config.write_text(text.replace("rescan_seconds = 3600.0", 'rescan_seconds = "soon"'))
    mark = notify.index()
    d.send(signal.SIGHUP)
    notify.wait_for("RELOADING", "1", after=mark)
    ready = notify.wait_for("READY", "1", after=mark)
    assert "reload failed, old config kept" in ready["STATUS"]
    assert "daemon.rescan_seconds" in ready["STATUS"]
    rejected = d.wait_event("daemon.reload_rejected")[0]
    assert rejected["level"] == "error" and "rescan_seconds" in rejected["error"]
    # Still counting with the old configuration.
    append(inst.transcript("s"), hit_lines(["memory/n003.md"]))
    wait_until(lambda: hit_count(inst.db) == 1, timeout=60)
    assert d.stop() == 0


def test_sighup_with_a_config_nested_past_the_parser_keeps_the_daemon_running(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """A file the TOML reader cannot even walk (nested deeper than its stack) is refused
    like any invalid one: the daemon keeps its old configuration and goes on counting."""
    inst = make_install(tmp_path)
    d = start(inst, daemons, notify)
    notify.wait_for("READY", "1")
    inst.config.write_text(inst.config.read_text() + "deep = " + "[" * 3000 + "]" * 3000 + "\n")
    mark = notify.index()
    d.send(signal.SIGHUP)
    ready = notify.wait_for("READY", "1", after=mark)
    assert "reload failed, old config kept" in ready["STATUS"], ready
    assert "nested too deeply" in d.wait_event("daemon.reload_rejected")[0]["error"]
    append(inst.transcript("s"), hit_lines(["memory/n003.md"]))
    wait_until(lambda: hit_count(inst.db) == 1, timeout=60)
    assert d.stop() == 0


def test_sighup_whose_reload_fails_in_a_way_no_check_names_keeps_the_daemon_running(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """A reload that fails past the configuration's own checks (here an I/O error at its
    start) ended the daemon; it keeps the old configuration, logs it, and goes on."""
    inst = make_install(tmp_path)
    d = start(inst, daemons, notify, MEMORYD_FAULT="daemon.reload:1:eio")
    notify.wait_for("READY", "1")
    mark = notify.index()
    d.send(signal.SIGHUP)
    ready = notify.wait_for("READY", "1", after=mark)
    assert ready["STATUS"].endswith("reload failed, old config kept"), ready
    (failed,) = d.wait_event("daemon.reload_failed")
    assert failed["level"] == "error" and "Input/output error" in failed["error"]
    append(inst.transcript("s"), hit_lines(["memory/n003.md"]))
    wait_until(lambda: hit_count(inst.db) == 1, timeout=60)
    mark = notify.index()
    d.send(signal.SIGHUP)  # (the fault was for the first reload only)
    assert "configuration reloaded" in notify.wait_for("READY", "1", after=mark)["STATUS"]
    assert d.stop() == 0


def test_a_reload_refused_with_text_past_latin_1_still_tells_systemd_it_is_ready(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    """sdnotify encodes a message as Latin-1 and drops it without a word when it cannot: a
    refused state.dir change (its reason has a '→'), or any path past Latin-1 in a note, sent
    RELOADING=1 and never READY=1, so systemd saw the unit reloading and no reason."""
    inst = make_install(tmp_path)
    d = start(inst, daemons, notify)
    notify.wait_for("READY", "1")
    text = inst.config.read_text()
    inst.config.write_text(text.replace(str(tmp_path / "md"), str(tmp_path / "md-Ω")))
    mark = notify.index()
    d.send(signal.SIGHUP)
    notify.wait_for("RELOADING", "1", after=mark)
    ready = notify.wait_for("READY", "1", after=mark, timeout=30)
    assert "reload failed, old config kept: state.dir" in ready["STATUS"], ready
    assert "→" in ready["STATUS"] and "md-Ω" in ready["STATUS"], ready
    assert d.stop() == 0


@pytest.mark.parametrize("watch", ["events", "polling"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_and_sigint_stop_cleanly_and_quickly(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess], sig: int, watch: str
) -> None:
    """The promise at stop (docs/service.md, "Stopping"): every line written before the
    signal is counted before the exit, whether or not its file event arrived. With polling
    every 10 minutes no event arrives at all: only the last scan at stop can count them."""
    polling = "[daemon]\nrescan_seconds = 3600.0\npolling = true\npolling_interval = 600.0\n"
    inst = make_install(tmp_path, polling if watch == "polling" else "")
    d = start(inst, daemons, notify, WATCHDOG_USEC="1000000")
    notify.wait_for("READY", "1")
    # WATCHDOG=1 at half the period while everything is alive.
    mark = notify.index()

    def pings() -> int:
        notify.drain()
        return sum(1 for m in notify.messages[mark:] if m.get("WATCHDOG") == "1")

    wait_until(lambda: pings() >= 3)
    # Lines appended just before the signal are committed before the exit.
    append(inst.transcript("s"), hit_lines(["memory/n004.md", "memory/n005.md"]))
    assert hit_count(inst.db) == 0 or watch == "events"
    mark = notify.index()
    assert d.stop(sig, timeout=90) == 0, "inside the unit's TimeoutStopSec (90 s)"
    notify.wait_for("STOPPING", "1", after=mark)
    assert hit_count(inst.db) == 2
    stopped = d.events("daemon.stopped")[0]
    assert stopped["reason"] == signal.Signals(sig).name


def test_status_reports_sources_hits_and_jobs_with_or_without_a_daemon(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    fresh = make_install(tmp_path / "fresh", scheduled_since=None)
    before = run_cli(fresh, "status")
    assert before.returncode == 0, before.stderr
    assert "daemon:      not running" in before.stdout
    assert not fresh.db.exists(), "status creates no state"

    inst = make_install(tmp_path)  # memoryd has run here before: the jobs are owed

    append(inst.transcript("s"), hit_lines(["memory/n001.md", "MEMORY.md"]))
    d = start(inst, daemons)
    d.wait_ready()
    wait_until(lambda: len(d.events("job.done")) == 3)
    partial = b'{"type": "message", "id": "half-writ'  # no newline yet: pending bytes
    append(inst.transcript("s"), partial)
    settle(inst, "partial")  # the daemon has seen the half line (and one marker hit)
    doc = json.loads(run_cli(inst, "status", "--json").stdout)
    assert doc["daemon"]["running"] and doc["daemon"]["pid"] == d.proc.pid
    assert doc["hits"] == {"last_hour": 3, "last_day": 3, "total": 3}
    assert doc["sources"]["followed"] == 2
    assert doc["pending_bytes"] == len(partial)
    assert set(doc["jobs"]) == {"organize", "reflect", "expire"}
    assert doc["jobs"]["organize"]["last_status"] == "ok"
    assert doc["jobs"]["reflect"]["schedule"] == "30 3 * * *"
    assert doc["jobs"]["expire"]["next_run"].endswith("T04:00:00Z")
    text = run_cli(inst, "status").stdout
    assert f"running (pid {d.proc.pid})" in text
    assert "3 last hour, 3 last day, 3 total" in text
    assert d.stop() == 0
