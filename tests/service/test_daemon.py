"""The daemon follows transcripts live: a real `memoryd run` subprocess, real files and events."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support.daemon_harness import (
    DaemonProcess,
    NotifySocket,
    append,
    hit_count,
    hit_lines,
    make_install,
    real_hits,
    run_cli,
    settle,
    start,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)


def test_counts_appended_lines_new_files_renames_and_truncation_live(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    s1 = inst.transcript("s1")
    append(s1, hit_lines(["memory/n001.md"]))  # there before the daemon: the catch-up scan
    d = start(inst, daemons, notify, WATCHDOG_USEC="1000000")

    ready = notify.wait_for("READY", "1")
    assert hit_count(inst.db) == 1, "READY comes after the catch-up scan"
    assert "following 1 transcript" in ready["STATUS"]
    assert "1 hit today" in ready["STATUS"]
    notify.wait_for("WATCHDOG", "1")

    # Appended lines are counted from file events alone (the periodic rescan is an hour away).
    append(s1, hit_lines(["memory/n002.md", "memory/n003.md"]))
    wait_until(lambda: hit_count(inst.db) == 3, timeout=60)

    # A new transcript in the folder.
    s2 = inst.transcript("s2")
    append(s2, hit_lines(["MEMORY.md"]))
    wait_until(lambda: hit_count(inst.db) == 4, timeout=60)

    # A half-written line is not counted until its newline arrives, then exactly once.
    line = hit_lines(["memory/n004.md"])
    append(s2, line[:-40])
    settle(inst, "half-line")  # the daemon has read the half line by now
    assert real_hits(inst.db) == 4
    append(s2, line[-40:])
    wait_until(lambda: real_hits(inst.db) == 5, timeout=60)

    # OpenClaw's /new renames the transcript; the renamed file keeps its offset.
    renamed = s1.with_name(s1.name + ".reset.2026-03-06T05-00-00.000Z")
    os.rename(s1, renamed)
    append(renamed, hit_lines(["memory/n005.md"]))
    wait_until(lambda: real_hits(inst.db) == 6, timeout=60)
    settle(inst, "renamed")
    assert real_hits(inst.db) == 6, "the renamed file was not read again from the start"

    # Rewritten in place (truncated, new content): read again from 0, old hits stay unique.
    with open(s2, "wb") as fh:
        fh.write(hit_lines(["memory/n006.md"]))
    wait_until(lambda: real_hits(inst.db) == 7, timeout=60)

    # Other commands work side by side against the same database.
    hits = run_cli(inst, "hits", "--json", "--no-scan")
    assert hits.returncode == 0, hits.stderr
    status = run_cli(inst, "status", "--json")
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["daemon"]["running"] is True
    assert doc["daemon"]["pid"] == d.proc.pid
    assert doc["hits"]["last_day"] == 7 + 2  # and the two settle markers
    assert doc["sources"]["followed"] == 2 + 2
    assert doc["pending_bytes"] == 0

    mark = notify.index()
    assert d.stop(signal.SIGTERM) == 0
    notify.wait_for("STOPPING", "1", after=mark)
    assert real_hits(inst.db) == 7
    assert not [e for e in d.logs() if e.get("level") in ("error", "critical")]
    # Per-line events are debug only: an info-level log stays short.
    assert len(d.logs()) < 40


@pytest.mark.parametrize(
    ("how", "polling"),
    [("copied back", False), ("removed and made again", False), ("removed and made again", True)],
)
def test_a_state_folder_that_goes_away_and_comes_back_is_followed_live_again(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess], how: str, polling: bool
) -> None:
    """OpenClaw's state folder removed and made again, or restored from a copy (a new
    folder at the old name): the watches stayed on the folder that was gone, or on none, and
    new lines waited for the periodic rescan (an hour here; a minute by default) for as long
    as the daemon ran. The main loop sees the folder is another one and watches it again."""
    extra = "[daemon]\nrescan_seconds = 3600.0\n"
    if polling:
        extra += "polling = true\npolling_interval = 0.2\n"
    inst = make_install(tmp_path, extra_config=extra)
    d = start(inst, daemons, notify)
    notify.wait_for("READY", "1")
    append(inst.transcript("a"), hit_lines(["memory/n001.md"]))
    wait_until(lambda: real_hits(inst.db) == 1, timeout=60)
    state = tmp_path / "state"
    if how == "copied back":
        os.rename(state, tmp_path / "away")  # (the watch follows the folder there)
        shutil.copytree(tmp_path / "away", state)
    else:
        kept = inst.transcript("a").read_bytes()
        shutil.rmtree(state)
        d.wait_event("watch.observer_restart")  # its watch ended with the folder
        wait_until(lambda: any(e.get("reason") == "observer restart (watching)"
                               for e in d.events("ingest.rescan")), timeout=60)  # fmt: skip
        inst.sessions.mkdir(parents=True)
        inst.transcript("a").write_bytes(kept)
    append(inst.transcript("a"), hit_lines(["memory/n002.md"]))
    append(inst.transcript("b"), hit_lines(["memory/n003.md"]))
    wait_until(lambda: real_hits(inst.db) == 3, timeout=30)
    settle(inst, "back")
    assert real_hits(inst.db) == 3  # (each once)
    assert d.stop() == 0


def test_lost_events_are_recovered_by_the_periodic_rescan(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    # A polling observer that never polls again stands in for an overflowed inotify queue
    # or a network file system: no event ever arrives, the stat-only rescan still counts.
    inst = make_install(
        tmp_path, "[daemon]\npolling = true\npolling_interval = 3600.0\nrescan_seconds = 1.0\n"
    )
    d = start(inst, daemons)
    d.wait_ready()
    append(inst.transcript("a"), hit_lines(["memory/n001.md"]))
    append(inst.transcript("b"), hit_lines(["memory/n002.md", "MEMORY.md"]))
    wait_until(lambda: hit_count(inst.db) == 3, timeout=60)
    assert d.stop() == 0


def test_an_exception_in_an_event_handler_does_not_stop_counting(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    d = start(inst, daemons, notify, FAKE_HANDLER_BOOM="1", WATCHDOG_USEC="1000000")
    d.wait_ready()
    append(inst.transcript("boom"), hit_lines(["memory/n001.md"]))  # its handler raises
    d.wait_event("watch.handler_failed")
    # The failure asked for a full rescan, which read the file the event was about.
    wait_until(lambda: hit_count(inst.db) == 1, timeout=60)
    # Events still flow: the observer thread survived.
    for i in range(3):
        append(inst.transcript("fine"), hit_lines([f"memory/n01{i}.md"]))
        wait_until(lambda i=i: hit_count(inst.db) == 2 + i, timeout=60)
    mark = notify.index()
    notify.wait_for("WATCHDOG", "1", after=mark, timeout=60)
    assert d.stop() == 0


def test_a_new_agent_folder_is_followed_without_a_restart(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    d = start(inst, daemons)
    d.wait_ready()
    other = inst.sessions.parent.parent / "helper" / "sessions"
    other.mkdir(parents=True)
    append(other / "h1.jsonl", hit_lines(["memory/n007.md"]))
    wait_until(lambda: hit_count(inst.db, "agent = ?", ("helper",)) == 1, timeout=60)
    append(other / "h1.jsonl", hit_lines(["memory/n008.md"]))
    wait_until(lambda: hit_count(inst.db, "agent = ?", ("helper",)) == 2, timeout=60)
    assert d.stop() == 0


def test_a_second_daemon_on_the_same_state_exits_2_naming_the_first(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    first = start(inst, daemons)
    first.wait_ready()
    second = start(inst, daemons)
    assert second.proc.wait(20) == 2
    err = second.log_path.read_text()
    assert f"process {first.proc.pid}" in err
    first.check_alive()
    assert first.stop() == 0
    status = run_cli(inst, "status", "--json")
    assert json.loads(status.stdout)["daemon"]["running"] is False


def test_one_shot_commands_side_by_side_never_double_count(
    tmp_path: Path, daemons: list[DaemonProcess]
) -> None:
    inst = make_install(tmp_path)
    d = start(inst, daemons)
    d.wait_ready()
    expected = 0
    for round_ in range(4):
        for f in range(3):
            append(inst.transcript(f"t{f}"), hit_lines([f"memory/n{round_ * 3 + f:03d}.md"]))
            expected += 1
        scan = run_cli(inst, "scan", "--json")  # races the daemon for the same lines
        assert scan.returncode == 0, scan.stderr
    wait_until(lambda: hit_count(inst.db) == expected, timeout=60)
    hits = run_cli(inst, "hits", "--json")
    assert hits.returncode == 0, hits.stderr
    settle(inst, "after-hits")  # the daemon saw whatever the scans and hits left behind
    assert real_hits(inst.db) == expected
    assert d.stop() == 0
    assert not [e for e in d.logs() if e.get("level") in ("error", "critical")]


def test_no_openclaw_install_is_a_clear_exit_2(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[openclaw]\nstate_dir = ""\n[state]\ndir = "{tmp_path / "md"}"\n')
    env = {"OPENCLAW_STATE_DIR": str(tmp_path / "nowhere")}
    done = run_cli_env(cfg, env, "run")
    assert done.returncode == 2
    assert "no OpenClaw state directory" in done.stderr
    assert not (tmp_path / "nowhere").exists()


def run_cli_env(cfg: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    return subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", str(cfg), *args],
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=30,
        check=False,
    )
