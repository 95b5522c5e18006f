"""Every memory file OpenClaw searches is counted (issue 29): ``USER.md`` and the notes of
``memory.search.extraPaths``, inside the workspace and outside it, relative or absolute.

2026.9.6 returns them from ``memory_search`` as ``source: "memory"`` under workspace-relative
names (``USER.md``, ``notes/lighthouse.md``, ``../shared-notes/runbook.md`` for a folder
outside the workspace even when it is configured absolute: tests/live/OBSERVED.md). memoryd
counted none of them, silently. ``USER.md``, like ``MEMORY.md``, is never archived; a file
outside the workspace is never moved, only counted.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memoryd.workspace import classify_result_path
from support import transcripts as tx
from support.inprocess import memoryd as run_memoryd

pytestmark = pytest.mark.subprocess

OLD = 1_600_000_000  # an mtime years ago: old enough for any expire rule


def _install(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    state = tmp_path / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    ws = tmp_path / "ws"
    shared = tmp_path / "shared-notes"
    for path in (
        ws / "MEMORY.md",
        ws / "USER.md",
        ws / "memory" / "old.md",
        ws / "notes" / "lighthouse.md",
        shared / "runbook.md",
        shared / "deep" / "Tromsø notes.md",
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {path.name}\n", encoding="utf-8")
        os.utime(path, (OLD, OLD))
    (state / "openclaw.json").write_text(
        json.dumps(
            {
                "agents": {"defaults": {"workspace": str(ws)}},
                "memory": {"search": {"extraPaths": ["notes", str(shared)]}},
            }
        )
    )
    lines = [tx.header("s1")]
    found = [
        ("c1", ["USER.md"]),
        ("c2", ["notes/lighthouse.md", "memory/old.md"]),
        ("c3", ["../shared-notes/runbook.md"]),
        ("c4", [str(shared / "runbook.md")]),  # the same file, absolute
        ("c5", ["../shared-notes/deep/Tromsø notes.md"]),
        ("c6", ["../elsewhere/secret.md", "notes-not-extra/x.md"]),  # neither is memory
    ]
    for cid, paths in found:
        lines += [tx.call(cid), tx.result(cid, tx.search_payload(paths))]
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(
        f'[openclaw]\nstate_dir = "{state}"\n[state]\ndir = "{tmp_path / "md"}"\n'
        "[expire]\nmin_age_days = 1\nmax_hits = 5\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "MEMORYD"))}
    env.update(MEMORYD_CONFIG=str(cfg))
    return ws, shared, env


def test_user_md_and_extra_paths_count_under_their_own_names(tmp_path: Path) -> None:
    ws, shared, env = _install(tmp_path)
    r = run_memoryd(("hits", "--all", "--json"), env=env)
    assert r.returncode == 0, r.stderr
    got = {f["path"]: f["hits"] for f in json.loads(r.stdout)["files"]}
    assert got == {
        "USER.md": 1,
        "notes/lighthouse.md": 1,
        "memory/old.md": 1,
        "../shared-notes/runbook.md": 2,
        "../shared-notes/deep/Tromsø notes.md": 1,
    }
    text = run_memoryd(("hits", "--all"), env=env).stdout
    assert "../shared-notes/runbook.md" in text and "USER.md" in text

    r = run_memoryd(("explain", "../shared-notes/runbook.md", "--json", "--no-scan"), env=env)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["extra_path"] is True and doc["hits_total"] == 2
    r = run_memoryd(("explain", str(shared / "runbook.md"), "--no-scan"), env=env)
    assert r.returncode == 0 and "memory.search.extraPaths" in r.stdout, r.stderr
    r = run_memoryd(("explain", "USER.md", "--json", "--no-scan"), env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["path"] == "USER.md"

    # expire archives what its rule says (memory/old.md: old, one hit) and never USER.md,
    # an extraPaths note inside the workspace, or one outside it
    r = run_memoryd(("expire", "--force"), env=env)
    assert r.returncode == 0, r.stderr
    assert not (ws / "memory" / "old.md").exists()
    for kept in (ws / "USER.md", ws / "MEMORY.md", ws / "notes" / "lighthouse.md"):
        assert kept.exists(), kept
    assert sorted(p.name for p in shared.rglob("*.md")) == ["Tromsø notes.md", "runbook.md"]
    r = run_memoryd(("scan",), env=env)  # a rescan adds nothing
    after = json.loads(run_memoryd(("hits", "--all", "--json"), env=env).stdout)
    assert {f["path"]: f["hits"] for f in after["files"]} == got


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("USER.md", "USER.md"),
        ("notes/lighthouse.md", "notes/lighthouse.md"),
        ("/w/ws/notes/a/b.md", "notes/a/b.md"),
        ("../shared/runbook.md", "../shared/runbook.md"),
        ("/w/shared/runbook.md", "../shared/runbook.md"),
        ("/w/shared-not/runbook.md", None),
        ("../shared/runbook.txt", None),
        ("notes-x/a.md", None),
        ("../other/a.md", None),
    ],
)
def test_extra_paths_are_keyed_as_openclaw_names_them(raw: str, key: str | None) -> None:
    extra = ("/w/ws/notes", "/w/shared")
    assert classify_result_path(raw, "/w/ws", None, extra) == key
    if key is not None and key != "USER.md":
        assert classify_result_path(raw, "/w/ws", None, ()) is None  # (not without the setting)


def test_an_archive_openclaw_indexes_is_counted_and_never_archived_again(tmp_path: Path) -> None:
    """``memory.search.extraPaths: ["memory-archive"]`` (OpenClaw then finds and reads archived
    notes, tests/live/OBSERVED.md): a hit on an archived copy counts under the name OpenClaw
    gives it, and no expire moves a note already in the archive a second time."""
    ws, _shared, env = _install(tmp_path)
    cfg = tmp_path / "state" / "openclaw.json"
    doc = json.loads(cfg.read_text())
    doc["memory"]["search"]["extraPaths"].append("memory-archive")
    cfg.write_text(json.dumps(doc))
    earlier = ws / "memory-archive" / "2026-01" / "memory" / "aviary.md"
    earlier.parent.mkdir(parents=True)
    earlier.write_text("# Aviary\n\nThe zebrafinch aviary door sticks.\n", encoding="utf-8")
    os.utime(earlier, (OLD, OLD))
    sessions = tmp_path / "state" / "agents" / "main" / "sessions"
    (sessions / "s2.jsonl").write_bytes(b"".join([
        tx.header("s2"), tx.call("d1"),
        tx.result("d1", tx.search_payload(["memory-archive/2026-01/memory/aviary.md"])),
    ]))

    r = run_memoryd(("hits", "--all", "--json"), env=env)
    assert r.returncode == 0, r.stderr
    got = {f["path"]: f["hits"] for f in json.loads(r.stdout)["files"]}
    assert got["memory-archive/2026-01/memory/aviary.md"] == 1

    for _ in range(2):  # the second run finds memory/old.md in the archive: it stays there
        r = run_memoryd(("expire", "--force"), env=env)
        assert r.returncode == 0, r.stderr
    archived = sorted(p.relative_to(ws).as_posix() for p in (ws / "memory-archive").rglob("*.md"))
    assert "memory-archive/2026-01/memory/aviary.md" in archived
    assert len(archived) == 2 and any(a.endswith("/memory/old.md") for a in archived), archived
    assert earlier.read_text(encoding="utf-8").startswith("# Aviary")


def test_status_says_whether_openclaw_searches_the_archive_and_how(tmp_path: Path) -> None:
    """The command it gives keeps the folders OpenClaw already searches (``set`` replaces the
    list); once the archive is among them, status says so."""
    ws, shared, env = _install(tmp_path)
    r = run_memoryd(("status",), env=env)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("indexed:"))
    assert "OpenClaw does not search the archive" in line
    # (quoted for a shell whatever the folders' names hold)
    from memoryd.commands.status import archive_search_line

    odd = archive_search_line(False, "memory-archive/{month}", ["/home/o'brien/notes"])
    command = odd.split("to let it: ", 1)[1]
    assert shlex.split(command)[4] == json.dumps(["/home/o'brien/notes", "memory-archive"])
    wanted = json.dumps([str(ws / "notes"), str(shared), "memory-archive"])
    assert f"openclaw config set memory.search.extraPaths '{wanted}' --strict-json" in line
    doc = json.loads(run_memoryd(("status", "--json"), env=env).stdout)
    assert doc["expire"]["archive_searched_by_openclaw"] is False

    cfg = tmp_path / "state" / "openclaw.json"
    oc = json.loads(cfg.read_text())
    oc["memory"]["search"]["extraPaths"] = json.loads(wanted)  # (what the line said to run)
    cfg.write_text(json.dumps(oc))
    r = run_memoryd(("status",), env=env)
    assert "indexed:     OpenClaw searches the archive too" in r.stdout, r.stdout
    doc = json.loads(run_memoryd(("status", "--json"), env=env).stdout)
    assert doc["expire"]["archive_searched_by_openclaw"] is True


def test_a_workspace_given_in_memoryds_config_keeps_the_folders_openclaw_searches(
    tmp_path: Path,
) -> None:
    """``[openclaw] workspace`` names the workspace, not what OpenClaw searches: the
    extraPaths of ``openclaw.json`` still count, and status still knows the archive is
    indexed. A file that does not parse then leaves them unknown; nothing else stops."""
    ws, _shared, env = _install(tmp_path)
    cfg = Path(env["MEMORYD_CONFIG"])
    cfg.write_text(cfg.read_text().replace("[openclaw]\n", f'[openclaw]\nworkspace = "{ws}"\n'))
    oc_file = tmp_path / "state" / "openclaw.json"
    oc = json.loads(oc_file.read_text())
    oc["memory"]["search"]["extraPaths"].append("memory-archive")
    oc_file.write_text(json.dumps(oc))
    r = run_memoryd(("hits", "--all", "--json"), env=env)
    assert r.returncode == 0, r.stderr
    counted = {f["path"] for f in json.loads(r.stdout)["files"] if f["hits"]}
    assert {"notes/lighthouse.md", "../shared-notes/runbook.md"} <= counted, counted
    doc = json.loads(run_memoryd(("status", "--json"), env=env).stdout)
    assert doc["expire"]["archive_searched_by_openclaw"] is True

    oc_file.write_text("{ not json at all")
    # (a process of its own: this one keeps the last good reading of the file, as the daemon
    # does through a bad edit)
    r = subprocess.run([sys.executable, "-m", "memoryd", "status", "--json"], env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["expire"]["archive_searched_by_openclaw"] is False
