"""memoryd's side of the OpenClaw plugin (issue 21), in process: what the plugin reads.

``memoryd plugin install/uninstall --dry-run`` (the openclaw commands, nothing changed),
``inject --session`` (its own budget inside OpenClaw's, notes already in the bootstrap left
out, the stamps the plugin checks), recall's archive layer (restored through the journal,
counted once, undone by ``restore --last``), ``status --json``'s plugin facts, and the
scanner never counting a ``memoryd_recall`` call. The real OpenClaw runs in
``tests/live/plugin_live.py``; its record is judged in ``test_plugin_record.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.bootstrap import (
    BootstrapBudget,
    already_in,
    bootstrap_budget,
    bootstrap_limits,
    read_bootstrap,
    session_budget,
)
from memoryd.commands.plugin import ENTRY, compile_package, install_steps, leftovers, plugin_dir
from memoryd.config import load_config, resolve_paths
from memoryd.ingest.parser import parse_line
from memoryd.ingest.tool_names import memory_tool
from memoryd.mover import mover_for
from memoryd.ondemand import archived_files
from memoryd.store import Store
from support import plugin_inprocess
from support.plugin_inprocess import run, run_json

pytestmark = pytest.mark.unit

install = plugin_inprocess.install  # the plugin tests' OpenClaw install (a fixture)

HOUR = 3600.0


# --------------------------------------------------------------------------- install


def test_the_plugin_ships_inside_the_package():
    folder = plugin_dir()
    manifest = json.loads((folder / "openclaw.plugin.json").read_text())
    package = json.loads((folder / "package.json").read_text())
    assert manifest["id"] == package["name"] == "memoryd"
    assert manifest["contracts"]["tools"] == ["memoryd_recall"]
    for entry in package["openclaw"]["extensions"]:
        assert (folder / entry).is_file()
    # plain ESM, nothing to install: no dependencies at all
    assert "dependencies" not in package and package["type"] == "module"


def test_install_dry_run_prints_openclaws_commands_and_changes_nothing(install, capsys):
    before = (install["state"] / "openclaw.json").read_bytes()
    code, out = run(capsys, install["cfg"], "plugin", "install", "--dry-run")
    assert code == 0, out
    copy = install["root"] / "mstate" / "openclaw-plugin"  # outside the venv (issue 29)
    assert f"plugins install {copy} --link --force --accept-capabilities" in out
    assert f"would copy: {plugin_dir()} → {copy}" in out
    assert f"config set {ENTRY}.hooks.allowConversationAccess true" in out
    assert f"{ENTRY}.config.config {install['cfg']}" in out  # memoryd's own config carried
    assert "undo: memoryd plugin uninstall" in out
    assert (install["state"] / "openclaw.json").read_bytes() == before
    assert not (install["root"] / "mstate").exists()  # no snapshot, no state folder


def test_install_dry_run_says_what_the_recall_tool_costs_and_how_to_switch_it_off(install, capsys):
    """Issue 35: the recall tool is in every request; the summary says its price and the key."""
    code, out = run(capsys, install["cfg"], "plugin", "install", "--dry-run")
    assert code == 0, out
    assert f"config set {ENTRY}.config.recall deferred" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("recall tool:"))
    assert "deferred" in line and "characters a request" in line
    assert 'plugin.recall_tool = "off"' in line  # the way out, named
    cfg = install["cfg"]
    cfg.write_text(cfg.read_text() + '\n[plugin]\nrecall_tool = "off"\n')
    doc = run_json(capsys, cfg, "plugin", "install", "--dry-run", "--json")
    assert doc["recall_tool"]["mode"] == "off"
    assert any(r["command"][-2:] == [f"{ENTRY}.config.recall", "off"] for r in doc["steps"])
    code, out = run(capsys, cfg, "plugin", "install", "--dry-run")
    assert "recall tool: off" in out


def test_install_dry_run_json_names_the_state_dir_and_profile(install, capsys):
    doc = run_json(
        capsys, install["cfg"], "plugin", "install", "--dry-run", "--json", "--profile", "work"
    )
    assert doc["dry_run"] and doc["undo"] == "memoryd plugin uninstall --profile work"
    assert all(row["command"][1:3] == ["--profile", "work"] for row in doc["steps"])
    assert doc["openclaw_json"] == str(install["state"] / "openclaw.json")
    command = next(r["command"] for r in doc["steps"] if f"{ENTRY}.config.command" in r["command"])
    assert os.path.isabs(command[-1])  # the gateway's PATH need not hold memoryd


def test_install_compiles_memoryds_modules_even_where_bytecode_is_not_written(
    install, capsys, tmp_path, monkeypatch
):
    """The plugin's ``memoryd inject --session`` must not compile its modules at every run
    (an editable install under PYTHONDONTWRITEBYTECODE=1 would): install compiles them."""
    import importlib.util
    import sys

    doc = run_json(capsys, install["cfg"], "plugin", "install", "--dry-run", "--json")
    assert doc["bytecode"] == "would compile"
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for name in ("__init__.py", "sub/__init__.py", "sub/mod.py"):
        (package / name).write_text("ANSWER = 42\n")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # PYTHONDONTWRITEBYTECODE=1
    cached = [Path(importlib.util.cache_from_source(str(package / n))) for n in ("sub/mod.py",)]
    assert not any(c.exists() for c in cached)
    assert compile_package(package) == f"compiled {package}"
    assert all(c.is_file() for c in cached)
    # what Python checks before using it: the source's mtime and size in the header
    header = cached[0].read_bytes()[8:16]
    st = (package / "sub" / "mod.py").stat()
    assert header == (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + st.st_size.to_bytes(
        4, "little"
    )


def test_uninstall_dry_run_keeps_the_plugins_files(install, capsys):
    doc = run_json(capsys, install["cfg"], "plugin", "uninstall", "--dry-run", "--json")
    first = doc["steps"][0]["command"]
    assert first[-4:] == ["uninstall", "memoryd", "--force", "--keep-files"]
    assert doc["steps"][-1]["command"][-2:] == ["unset", ENTRY]


def test_install_steps_say_what_changes_and_how_to_undo():
    steps = install_steps(["openclaw"], Path("/p"), "/v/bin/memoryd", None)
    assert [s.argv[1:3] for s in steps] == [
        ["plugins", "install"],
        ["config", "set"],
        ["config", "set"],
        ["config", "set"],
    ]
    assert all(s.change and s.undo for s in steps)


def test_undo_commands_name_an_openclaw_in_a_folder_with_a_space():
    program = "/Users/me/Library/Application Support/oc/bin/openclaw"
    steps = install_steps([program, "--profile", "work"], Path("/p"), "/v/bin/memoryd", "/c.toml")
    for step in steps:
        said = shlex.split(step.undo)
        assert said[:3] == [program, "--profile", "work"], step.undo


def test_leftovers_remove_only_what_the_install_created():
    after_uninstall = {"gateway": {"mode": "local"}, "plugins": {"entries": {ENTRY[16:]: {}}}}
    # none of plugins.* before: all of it goes, deepest first
    assert leftovers(after_uninstall, {"gateway": {"mode": "local"}}) == [
        ENTRY,
        "plugins.entries",
        "plugins",
    ]
    # the user had other plugins: only memoryd's entry goes
    mine = {"plugins": {"entries": {"memoryd": {}, "other": {"enabled": True}}}}
    assert leftovers(mine, {"plugins": {"entries": {"other": {"enabled": True}}}}) == [ENTRY]
    # an empty plugins.entries the user had before stays
    assert leftovers({"plugins": {"entries": {}}}, {"plugins": {"entries": {}}}) == []


# --------------------------------------------------------------------------- injection


def test_inject_session_leaves_out_notes_already_in_memory_md(install, capsys):
    hot = install["hot"]
    (hot / "tea.md").write_text("# Tea\n\nThe user prefers green tea and short answers, always.\n")
    (hot / "deploy.md").write_text("# Deploy\n\nThe deploy moved to Thursday.\n")
    doc = run_json(capsys, install["cfg"], "inject", "--session", "--json", "--agent", "main")
    assert doc["included"] == ["deploy.md"] and doc["already_in_bootstrap"] == ["tea.md"]
    assert "hot/tea.md" not in doc["text"] and "Thursday" in doc["text"]
    assert doc["max_chars"] == 4000  # tiers.session_inject_max_chars
    assert doc["session"]["bootstrap_files"] == ["AGENTS.md", "MEMORY.md"]


def test_inject_session_never_pushes_the_bootstrap_past_openclaws_total(install, capsys):
    oc = install["state"] / "openclaw.json"
    doc = json.loads(oc.read_text())
    doc["agents"]["defaults"]["bootstrapTotalMaxChars"] = 1000
    oc.write_text(json.dumps(doc))
    (install["ws"] / "SOUL.md").write_text("x" * 900)
    (install["hot"] / "a.md").write_text("# A\n\n" + "a" * 300 + "\n")
    out = run_json(capsys, install["cfg"], "inject", "--session", "--json")
    used = out["session"]["bootstrap_used"]
    assert out["max_chars"] == 1000 - used < 300
    assert out["chars"] <= out["max_chars"] and used + out["chars"] <= 1000


def test_inject_session_stamps_change_with_what_injection_depends_on(install, capsys):
    note = install["hot"] / "deploy.md"
    note.write_text("# Deploy\n\nThursday.\n")
    first = run_json(capsys, install["cfg"], "inject", "--session", "--json")["session"]["watch"]
    again = run_json(capsys, install["cfg"], "inject", "--session", "--json")["session"]["watch"]
    assert first == again  # nothing changed: the plugin may reuse its answer
    watched = {w["path"] for w in first}
    assert {str(install["hot"]), str(note), str(install["cfg"])} <= watched
    assert str(install["ws"] / "MEMORY.md") in watched
    os.utime(note, (time.time() + 5, time.time() + 5))
    third = run_json(capsys, install["cfg"], "inject", "--session", "--json")["session"]["watch"]
    assert third != first


def test_thousands_of_hot_notes_make_a_small_answer_that_watches_the_newest(install, capsys):
    """Issue 30: 5,000 notes in hot/ made a 566 KB answer and a 50 ms check at every session
    start. The answer stamps the newest 200 (every note it shows among them), lists 50 of the
    names left out with their count, and says the stamps cover part of hot/, so the plugin
    holds it for a minute only."""
    now = time.time()
    for i in range(5000):
        note = install["hot"] / f"n{i:04d}.md"
        note.write_text(f"# N{i}\n\n" + "x" * 200 + "\n")
        os.utime(note, (now - i, now - i))  # n0000 the newest
    code, out = run(capsys, install["cfg"], "inject", "--session", "--json")
    assert code == 0 and len(out.encode()) < 64 * 1024
    doc = json.loads(out)
    session = doc["session"]
    assert session["watch_partial"] == {"notes": 5000, "stamped": 200, "valid_seconds": 60}
    watched = {w["path"] for w in session["watch"]}
    notes = {p for p in watched if p.startswith(str(install["hot"]) + os.sep)}
    assert notes == {str(install["hot"] / f"n{i:04d}.md") for i in range(200)}
    assert {str(install["hot"] / name) for name in doc["included"]} <= notes
    assert doc["omitted_count"] == 5000 - len(doc["included"]) and len(doc["omitted"]) == 50
    # a few notes: each stamped, nothing partial (the plugin's check holds until a change)
    for note in install["hot"].iterdir():
        if note.name >= "n0003.md":
            note.unlink()
    session = run_json(capsys, install["cfg"], "inject", "--session", "--json")["session"]
    assert "watch_partial" not in session
    assert (
        sum(1 for w in session["watch"] if w["path"].startswith(str(install["hot"]) + os.sep)) == 3
    )


def test_bootstrap_limits_follow_an_agents_own_entry():
    oc = {
        "agents": {
            "defaults": {"bootstrapMaxChars": 5000, "bootstrapTotalMaxChars": 9000},
            "entries": {"ops": {"bootstrapTotalMaxChars": 3000}},
        }
    }
    assert bootstrap_limits(oc, "main") == (5000, 9000)
    assert bootstrap_limits(oc, "ops") == (5000, 3000)
    assert bootstrap_limits({}, "main") == (20_000, 60_000)  # OpenClaw's defaults
    budget = bootstrap_budget({"USER.md": "u" * 9000, "MEMORY.md": "m" * 100}, 5000, 9000)
    assert budget.used == 4000 + 100  # USER.md's fixed cap


@given(
    own=st.integers(0, 100_000),
    total=st.integers(1, 100_000),
    used=st.integers(0, 100_000),
)
def test_session_budget_stays_within_both_budgets(own, total, used):
    budget = session_budget(own, BootstrapBudget(20_000, total, min(used, total)))
    assert 0 <= budget <= own and min(used, total) + budget <= total


@given(
    body=st.text(st.characters(blacklist_categories=("Cs",)), max_size=80),
    noise=st.text(max_size=40),
)
def test_a_note_whose_body_is_in_the_bootstrap_is_found_whatever_the_spacing(body, noise):
    note = f"# Title\n\n{body}\n"
    flat = " ".join(body.split())
    body_lines = [ln for ln in body.strip().splitlines() if ln.strip()]
    plain = body_lines and not body_lines[0].lstrip().startswith("#")
    if len(flat) >= 24 and plain:
        assert already_in(note, f"{noise}\n{'  '.join(body.split())}\n{noise}")
    assert not already_in(note, "")


def test_a_short_or_different_note_is_not_taken_for_a_repeat():
    assert not already_in("# T\n\nok\n", "ok ok ok")  # too short to tell
    assert not already_in("# T\n\nThe deploy moved to Thursday.\n", "The deploy moved.")


# --------------------------------------------------------------------------- recall: archive


def archive(install: dict[str, Path], rel: str) -> Path:
    """Archive a workspace note as expire does: a journaled move in an ``expire:`` batch."""
    paths = resolve_paths(load_config(str(install["cfg"])), {})
    paths.memoryd_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(paths.db)
    try:
        dst = install["ws"] / "memory-archive" / "2026-12" / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        mover_for(store, paths).move(install["ws"] / rel, dst, reason="test", batch="expire:t")
    finally:
        store.close()
    return dst


def recall_hits(install: dict[str, Path]) -> list[tuple[str, str, str]]:
    store = Store.open(install["root"] / "mstate" / "state.db")
    try:
        return store.conn.execute(
            "SELECT agent, memory_path, kind FROM hits ORDER BY id"
        ).fetchall()
    finally:
        store.close()


def test_recall_reaches_the_archive_restores_counts_once_and_can_be_undone(install, capsys):
    archived = archive(install, "memory/kayak.md")
    doc = run_json(capsys, install["cfg"], "recall", "--json", "kayak")
    assert doc["tier"] == "archive" and doc["hits_recorded"] == 1
    assert "restored to the workspace: memory/kayak.md" in doc["message"]
    assert doc["shown"][0]["now"] == "memory/kayak.md" and "June" in doc["shown"][0]["text"]
    assert (install["ws"] / "memory" / "kayak.md").is_file() and not archived.exists()
    assert recall_hits(install) == [("main", "memory/kayak.md", "recall")]
    # found again: now in the workspace, not the archive (the tiers have nothing either);
    # it says so (not "never recorded"), and neither moves nor counts it again
    again = run_json(capsys, install["cfg"], "recall", "--json", "kayak")
    assert again["tier"] == "workspace" and again["hits_recorded"] == 0
    assert again["message"].startswith("Already back in the workspace: memory/kayak.md")
    assert recall_hits(install) == [("main", "memory/kayak.md", "recall")]
    code, out = run(capsys, install["cfg"], "restore", "--last")
    assert code == 0 and archived.is_file(), out


def test_recall_peek_and_too_many_archived_matches_move_nothing(install, capsys):
    for name in ("a", "b", "c", "d"):
        (install["ws"] / "memory" / f"{name}.md").write_text(f"# {name}\n\nboat {name}\n")
        archive(install, f"memory/{name}.md")
    doc = run_json(capsys, install["cfg"], "recall", "--json", "boat")
    assert doc["tier"] == "archive" and doc["too_many"] and doc["hits_recorded"] == 0
    assert "Narrow the words" in doc["message"] and len(doc["shown"]) == 3
    peek = run_json(capsys, install["cfg"], "recall", "--json", "--peek", "boat", "d")
    assert peek["rotations"] == [] and not (install["ws"] / "memory" / "d.md").exists()
    assert recall_hits(install) == []


def test_recall_with_a_clear_leader_among_many_archived_matches_restores_it(install, capsys):
    """More than 3 archived notes match, one holds every word: it comes back (issue 28)."""
    for name in ("a", "b", "c", "d"):
        (install["ws"] / "memory" / f"{name}.md").write_text(f"# {name}\n\nboat {name}\n")
        archive(install, f"memory/{name}.md")
    (install["ws"] / "memory" / "ferry.md").write_text("# Ferry\n\nboat to Skye, ferry at 7\n")
    archive(install, "memory/ferry.md")
    doc = run_json(capsys, install["cfg"], "recall", "--json", "boat", "skye")
    assert doc["tier"] == "archive" and not doc["too_many"] and doc["hits_recorded"] == 1
    assert "restored to the workspace: memory/ferry.md" in doc["message"]
    assert "clearly leads" in doc["message"] and "memory/a.md" in doc["message"]
    assert doc["shown"][0]["now"] == "memory/ferry.md" and "Skye" in doc["shown"][0]["text"]
    assert all(d["now"] is None and "text" not in d for d in doc["shown"][1:])
    assert (install["ws"] / "memory" / "ferry.md").is_file()
    assert not (install["ws"] / "memory" / "a.md").exists()
    assert recall_hits(install) == [("main", "memory/ferry.md", "recall")]


def test_the_scanner_never_counts_a_memoryd_recall_call():
    """The tool counts its hit itself (memoryd recall); the scanner must not count it again,
    direct or wrapped by Tool Search's tool_call."""
    assert memory_tool("memoryd_recall") is None
    result = {
        "message": "1 note found in memoryd's archive; restored: memory/kayak.md",
        "shown": [{"path": "memory-archive/2026-12/memory/kayak.md", "now": "memory/kayak.md"}],
    }
    for name, payload in (
        ("memoryd_recall", result),
        ("tool_call", {"tool": "memoryd_recall", "result": result}),
    ):
        call = {
            "type": "message",
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "c1", "name": name, "arguments": {}}],
            },
        }
        answer = {
            "type": "message",
            "timestamp": "2026-12-01T10:00:01.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": name,
                "content": [{"type": "text", "text": json.dumps(payload)}],
                "details": payload,
            },
        }
        for line in (call, answer):
            parsed = parse_line(json.dumps(line).encode())
            assert not parsed.events, (name, parsed)
    # the same shape from memory_get is counted: the lines above are read, not skipped
    get = {"path": "memory/kayak.md", "text": "# Kayak\n\nJune."}
    call["message"]["content"][0]["name"] = "memory_get"
    call["message"]["content"][0]["arguments"] = {"path": "memory/kayak.md"}
    answer["message"].update(toolName="memory_get", details=get)
    answer["message"]["content"][0]["text"] = json.dumps(get)
    events = [e for line in (call, answer) for e in parse_line(json.dumps(line).encode()).events]
    assert events


# --------------------------------------------------------------------------- status


def test_status_json_has_the_plugins_facts(install, capsys):
    (install["hot"] / "deploy.md").write_text("# Deploy\n\nThursday.\n")
    archive(install, "memory/kayak.md")
    assert run(capsys, install["cfg"], "refresh", "--json")[0] == 0
    doc = run_json(capsys, install["cfg"], "status", "--json")
    assert doc["tiers"]["present"] and doc["tiers"]["hot"] == ["deploy.md"]
    assert doc["promotion"]["pending"] == 0 and doc["promotion"]["generated"]
    assert doc["archive"]["files"] == 1 and doc["archive"]["bytes"] > 0
    store = Store.open(install["root"] / "mstate" / "state.db")
    try:  # status counts by the same rule as restore on demand's list
        assert len(archived_files(store)) == doc["archive"]["files"]
    finally:
        store.close()
    assert "organize" in doc["jobs"]
    _code, text = run(capsys, install["cfg"], "status")
    assert "tier store:  1 hot" in text and "archive:     1 file," in text


@pytest.mark.timeout(30)
def test_bootstrap_files_read_only_when_regular_followed_when_linked(tmp_path: Path) -> None:
    """A FIFO named AGENTS.md must not hang the session-start injection (a plain read would
    block until a writer came); a symlinked MEMORY.md is read, as OpenClaw reads it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "AGENTS.md")
    (tmp_path / "kept.md").write_text("# Memory\nthe home network is 10.0.0.0/24\n")
    (ws / "MEMORY.md").symlink_to(tmp_path / "kept.md")
    (ws / "SOUL.md").mkdir()
    files = read_bootstrap(ws)
    assert "AGENTS.md" not in files and "SOUL.md" not in files
    assert files["MEMORY.md"].endswith("10.0.0.0/24\n")


def test_notes_back_from_an_undone_run_are_listed_no_more_than_recall_shows(install, capsys):
    """Found nowhere but among the notes an undone expire run brought back, recall listed
    every one of them, each with its text: a large run past the output the plugin reads.
    It shows at most ``tiers.recall_max_files`` (3), as every other answer does."""
    for i in range(6):
        (install["ws"] / "memory" / f"kayak{i}.md").write_text(f"# Kayak {i}\nkayak trip\n")
        archive(install, f"memory/kayak{i}.md")
    code, out = run(capsys, install["cfg"], "restore", "--last")
    assert code == 0, out
    doc = run_json(capsys, install["cfg"], "recall", "--json", "kayak")
    assert doc["tier"] == "workspace" and doc["hits_recorded"] == 0
    assert len(doc["shown"]) == 3, [d["note"] for d in doc["shown"]]
