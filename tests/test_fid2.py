"""memoryd against OpenClaw's current source, second pass (docs/notes/fid2.md).

Black-box: each test lays out a small install as OpenClaw does and runs the real ``memoryd``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_fidelity import hit_counts, memoryd, note, transcript

pytestmark = pytest.mark.subprocess


def _install(tmp_path: Path, openclaw_json: dict) -> tuple[Path, Path]:
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text(json.dumps(openclaw_json))
    return home, state


# --------------------------------------------------------------------------- the roster


def test_a_keyed_roster_is_read_alone_when_an_old_list_is_left_beside_it(tmp_path):
    """OpenClaw reads ``agents.entries`` instead of ``agents.list`` when both are there
    (readAgentRosterProperty): a workspace that only the stale list names is not main's;
    main, the only keyed agent, keeps the default workspace."""
    stale = tmp_path / "old-notes"
    home, state = _install(
        tmp_path,
        {"agents": {"entries": {"main": {}}, "list": [{"id": "main", "workspace": str(stale)}]}},
    )
    note(stale, "memory/old.md")
    ws = state / "workspace"
    note(ws, "memory/today.md")
    note(ws, "MEMORY.md")
    transcript(state, "main", "s1", ["memory/today.md", "memory/today.md"])

    doc = memoryd("hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/today.md": 2}
    assert doc["never_hit"] == ["MEMORY.md"]


def test_the_first_entry_of_an_id_decides_even_without_a_workspace(tmp_path):
    """Two entries of one agent (``"main"`` then ``"Main"``): OpenClaw takes the first
    (resolveAgentEntry), which names no workspace, so main keeps the default one; the
    second entry's folder is never main's."""
    other = tmp_path / "elsewhere"
    home, state = _install(
        tmp_path, {"agents": {"list": [{"id": "main"}, {"id": "Main", "workspace": str(other)}]}}
    )
    note(other, "memory/today.md")
    ws = state / "workspace"
    note(ws, "memory/today.md")
    note(ws, "memory/idle.md")
    transcript(state, "main", "s1", ["memory/today.md"])

    doc = memoryd("hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/today.md": 1}
    assert doc["never_hit"] == ["memory/idle.md"]
