"""The state database under stress: racing first opens, and files that break underneath."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memoryd.store import SCHEMA_VERSION, Store

OPENER = """
import os, sys, time
from memoryd.store import Store
go = sys.argv[2]
while not os.path.exists(go):  # every process is started and imported before any opens
    time.sleep(0.005)
Store.open(sys.argv[1]).close()
"""


def test_many_processes_opening_a_fresh_state_folder_all_succeed(tmp_path: Path):
    """Two commands started together on a new install both migrate: neither may fail."""
    for round_ in range(3):
        _open_together(tmp_path / f"round{round_}", 8)


def _open_together(folder: Path, n: int) -> None:
    db = folder / "state" / "state.db"
    go = folder / "go"
    folder.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPENER, str(db), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    go.touch()
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [err for rc, err in results if rc != 0] == []
    with Store.open(db, readonly=True) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
