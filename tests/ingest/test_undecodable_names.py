"""A file name that is not UTF-8 never stops a job or a command: skipped, warned once, counted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.store import Store

NOW = "2026-11-03T10:00:00+00:00"
OLD = 1.7e9  # 2023
BAD = b"2025-01-12-\xff\xfebad.md"
SHOWN = "2025-01-12-\\xff\\xfebad.md"


@pytest.fixture
def install(tmp_path: Path) -> Path:
    state = tmp_path / "oc"
    memory = state / "workspace" / "memory"
    memory.mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    for folder in (memory, state / "memory_fs" / "hot", state / "memory_fs" / "forgotten"):
        folder.mkdir(parents=True, exist_ok=True)
        for name in (BAD, b"2023-01-10-good.md"):
            path = os.path.join(os.fsencode(folder), name)  # bytes: no decoding on the way
            with open(path, "wb") as fh:
                fh.write(b"# an old note\nwith some words\n")
            os.utime(path, (OLD, OLD))
    return state


def run(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(HOME=str(state.parent), OPENCLAW_STATE_DIR=str(state), MEMORYD_NOW=NOW)
    return subprocess.run(
        [sys.executable, "-m", "memoryd", *args, "--no-scan"]
        if args[0] in ("expire", "reflect", "hits")
        else [sys.executable, "-m", "memoryd", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def warned_once(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if "not UTF-8" in ln]
    assert len(lines) == 1, proc.stderr
    assert SHOWN in lines[0]


def test_every_command_goes_on_past_a_name_that_is_not_utf8(install: Path):
    proc = run(install, "expire", "--json")
    assert proc.returncode == 0
    warned_once(proc)
    plan = json.loads(proc.stdout)
    assert [a["path"] for a in plan["archive"]] == ["memory/2023-01-10-good.md"]
    assert plan["skipped_names"] == [f"memory/{SHOWN}"]

    proc = run(install, "hits", "--json")
    assert proc.returncode == 0
    warned_once(proc)
    assert json.loads(proc.stdout)["never_hit"] == ["memory/2023-01-10-good.md"]

    proc = run(install, "reflect")
    assert proc.returncode == 0
    warned_once(proc)

    proc = run(install, "organize", "--json")
    assert proc.returncode == 0, proc.stderr
    warned_once(proc)
    doc = json.loads(proc.stdout)
    assert {a["note"] for a in doc["actions"]} == {"2023-01-10-good.md"}

    proc = run(install, "expire", "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    warned_once(proc)
    moved = json.loads(proc.stdout)["archive"]
    assert [m["path"] for m in moved] == ["memory/2023-01-10-good.md"]

    # The odd file itself is untouched wherever it was, and the skips are counted.
    for folder in ("workspace/memory", "memory_fs/hot", "memory_fs/forgotten"):
        assert BAD in os.listdir(os.fsencode(install / folder))
    with Store.open(install / "memoryd" / "state.db", readonly=True) as store:
        assert store.counters()["skipped_names"] >= 3


@pytest.mark.unit
def test_a_folder_of_notes_that_cannot_be_listed_is_said_once_and_its_notes_left_out(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``memory/projects/`` unreadable (its permissions; root reads anyway, so the file
    system's refusal is made at the fault point, as the scandir would raise it): its notes
    are left out of the listing, so never archived, and a warning says which folder and
    why, once per process. The rest is listed as ever."""
    import errno
    import logging

    from memoryd import faults
    from memoryd.workspace import list_memory_files

    ws = tmp_path / "ws"
    for rel in ("memory/a.md", "memory/projects/p.md", "memory/projects/deep/q.md"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("# note\n", encoding="utf-8")

    def refused(folder: Path) -> None:
        if folder.name == "projects":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))

    faults.hook("workspace.list", refused)
    try:
        with caplog.at_level(logging.WARNING, logger="memoryd.workspace"):
            first = [f.rel for f in list_memory_files(ws)]
            second = [f.rel for f in list_memory_files(ws)]
    finally:
        faults.hook("workspace.list", None)
    assert first == second == ["memory/a.md"]
    said = [r.getMessage() for r in caplog.records if "cannot list" in r.getMessage()]
    assert said == ["cannot list memory/projects (Permission denied): the notes in it are left "
                    "out until it can be read"]  # fmt: skip
    assert [f.rel for f in list_memory_files(ws)] == [
        "memory/a.md", "memory/projects/deep/q.md", "memory/projects/p.md"]  # fmt: skip

    # An extraPaths folder (outside the workspace) is named whole, and two such folders, or
    # the same name in two workspaces, are each said
    shared = [tmp_path / "shared-a", tmp_path / "shared-b"]
    for root in shared:
        (root / "n.md").parent.mkdir(parents=True)
        (root / "n.md").write_text("# n\n", encoding="utf-8")
    other = tmp_path / "ws2"
    (other / "memory" / "projects").mkdir(parents=True)
    def refused_too(folder: Path) -> None:
        if folder in shared:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(folder))
        refused(folder)

    faults.hook("workspace.list", refused_too)
    caplog.clear()
    try:
        with caplog.at_level(logging.WARNING, logger="memoryd.workspace"):
            assert [f.rel for f in list_memory_files(ws, extra=tuple(shared))] == ["memory/a.md"]
            list_memory_files(other)
    finally:
        faults.hook("workspace.list", None)
    said = sorted(r.getMessage().split(" (")[0] for r in caplog.records)
    assert said == sorted(["cannot list memory/projects", f"cannot list {shared[0]}",
                           f"cannot list {shared[1]}"]), said  # fmt: skip
