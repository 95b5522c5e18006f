"""The state database deleted under a running daemon: it stops with one clear line, never
keeps counting into a file nobody can read, and the next start counts everything again."""

from __future__ import annotations

import os
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
    start,
    wait_until,
)

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("victim", ["state.db-wal", "state.db"])
def test_a_deleted_state_database_stops_the_daemon_with_one_line(
    tmp_path: Path, notify: NotifySocket, daemons: list[DaemonProcess], victim: str
) -> None:
    inst = make_install(tmp_path)
    d = start(inst, daemons, notify)
    notify.wait_for("READY", "1", timeout=60)
    append(inst.transcript("s"), hit_lines(["memory/n001.md"]))
    wait_until(lambda: hit_count(inst.db) == 1, timeout=30)

    os.unlink(inst.db.parent / victim)
    append(inst.transcript("s"), hit_lines(["memory/n002.md"]))
    d.send(signal.SIGHUP)  # a reload rescans everything; so does the periodic rescan

    assert d.proc is not None
    assert d.proc.wait(60) != 0  # non-zero: systemd restarts it
    gone = d.events("state.database_gone")
    assert len(gone) == 1, d.logs()[-5:]
    assert victim in gone[0]["error"] and "deleted" in gone[0]["error"]
    assert "exception" not in gone[0]
    assert not [e for e in d.logs() if "Traceback" in str(e)]

    # The restart reads from the database that is really there: both hits counted.
    d2 = start(inst, daemons, notify)
    d2.wait_ready(timeout=60)
    wait_until(lambda: hit_count(inst.db) == 2, timeout=30)
    assert d2.stop() == 0
