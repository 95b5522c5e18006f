"""A path read reaches the archive (issue 28, item 1): ``memoryd on-read PATH`` before a
``memory_get`` brings back the note memoryd archived from PATH, and the daemon learns the
same from a ``memory_get`` answered empty, for agents without the plugin.

Real files, a real state database, the real command and scanner; the model's path is data.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from pathlib import Path

import pytest

from memoryd.ondemand import Archived, archived_at_path, read_target
from support import transcripts as tx
from support.archived_boat import daemon_passes
from support.daemon_harness import Install, append, make_install, run_cli

DAY = 86400.0
BOAT = "# Sailing to the Lofoten islands\nChartered the ketch Albatross from Svolvaer.\n"
DENTIST = "# Orthodontist appointments\nDr. Okonkwo, retainer check every eight weeks.\n"


# =========================================================================== pure


def test_a_hostile_path_names_nothing_outside_the_workspace() -> None:
    ws = "/home/u/.openclaw/workspace"
    assert read_target("memory/x.md", ws) == f"{ws}/memory/x.md"
    assert read_target("./memory//x.md", ws) == f"{ws}/memory/x.md"
    assert read_target(f"{ws}/memory/x.md", ws) == f"{ws}/memory/x.md"
    for hostile in (
        "../../../etc/passwd",
        "memory/../../other/memory/x.md",
        "memory/../memory/x.md",  # inside, but no reader climbs: never a request
        "memory\\..\\..\\x.md",
        "/etc/passwd",
        f"{ws}-evil/memory/x.md",
        "",
        ".",
        "memory/x.md\x00.txt",
        "m/" * 3000,
    ):
        assert read_target(hostile, ws) is None, hostile


def test_only_the_exact_original_path_of_an_archived_note_is_named() -> None:
    ws = "/w"
    old = Archived(1, "/w/memory/a.md", "/w/memory-archive/2026-10/memory/a.md", 100.0, "x")
    new = Archived(7, "/w/memory/a.md", "/w/memory-archive/2026-11/memory/a.md", 200.0, "y")
    other = Archived(3, "/w/memory/b.md", "/w/memory-archive/2026-11/memory/b.md", 150.0, "z")
    archived = [old, other, new]
    assert archived_at_path("memory/a.md", [ws], archived) == new  # the latest archive
    assert archived_at_path("memory/b.md", [ws], archived) == other
    assert archived_at_path("memory/A.md", [ws], archived) is None
    assert archived_at_path("memory-archive/2026-11/memory/b.md", [ws], archived) is None
    assert archived_at_path("../w/memory/a.md", [ws], archived) is None  # climbs out first
    assert archived_at_path("memory/a.md", [], archived) is None  # an agent with no workspace


# =========================================================================== the command


def _write(inst: Install, rel: str, text: str, mtime: float) -> None:
    p = inst.workspace / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, (mtime, mtime))


def _archived(tmp_path: Path, extra: str = "") -> tuple[Install, dict[str, str]]:
    """An install whose boat and dentist notes `expire --force` archived."""
    now = time.time()
    inst = make_install(tmp_path, '[schedule]\ntimezone = "UTC"\n' + extra, memory_files=0)
    _write(inst, "memory/lofoten-trip.md", BOAT, now - 90 * DAY)
    _write(inst, "memory/orthodontist.md", DENTIST, now - 90 * DAY)
    append(inst.transcript("live"), tx.header("live", ts=now - 60))
    forced = run_cli(inst, "expire", "--force", "--json")
    assert forced.returncode == 0, forced.stderr
    archived = {a["path"]: a["to"] for a in json.loads(forced.stdout)["archive"]}
    assert set(archived) == {"memory/lofoten-trip.md", "memory/orthodontist.md"}
    return inst, archived


def _rows(db: Path, sql: str, args: tuple = ()) -> list[tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        return list(conn.execute(sql, args))
    finally:
        conn.close()


def _on_read(inst: Install, path: str) -> dict:
    done = run_cli(inst, "on-read", "--json", "--", path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_read_of_an_archived_path_brings_the_note_back_journaled_and_counts_no_hit(
    tmp_path: Path,
) -> None:
    inst, archived = _archived(tmp_path)
    boat = inst.workspace / "memory/lofoten-trip.md"
    doc = _on_read(inst, "memory/lofoten-trip.md")
    assert doc["outcome"] == "restored" and doc["trigger"] == "read"
    assert doc["path"] == "memory/lofoten-trip.md"
    assert doc["archived"] == archived["memory/lofoten-trip.md"]
    assert boat.read_text(encoding="utf-8") == BOAT
    assert not (inst.workspace / archived["memory/lofoten-trip.md"]).exists()
    # journaled: an undo of expire's move, in a restore-on-demand batch
    [(orig, state)] = _rows(
        inst.db, "SELECT id, state FROM moves WHERE src = ? AND undo_of IS NULL", (str(boat),)
    )
    assert state == "undone"
    [(batch,)] = _rows(inst.db, "SELECT batch FROM moves WHERE undo_of = ?", (orig,))
    assert batch.startswith("restore-on-demand:")
    # the read that follows is what counts; the command itself counts nothing
    assert _rows(inst.db, "SELECT count(*) FROM hits") == [(0,)]
    status = json.loads(run_cli(inst, "status", "--json").stdout)["expire"]["restore_on_demand"]
    assert status["restored"] == 1
    assert status["recent"][-1]["path"] == "memory/lofoten-trip.md"
    assert status["recent"][-1]["trigger"] == "read"
    shown = run_cli(inst, "status").stdout
    assert "memory/lofoten-trip.md restored  (a read of its path)" in shown
    # the dentist note is untouched, and asking again moves nothing
    assert (inst.workspace / archived["memory/orthodontist.md"]).exists()
    assert _on_read(inst, "memory/lofoten-trip.md")["outcome"] == "none"
    text = run_cli(inst, "on-read", "memory/orthodontist.md").stdout
    assert text.startswith("restored memory/orthodontist.md from memory-archive/")
    # and `restore PATH` names the read as what brought it back
    again = run_cli(inst, "restore", "memory/orthodontist.md")
    assert "a search or a read asked for it" in again.stdout + again.stderr


def test_an_agent_named_as_openclaw_spells_it_elsewhere_is_the_same_agent(
    tmp_path: Path,
) -> None:
    """OpenClaw files agent ``Main`` under ``agents/main/``: the hook may pass either."""
    inst, _archived_rel = _archived(tmp_path)
    doc = json.loads(
        run_cli(inst, "on-read", "--json", "--agent", "MAIN", "memory/lofoten-trip.md").stdout
    )
    assert doc["outcome"] == "restored" and doc["agent"] == "main"
    assert (inst.workspace / "memory/lofoten-trip.md").exists()


def test_a_file_at_the_path_hostile_names_and_the_switch_off_move_nothing(
    tmp_path: Path,
) -> None:
    inst, archived = _archived(tmp_path)
    mine = "# my new orthodontist notes\n"
    (inst.workspace / "memory/orthodontist.md").write_text(mine, encoding="utf-8")
    assert _on_read(inst, "memory/orthodontist.md")["outcome"] == "present"
    assert (inst.workspace / "memory/orthodontist.md").read_text(encoding="utf-8") == mine
    assert (inst.workspace / archived["memory/orthodontist.md"]).read_text() == DENTIST
    # nothing reported for it: the read gets the user's file, which is no conflict
    assert _rows(inst.db, "SELECT count(*) FROM counters WHERE name LIKE 'restore_on%'") == [(0,)]
    outside = str(inst.workspace / ".." / "elsewhere" / "memory" / "lofoten-trip.md")
    for hostile in ("../../../../etc/passwd", outside, "memory/lofoten-trip.md/..", "\u202e.md"):
        assert _on_read(inst, hostile)["outcome"] == "none", hostile
    assert not (inst.workspace / "memory/lofoten-trip.md").exists()
    unknown = run_cli(inst, "on-read", "--json", "--agent", "nobody", "memory/lofoten-trip.md")
    assert json.loads(unknown.stdout)["outcome"] == "none"
    assert not (inst.workspace / "memory/lofoten-trip.md").exists()

    off = inst.config.read_text() + "[expire]\nrestore_on_demand = false\n"
    inst.config.write_text(off)
    assert _on_read(inst, "memory/lofoten-trip.md")["outcome"] == "off"
    assert not (inst.workspace / "memory/lofoten-trip.md").exists()


@pytest.mark.subprocess
def test_a_path_of_bytes_no_utf8_holds_is_answered_in_utf8_json(tmp_path: Path) -> None:
    """A hook's answer is read as UTF-8 JSON. A path of raw bytes (``memory/\\xff\\xfe.md``)
    is named back escaped, never as those bytes, which would make the answer no UTF-8."""
    import subprocess
    import sys

    inst, _archived_paths = _archived(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    argv = [sys.executable, "-m", "memoryd", "--config", str(inst.config), "on-read", "--json"]
    r = subprocess.run([*argv, b"memory/\xff\xfe.md"], env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.decode("utf-8"))  # (strict: raises on a raw 0xff)
    assert doc["outcome"] == "none" and doc["path"] == "memory/\udcff\udcfe.md"


def test_on_read_on_an_install_memoryd_never_ran_on_creates_nothing(tmp_path: Path) -> None:
    inst = make_install(tmp_path, '[schedule]\ntimezone = "UTC"\n', memory_files=0)
    inst.db.unlink(missing_ok=True)
    assert _on_read(inst, "memory/x.md")["outcome"] == "none"
    assert not inst.db.exists()


# =========================================================================== the daemon's side


def _get(inst: Install, path: str, text: str) -> float:
    """A memory_get call and its answer (``text``: what OpenClaw returned), appended live."""
    cid = f"toolu_{time.monotonic_ns()}"
    t = math.floor(time.time() * 1000 + 2) / 1000
    payload = {"path": path, "text": text}
    append(
        inst.transcript("live"),
        tx.call(cid, tool="memory_get", path=path, ts=t)
        + tx.result(cid, payload, ts=t + 0.2, tool="memory_get"),
    )
    return t


def test_the_daemon_restores_a_path_an_agent_read_empty_and_counts_that_read_once(
    tmp_path: Path,
) -> None:
    inst, archived = _archived(tmp_path)
    a_pass, _restorer = daemon_passes(inst)

    assert a_pass() == []  # the first check: history
    _get(inst, "../../etc/passwd", "")  # hostile: data, nothing
    _get(inst, "memory/lofoten-trip.md", "")  # the agent read the archived path: empty
    [event] = a_pass()
    assert event["outcome"] == "restored" and event["trigger"] == "read"
    assert (inst.workspace / "memory/lofoten-trip.md").read_text(encoding="utf-8") == BOAT
    hits = _rows(inst.db, "SELECT memory_path, kind FROM hits")
    assert hits == [("memory/lofoten-trip.md", "get")]
    assert a_pass() == []  # looked at once
    assert len(_rows(inst.db, "SELECT * FROM hits")) == 1
    # A read that got text (the scanner counted it: the plugin brought the note back first)
    # is no request for the archive.
    _get(inst, "memory/orthodontist.md", "# Orthodontist appointments")
    assert a_pass() == []
    assert (inst.workspace / archived["memory/orthodontist.md"]).exists()
