"""memoryd against what OpenClaw's current source does (docs/notes/fidelity.md).

Each test builds a small install the way OpenClaw lays one out, in its own words (the
transcript lines come from tests/support/transcripts.py), and runs the real ``memoryd`` on it.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.fidelity_install import hit_counts, memoryd, note, session_lines, transcript
from support.transcripts import T0, call, header, make_install, result, search_payload

# --------------------------------------------------------------------------- workspaces


def _main_and_research(tmp_path: Path) -> tuple[Path, Path, Path]:
    """An install of two agents, ``main`` the default, with ``agents.defaults.workspace``
    ``~/assistant``: its home, state folder and that shared workspace (not made here)."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    agents = {"id": "main", "default": True}, {"id": "research"}
    config = {"agents": {"defaults": {"workspace": "~/assistant"}, "list": list(agents)}}
    (state / "openclaw.json").write_text(json.dumps(config))
    return home, state, home / "assistant"


def test_a_second_agent_under_the_shared_default_workspace_is_not_counted_for_main(tmp_path):
    """``agents.defaults.workspace`` is the default agent's; another agent without a
    workspace of its own works in ``<defaults.workspace>/<id>`` (OpenClaw's
    resolveAgentWorkspaceDir). Its hits on its own ``memory/notes.md`` are not hits on
    main's file of the same name."""
    home, state, shared = _main_and_research(tmp_path)
    note(shared, "memory/notes.md")
    note(shared / "research", "memory/notes.md")
    note(shared / "research", "memory/papers.md")
    transcript(state, "main", "s-main", [])
    transcript(state, "research", "s-res", ["memory/notes.md"] * 3 + ["memory/papers.md"])

    doc = memoryd("hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {}  # main's notes were never searched
    assert doc["never_hit"] == ["memory/notes.md"]
    # The second agent's hits, on its own files.
    doc = memoryd("hits", "--all", "--agent", "research", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/notes.md": 3, "memory/papers.md": 1}
    assert doc["never_hit"] == []


def test_an_agent_whose_own_workspace_was_never_made_reads_the_shared_one(tmp_path):
    """The same roster with no ``<defaults>/research`` folder at all (an install laid out by
    hand, or by a tool that keeps one workspace for every agent): the second agent's lookups
    name the notes of the one workspace there is, and count there, not on a missing folder."""
    home, state, shared = _main_and_research(tmp_path)
    note(shared, "memory/notes.md")
    note(shared, "MEMORY.md")
    transcript(state, "main", "s-main", ["MEMORY.md"])
    transcript(state, "research", "s-res", ["memory/notes.md"] * 2)

    doc = memoryd("hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/notes.md": 2, "MEMORY.md": 1}
    assert doc["never_hit"] == []


def test_the_only_agent_of_a_renamed_install_owns_the_default_workspace(tmp_path):
    """A roster of one agent that is not called ``main`` makes it the default agent: its
    workspace is ``~/.openclaw/workspace``, not ``<state>/workspace-<id>``."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text(json.dumps({"agents": {"list": [{"id": "jarvis"}]}}))
    ws = state / "workspace"
    note(ws, "memory/2026-02-20.md")
    note(ws, "MEMORY.md")
    transcript(state, "jarvis", "s1", ["memory/2026-02-20.md", "memory/2026-02-20.md"])

    doc = memoryd("hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/2026-02-20.md": 2}
    assert doc["never_hit"] == ["MEMORY.md"]


def test_a_moved_state_folder_keeps_the_default_workspace_in_home(tmp_path):
    """``$OPENCLAW_STATE_DIR`` moves the state, not the workspace: with none configured it
    stays ``$OPENCLAW_HOME/.openclaw/workspace`` (``workspace-<profile>`` under
    ``$OPENCLAW_PROFILE``)."""
    home = tmp_path / "home"
    state = tmp_path / "srv" / "openclaw-state"
    state.mkdir(parents=True)
    ws = home / ".openclaw" / "workspace-lab"
    note(ws, "memory/lab.md")
    note(ws, "memory/idle.md")
    transcript(state, "main", "s1", ["memory/lab.md"])

    env = {"HOME": str(home), "OPENCLAW_STATE_DIR": str(state), "OPENCLAW_PROFILE": "lab"}
    doc = memoryd("hits", "--all", env=env)
    assert hit_counts(doc) == {"memory/lab.md": 1}
    assert doc["never_hit"] == ["memory/idle.md"]


def test_an_agent_id_written_in_capitals_still_finds_its_workspace(tmp_path):
    """OpenClaw files agent ``Ops`` under ``agents/ops/``; its ``workspace`` in the roster
    belongs to that folder's agent."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    ops_ws = tmp_path / "ops-notes"
    (state / "openclaw.json").write_text(
        json.dumps({"agents": {"entries": {"Ops": {"workspace": str(ops_ws)}}}})
    )
    note(ops_ws, "memory/runbook.md")
    transcript(state, "ops", "s1", ["memory/runbook.md"])

    doc = memoryd("hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/runbook.md": 1}


# --------------------------------------------------------------------------- results


def test_wiki_results_beside_memory_results_are_not_workspace_hits(tmp_path):
    """``memory_search corpus=all`` merges memory results (``corpus: "memory"``) with the
    memory-wiki vault's (``corpus: "wiki"``, paths relative to the vault), and
    ``memory_get corpus=wiki`` reads a vault page: only the memory corpus is the workspace's.
    A vault that keeps its own ``memory/people/`` pages does not add hits to the workspace's
    notes of the same name."""
    sessions, _ws, cfg = make_install(
        tmp_path, ["memory/people/alice.md", "memory/people/bob.md", "MEMORY.md"]
    )

    def item(path: str, corpus: str) -> dict:
        return {"path": path, "startLine": 1, "endLine": 4, "score": 0.7, "snippet": "Alice",
                "source": "memory", "corpus": corpus}  # fmt: skip

    both = search_payload(
        [item("memory/people/bob.md", "memory"), item("memory/people/alice.md", "wiki")]
    )
    page = {"corpus": "wiki", "path": "memory/people/alice.md", "title": "Alice", "kind": "entity",
            "text": "# Alice\nlikes sailing", "fromLine": 1, "lineCount": 2}  # fmt: skip
    note_read = {"path": "memory/people/bob.md", "text": "# Bob", "from": 1, "lines": 1}
    lines = [
        header("s1"),
        call("c1", ts=T0),
        result("c1", both, T0 + 1, details="same"),
        call("c2", "memory_get", path="memory/people/alice.md", ts=T0 + 2),
        result("c2", page, T0 + 3, tool="memory_get"),
        call("c3", "memory_get", path="memory/people/bob.md", ts=T0 + 4),
        result("c3", note_read, T0 + 5, tool="memory_get", details="same"),
    ]
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"memory/people/bob.md": 2}
    assert doc["never_hit"] == ["MEMORY.md", "memory/people/alice.md"]


# --------------------------------------------------------------------------- whose traffic


def test_a_dream_diary_run_is_not_the_users_recall(tmp_path):
    """OpenClaw's dreaming (on by default) writes its diary through subagent runs keyed
    ``…:dreaming-narrative-<phase>-<hash>-<ms>``; their memory lookups are not the user's
    (OpenClaw keeps these sessions out of its own index, as it does cron runs)."""
    sessions, _ws, cfg = make_install(tmp_path, ["memory/2026-02-20.md", "MEMORY.md"])
    diary = "agent:main:dreaming-narrative-light-3f9a0c1d2e4b-1772010842000"
    (sessions / "sessions.json").write_text(
        json.dumps(
            {
                "agent:main:main": {"sessionId": "s-user", "updatedAt": 1772010900000},
                diary: {"sessionId": "s-dream", "updatedAt": 1772010950000},
            }
        )
    )
    for session, hits in (("s-user", ["MEMORY.md"]), ("s-dream", ["memory/2026-02-20.md"] * 4)):
        lines = [header(session)]
        for i, rel in enumerate(hits):
            cid = f"toolu_{session}_{i}"
            lines += [call(cid, ts=T0 + i), result(cid, search_payload([rel]), T0 + i + 0.5)]
        (sessions / f"{session}.jsonl").write_bytes(b"".join(lines))

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"MEMORY.md": 1}
    assert doc["never_hit"] == ["memory/2026-02-20.md"]


def test_active_memory_helper_runs_in_the_store_follow_include_active_memory(tmp_path):
    """The Active Memory plugin recalls before every reply through a helper run keyed
    ``<parent key>:active-memory:<hash>``; on a store install those runs land in the agent's
    SQLite store (and its archives once cleaned up) beside the user's sessions. They count only
    with ``openclaw.include_active_memory = true``, as their JSONL folder always did."""
    from support.openclaw_store import AgentStore

    sessions, _ws, cfg = make_install(tmp_path, ["memory/2026-02-20.md", "MEMORY.md"])
    state = sessions.parent.parent.parent
    helper = "agent:main:telegram:direct:42:active-memory:5d41402abc4b"
    with AgentStore(state, "main", schema=24) as store:
        as_text = [line.decode().rstrip("\n") for line in session_lines("s-user", ["MEMORY.md"])]
        store.add_session(as_text, key="agent:main:telegram:direct:42")
        for sid in ("am-1", "am-2"):
            lines = session_lines(sid, ["memory/2026-02-20.md"] * 2)
            store.add_session([line.decode().rstrip("\n") for line in lines], key=helper)
        store.delete_session("am-2")  # the helper's cleanup: an archive row and a .zst file

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"MEMORY.md": 1}

    cfg2 = tmp_path / "with-helper.toml"
    cfg2.write_text(
        cfg.read_text().replace("[openclaw]\n", "[openclaw]\ninclude_active_memory = true\n")
        .replace(f'dir = "{tmp_path / "md"}"', f'dir = "{tmp_path / "md2"}"')
    )  # fmt: skip
    doc = memoryd("--config", str(cfg2), "hits", "--all", env={})
    assert hit_counts(doc) == {"MEMORY.md": 1, "memory/2026-02-20.md": 4}


def test_active_memory_transcripts_kept_by_the_plugin_are_read_when_asked(tmp_path):
    """Newer builds keep the helper's transcripts (``persistTranscripts: true``) under
    ``<state>/plugins/active-memory/transcripts/agents/<id>/active-memory/``, no longer in
    ``sessions/active-memory/``: ``include_active_memory = true`` reads them there."""
    sessions, _ws, cfg = make_install(
        tmp_path, ["memory/people.md"], "include_active_memory = true"
    )
    state = sessions.parent.parent.parent
    kept = state / "plugins" / "active-memory" / "transcripts" / "agents" / "main" / "active-memory"
    kept.mkdir(parents=True)
    (kept / "am-7.jsonl").write_bytes(b"".join(session_lines("am-7", ["memory/people.md"])))

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"memory/people.md": 1}


def test_main_beside_a_default_agent_leaves_the_existing_default_workspace_primary(tmp_path):
    """With another agent marked ``default: true``, main works in ``<defaults>/main``; when
    that folder was never made, the primary workspace (what ``hits``, ``expire`` and
    ``reflect`` manage) is the default agent's, where the notes are, not a missing folder."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    state.mkdir(parents=True)
    (state / "openclaw.json").write_text(
        json.dumps(
            {
                "agents": {
                    "defaults": {"workspace": "~/ws"},
                    "list": [{"id": "work", "default": True}, {"id": "main"}],
                }
            }
        )
    )
    note(home / "ws", "memory/plans.md")
    note(home / "ws", "memory/idle.md")
    transcript(state, "main", "s-main", [])
    transcript(state, "work", "s-work", ["memory/plans.md", "memory/plans.md"])

    doc = memoryd("hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/plans.md": 2}
    assert doc["never_hit"] == ["memory/idle.md"]


def test_results_of_another_corpus_in_a_cut_text_are_not_workspace_hits(tmp_path):
    """A long answer is cut in the transcript (its ``details`` dropped, its text ending
    mid-JSON): the paths are recovered from the text, and a path whose result names another
    corpus (before or after it, before the cut) is still not the workspace's. A wiki page read
    by ``memory_get corpus=wiki`` is long, so it is the answer most often cut."""
    sessions, _ws, cfg = make_install(
        tmp_path, ["memory/people/alice.md", "memory/people/bob.md", "MEMORY.md"]
    )
    long = 'sailing {every} "summer" ' * 400
    page = json.dumps({"corpus": "wiki", "path": "memory/people/alice.md", "title": "Alice",
                       "kind": "entity", "text": long, "fromLine": 1})  # fmt: skip
    mixed = json.dumps(
        {
            "results": [
                {"path": "memory/people/alice.md", "snippet": long[:300], "source": "memory",
                 "corpus": "wiki"},
                {"corpus": "wiki", "path": "MEMORY.md", "snippet": "{", "score": 0.8},
                {"path": "memory/people/bob.md", "startLine": 1, "endLine": 4, "score": 0.7,
                 "snippet": "Bob", "source": "memory", "corpus": "memory"},
                {"path": "memory/people/alice.md", "snippet": long},
            ],
            "corpora": [{"corpus": "memory", "outcome": "ok"}, {"corpus": "wiki", "outcome": "ok"}],
        },
        indent=2,
    )  # fmt: skip
    cut_at = mixed.rindex('"snippet": "sailing') + 50  # in the last result's snippet
    lines = [
        header("s1"),
        call("c1", "memory_get", path="memory/people/alice.md", ts=T0),
        result("c1", page[:2000] + "\n[Content truncated]", T0 + 1, tool="memory_get"),
        call("c2", ts=T0 + 2),
        result("c2", mixed[:cut_at] + "\n[Content truncated]", T0 + 3),
    ]
    (sessions / "s1.jsonl").write_bytes(b"".join(lines))

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    # bob's memory result and the last (memory) result of alice, cut in its snippet, count
    assert hit_counts(doc) == {"memory/people/bob.md": 1, "memory/people/alice.md": 1}
    assert doc["never_hit"] == ["MEMORY.md"]


def test_counting_synthetic_traffic_still_leaves_out_the_helper_runs_when_not_included(tmp_path):
    """``count_synthetic = true`` counts cron, heartbeat and dream-diary sessions; the Active
    Memory helper's runs stay out unless ``include_active_memory = true``, on a store install
    as on a JSONL one (whose helper folder is then not read at all)."""
    from support.openclaw_store import AgentStore

    sessions, _ws, cfg = make_install(
        tmp_path, ["memory/2026-02-20.md", "memory/ops.md", "MEMORY.md"], "count_synthetic = true"
    )
    state = sessions.parent.parent.parent

    def as_text(session: str, hits: list[str]) -> list[str]:
        return [line.decode().rstrip("\n") for line in session_lines(session, hits)]

    with AgentStore(state, "main", schema=24) as store:
        store.add_session(as_text("s-user", ["MEMORY.md"]), key="agent:main:telegram:direct:42")
        store.add_session(as_text("s-cron", ["memory/ops.md"]), key="agent:main:cron:nightly")
        helper = "agent:main:telegram:direct:42:active-memory:5d41402abc4b"
        for sid in ("am-1", "am-2"):
            store.add_session(as_text(sid, ["memory/2026-02-20.md"] * 2), key=helper)
        store.delete_session("am-2")  # an archive row and a .zst file

    doc = memoryd("--config", str(cfg), "hits", "--all", env={})
    assert hit_counts(doc) == {"MEMORY.md": 1, "memory/ops.md": 1}
    assert doc["never_hit"] == ["memory/2026-02-20.md"]


def test_an_agent_named_in_other_case_is_openclaws_lower_case_agent(tmp_path):
    """OpenClaw files agent ``Work`` under ``agents/work/``: ``openclaw.agents = ["Work"]``
    and ``hits --agent Work`` follow that agent, not a folder that is not there."""
    home = tmp_path / "home"
    state = home / ".openclaw"
    ws = state / "workspace"
    note(ws, "memory/plans.md")
    transcript(state, "work", "s-work", ["memory/plans.md"] * 2)
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(
        f'[openclaw]\nagents = ["Work"]\nworkspace = "{ws}"\n[state]\ndir = "{tmp_path / "st"}"\n'
    )
    doc = memoryd("--config", str(cfg), "hits", "--all", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/plans.md": 2}
    doc = memoryd("--config", str(cfg), "hits", "--all", "--agent", "Work", env={"HOME": str(home)})
    assert hit_counts(doc) == {"memory/plans.md": 2}
