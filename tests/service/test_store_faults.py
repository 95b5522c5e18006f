"""The state database under stress: racing first opens, and files that break underneath."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memoryd import cli, faults
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


def test_an_open_meeting_another_switching_a_new_database_to_wal_waits_for_it(tmp_path: Path):
    """SQLite refuses a switch to WAL at once (no busy wait) while another connection holds
    the new database for its own switch: the open waits its turn instead of failing."""
    db = tmp_path / "state.db"
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE started_first (x)")
    other.execute("BEGIN IMMEDIATE")  # as an opener halfway through its own switch holds it
    tries: list[int] = []

    def other_finishes(*_: object) -> None:
        tries.append(1)
        if other.in_transaction:
            other.execute("COMMIT")

    faults.hook("store.wal_busy", other_finishes)
    try:
        with Store.open(db) as store:
            assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        faults.hook("store.wal_busy", None)
        other.close()
    assert tries == [1]  # refused once, then through


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


# --------------------------------------------------------------------------- broken files


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make ``path`` unwritable for this process, even as root.

    Root ignores permission bits, so as root the file or folder is made immutable
    (``chattr +i``, which stops root too); anyone else gets the mode bits cleared.
    """
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(path)], check=True)
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)
        try:
            yield
        finally:
            path.chmod(mode)


class Install:
    def __init__(self, root: Path) -> None:
        self.state = root / "oc"
        (self.state / "workspace" / "memory").mkdir(parents=True)
        (self.state / "workspace" / "memory" / "x.md").write_text("# x\n", encoding="utf-8")
        (self.state / "agents" / "main" / "sessions").mkdir(parents=True)
        self.home = root
        self.db = self.state / "memoryd" / "state.db"
        assert self.run("mark", "memory/x.md").returncode == 0  # creates the database

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
        env.update(HOME=str(self.home), OPENCLAW_STATE_DIR=str(self.state))
        return subprocess.run(
            [sys.executable, "-m", "memoryd", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )


def one_line_naming(proc: subprocess.CompletedProcess[str], path: Path, cause: str) -> None:
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and cause in lines[0], lines[0]


@pytest.mark.parametrize("part", ["state.db", "folder", "state.db-shm"])
def test_a_read_only_part_of_the_state_database_is_named_in_one_line(tmp_path: Path, part: str):
    inst = Install(tmp_path)
    if part == "state.db-shm":
        # A -shm left behind by a process that ran as somebody else, say: read-only.
        keep = Store.open(inst.db)
        keep.conn.execute("SELECT COUNT(*) FROM marks").fetchone()
        target = Path(f"{inst.db}-shm")
    else:
        keep = None
        target = inst.db if part == "state.db" else inst.db.parent
    try:
        with read_only(target):
            proc = inst.run("unmark", "memory/x.md")
    finally:
        if keep is not None:
            keep.close()
    one_line_naming(proc, target, "read-only")


def test_a_malformed_page_is_named_in_one_line(tmp_path: Path):
    inst = Install(tmp_path)
    size = inst.db.stat().st_size
    assert size > 4 * 4096
    with open(inst.db, "r+b") as fh:  # scribble over every page but the header page
        fh.seek(4096)
        fh.write(bytes(range(256)) * ((size - 4096) // 256))
    proc = inst.run("hits", "--no-scan")
    one_line_naming(proc, inst.db, "damaged")
    assert "malformed" in proc.stderr


def test_a_full_disk_is_named_and_not_hidden_behind_no_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    from support import transcripts as tx

    sessions, _ws, cfg = tx.make_install(tmp_path, [f"memory/n{i}.md" for i in range(50)])
    monkeypatch.setenv("MEMORYD_CONFIG", str(cfg))
    assert cli.main(["mark", "memory/n1.md"]) == 0
    lines = [tx.header("s1")]
    for i in range(2000):
        lines.append(tx.call(f"c{i}", query=f"query number {i} " * 5))
        found = [f"memory/n{j}.md" for j in range(i % 40, i % 40 + 5)]
        lines.append(tx.result(f"c{i}", tx.search_payload(found)))
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    capsys.readouterr()

    def disk_full_after_two_more_pages(conn) -> None:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + 2}")  # SQLITE_FULL, as on a full disk

    faults.hook("store.opened", disk_full_after_two_more_pages)
    assert cli.main(["scan"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "state.db" in err[0] and "disk is full" in err[0], err[0]
    assert "no transaction is active" not in err[0]
