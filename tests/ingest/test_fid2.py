"""memoryd against OpenClaw's current source, second pass (docs/notes/fid2.md).

Black-box: each test lays out a small install as OpenClaw does and runs the real ``memoryd``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.fidelity_install import hit_counts, memoryd, note, session_lines, transcript
from support.transcripts import make_install

pytestmark = pytest.mark.subprocess


def hits_of(home: Path, *args: str) -> tuple[dict[str, int], list[str]]:
    """``memoryd hits --all [args]`` for the install under ``home``: counts, never-hit files."""
    doc = memoryd("hits", "--all", *args, env={"HOME": str(home)})
    return hit_counts(doc), doc["never_hit"]


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

    assert hits_of(home) == ({"memory/today.md": 2}, ["MEMORY.md"])


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

    assert hits_of(home) == ({"memory/today.md": 1}, ["memory/idle.md"])


# --------------------------------------------------------------------------- import archive

UUID_A = "3f0c2a9e-6b1d-4e57-9a43-0d8b6f2e7c11"
UUID_B = "9a1b2c3d-0000-4e57-9a43-0d8b6f2e7c11"


def _archived(sessions: Path, name: str, session: str, hits: list[str]) -> None:
    """A transcript the SQLite upgrade moved to the import archive under ``name``."""
    archive = sessions.parent / "session-sqlite-import-archive"
    archive.mkdir(exist_ok=True)
    (archive / name).write_bytes(b"".join(session_lines(session, hits)))


def test_an_import_archive_name_with_a_retry_suffix_is_read(tmp_path):
    """OpenClaw names a moved transcript ``<keySlug>.<file>.imported-<Date.now()>`` and adds
    ``.<attempt>`` when that name is taken (planSessionJsonlArchiveMove): such a copy is
    read like the others."""
    sessions, _ws, cfg = make_install(tmp_path, ["memory/a.md", "memory/b.md"])
    _archived(sessions, f"agent_main_main.{UUID_A}.jsonl.imported-1772010842000", UUID_A,
              ["memory/a.md"])  # fmt: skip
    _archived(sessions, f"agent_main_main.{UUID_B}.jsonl.imported-1772010842000.1", UUID_B,
              ["memory/b.md", "memory/b.md"])  # fmt: skip

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"memory/a.md": 1, "memory/b.md": 2}


def test_a_dotted_key_in_an_import_name_is_read_whole(tmp_path):
    """Session keys keep their dots in the slug (only ``[^A-Za-z0-9_.-]`` becomes ``_``): the
    Active Memory helper's run for an email session, ``agent:main:email:john.doe@example.com
    :active-memory:<hash>``, is ``agent_main_email_john.doe_example.com_active-memory_<hash>``.
    The key is all that comes before the original file's name, dots and all, also when the
    copy's header names another session than its file name; the helper's runs stay out
    (``include_active_memory = false``), the user's own email session counts."""
    sessions, _ws, cfg = make_install(tmp_path, ["memory/ops.md", "memory/people.md"])
    user = "agent_main_email_john.doe_example.com"
    _archived(sessions, f"{user}.{UUID_A}.jsonl.imported-1772010842000", UUID_A,
              ["memory/people.md"])  # fmt: skip
    helper = f"{user}_active-memory_5d41402abc4b.{UUID_B}.jsonl.imported-1772010842001"
    _archived(sessions, helper, "am-7", ["memory/ops.md"] * 3)

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"memory/people.md": 1}
    assert doc["never_hit"] == ["memory/ops.md"]


# --------------------------------------------------------------------------- Active Memory


def test_the_active_memory_transcript_dir_setting_is_followed(tmp_path):
    """The plugin keeps persisted transcripts in ``transcriptDir`` (its config in
    ``plugins.entries.active-memory.config``), a folder under
    ``<state>/plugins/active-memory/transcripts/agents/<id>/``: its parts are kept, ``..``,
    ``.`` and empty parts dropped (normalizeTranscriptDir), so it never leaves that folder.
    ``include_active_memory = true`` reads it there, and nothing the setting points at
    outside that folder."""
    sessions, _ws, cfg = make_install(
        tmp_path, ["memory/people.md", "memory/outside.md"], "include_active_memory = true"
    )
    state = sessions.parent.parent.parent
    (state / "openclaw.json").write_text(
        json.dumps(
            {
                "plugins": {
                    "entries": {
                        "active-memory": {
                            "config": {
                                "persistTranscripts": True,
                                "transcriptDir": "../../recall/runs",
                            }
                        }
                    }
                }
            }
        )
    )
    base = state / "plugins" / "active-memory" / "transcripts" / "agents" / "main"
    kept = base / "recall" / "runs"
    kept.mkdir(parents=True)
    (kept / "am-7.jsonl").write_bytes(b"".join(session_lines("am-7", ["memory/people.md"])))
    # where `../../recall/runs` would lead if `..` were followed: not the plugin's
    escaped = base.parent.parent / "recall" / "runs"
    escaped.mkdir(parents=True)
    (escaped / "x.jsonl").write_bytes(b"".join(session_lines("x", ["memory/outside.md"])))

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"memory/people.md": 1}


# --------------------------------------------------------------------------- main without a marker


def _roster_without_marker(tmp_path: Path) -> tuple[Path, Path]:
    return _install(
        tmp_path,
        {"agents": {"defaults": {"workspace": "~/ws"}, "entries": {"main": {}, "work": {}}}},
    )


@pytest.mark.parametrize("mains", ["", "main"], ids=["earlier-builds", "current-builds"])
def test_main_of_a_roster_without_marker_is_found_where_its_notes_are(tmp_path, mains):
    """Builds that made ``main`` the default agent when no entry is marked ``default: true``
    keep its notes in ``agents.defaults.workspace`` itself. Current OpenClaw gives no agent
    of a roster of several the default workspace without a marker (resolveAgentWorkspaceDir:
    only a legacy data owner inherits it): ``main`` works in ``<defaults>/main``, and the
    shared folder exists (it holds the agents' folders) but holds no notes. Either way
    main's notes are found, and the other agent's in ``<defaults>/<id>``."""
    home, state = _roster_without_marker(tmp_path)
    ws = home / "ws"
    note(ws / mains, "memory/plans.md")
    note(ws / mains, "MEMORY.md")
    note(ws / "work", "memory/plans.md")
    transcript(state, "main", "s-main", ["memory/plans.md"])
    transcript(state, "work", "s-work", ["memory/plans.md"] * 2)

    assert hits_of(home) == ({"memory/plans.md": 1}, ["MEMORY.md"])
    assert hits_of(home, "--agent", "work") == ({"memory/plans.md": 2}, [])


def test_main_of_a_roster_without_marker_or_shared_folder_has_its_state_folder(tmp_path):
    """The same roster without ``agents.defaults.workspace``: current builds put main in
    ``<state>/workspace-main``, earlier ones in ``~/.openclaw/workspace``; the folder
    holding the notes decides."""
    home, state = _install(tmp_path, {"agents": {"entries": {"main": {}, "work": {}}}})
    own = state / "workspace-main"
    note(own, "memory/plans.md")
    note(own, "MEMORY.md")
    transcript(state, "main", "s-main", ["memory/plans.md"] * 3)
    transcript(state, "work", "s-work", [])

    assert hits_of(home) == ({"memory/plans.md": 3}, ["MEMORY.md"])
