"""The plugin's live run, replayed without Node: the committed record and its transcripts.

``python -m tests.live.plugin_live record`` drove the real OpenClaw with memoryd's plugin and
wrote ``tests/fixtures/openclaw-plugin/<version>/``: ``record.json`` (what the model was sent,
the tool's answer, the commands' replies, the hits, the latency samples, openclaw.json before
the install and after the uninstall) and ``transcripts.tar.xz`` (OpenClaw's session store of
that run and the workspace). Here the same judge as the live run reads the record, and
memoryd's scanner reads the real transcripts: the recall tool's call must add no hit (the
tool counted its own), so the recall is counted exactly once.
"""

from __future__ import annotations

import copy
import json
import os
import sqlite3
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from support.plugin_record import ARCHIVED, HOT_MARK, problems, venv_problems

pytestmark = pytest.mark.subprocess

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw-plugin"
RECORDS = sorted(FIXTURES.glob("*/record.json"))


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_there_is_a_recorded_run():
    assert RECORDS, f"no record under {FIXTURES} (python -m tests.live.plugin_live record)"


def judged(rec: dict, like: dict) -> list[str]:
    """The live check's judgement of ``rec``, with the checks of the time ``like`` was
    recorded: a record made before issue 35 has no directory line nor cost, and one made
    before the /refresh reply reached the new session's chat has no such reply (the live
    check always judges with every check)."""
    return problems(rec, issue35="cost" in like, issue29="reply_in_history" in like["refresh"])


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.parent.name)
def test_the_recorded_run_passes_the_live_check(path: Path):
    rec = load(path)
    assert judged(rec, rec) == []


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.parent.name)
def test_the_judge_fails_a_record_that_falls_short(path: Path):
    rec = load(path)
    breakages = {
        "second turn": lambda r: r["second_turn"][0].update(body_has_hot_mark=True),
        "first turn": lambda r: r["first_turn"][0].update(last_user="hello"),
        "counted twice": lambda r: r["hits"].append(dict(r["hits"][0], kind="get")),
        "broken config": lambda r: r["broken"].update(status="error"),
        "no reset": lambda r: r["refresh"].update(reset_marked=False),
        "no reply in the chat": lambda r: r["refresh"].update(reply_in_history="moved: none"),
        "not seen loaded": lambda r: (
            r["refresh"].update(reply_in_history=r["refresh"]["reply"])
            or r["status_json"].setdefault("plugin", {}).update(last_seen=None)
        ),
        "uninstall": lambda r: r["uninstall"].update(same_bytes=False),
        "log lines": lambda r: r["broken"]["log"].append(r["broken"]["log"][0]),
    }
    for what, breaks in breakages.items():
        broken = copy.deepcopy(rec)
        breaks(broken)
        assert judged(broken, broken), what


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.parent.name)
def test_the_recorded_facts_are_what_the_issue_asks(path: Path):
    rec = load(path)
    assert HOT_MARK in rec["first_turn"][0]["last_user"]
    assert not any(r["body_has_hot_mark"] for r in rec["second_turn"])
    assert rec["hits"] == [{"agent": "main", "kind": "recall", "path": ARCHIVED}]
    assert rec["uninstall"]["before"] == rec["uninstall"]["after"]
    lat = rec["latency"]
    assert lat["cached_p95"] is not None and lat["cached_p95"] <= 150


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.parent.name)
def test_the_scanner_adds_nothing_for_the_recall_tools_call(path: Path, tmp_path: Path):
    copy_root = tmp_path / "copy"
    with tarfile.open(path.parent / "transcripts.tar.xz", "r:xz") as tar:
        tar.extractall(copy_root, filter="data")
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(copy_root / 'state'))}\n"
        f"workspace = {json.dumps(str(copy_root / 'ws'))}\n"
        f"[state]\ndir = {json.dumps(str(tmp_path / 'md'))}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "MEMORYD_"))}
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", str(cfg), "scan", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    scan = json.loads(proc.stdout)
    assert scan["files_read"] > 0 and scan["failed_sources"] == []  # the store was read
    conn = sqlite3.connect(tmp_path / "md" / "state.db")
    try:
        hits = conn.execute("SELECT memory_path, kind FROM hits").fetchall()
    finally:
        conn.close()
    # The recalled note's hits are the agent's later reads of it by its path (one a timed
    # session of the read hook's turn, one more in the memoryd-missing turn) and that turn's
    # search: the recall's own call adds none (memoryd writes that hit itself).
    rec = load(path)
    later = {"get": len(rec["read_latency"]["hook_ms"]) + 1, "search": 1} \
        if "read_latency" in rec else {}
    assert Counter(kind for p, kind in hits if p == ARCHIVED) == later
    # the transcripts hold the tool's call and its answer (what the scanner had to skip)
    store = next((copy_root / "state" / "agents").rglob("*.sqlite"), None)
    assert store is not None


def _as_after_issue35(rec: dict) -> dict:
    """The committed record with the facts a run since issue 35 adds, as the live run writes
    them (the recall tool deferred, found by tool_search, called through tool_call)."""
    rec = copy.deepcopy(rec)
    rec["first_turn"][0]["tools"].remove("memoryd_recall")
    rec["directory_line"] = (
        '- memoryd_recall (memoryd): Recall past notes: "did we discuss X before?", "what was '
        'the conclusion on Y?", anything not in this chat.'
    )
    answer = rec["recall_turn"][-1]["tool_results"][-1]
    rec["recall_turn"] = [
        {"reply": {"tool": "tool_search", "id": "c1"}, "tool_results": [], "tool_result_ids": []},
        {
            "reply": {"tool": "tool_call", "id": "c2", "arguments": {"id": "memoryd_recall"}},
            "tool_results": ['[{"id": "memoryd_recall"}]'],
            "tool_result_ids": ["c1"],
        },
        {
            "reply": "noted",
            "tool_results": ['[{"id": "memoryd_recall"}]', answer],
            "tool_result_ids": ["c1", "c2"],
        },
    ]
    rec["cost"] = {
        "on": {"requests": 9, "standing_max": 190, "notes_per_session_max": 260},
        "off": {"requests": 1, "schema_max": 361},
    }
    return rec


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: p.parent.name)
def test_the_judge_of_issue_35_fails_a_costly_or_unreachable_recall_tool(path: Path):
    rec = load(path)
    if "cost" not in rec:  # recorded before issue 35: the tool offered by name, its schema
        assert problems(rec) != []  # in every request
        rec = _as_after_issue35(rec)
    assert judged(rec, rec) == []
    search_id = next(
        x["reply"]["id"] for x in rec["recall_turn"]
        if isinstance(x["reply"], dict) and x["reply"].get("tool") == "tool_search"
    )
    breakages = {
        "too dear": lambda r: r["cost"]["on"].update(standing_max=201),
        "no trigger": lambda r: r.update(directory_line="- memoryd_recall (memoryd): Recall."),
        "offered by name": lambda r: r["first_turn"][0]["tools"].append("memoryd_recall"),
        "not found": lambda r: [
            x.update(
                tool_results=[
                    "[]" if i == search_id else t
                    for i, t in zip(x["tool_result_ids"], x["tool_results"], strict=True)
                ]
            )
            for x in r["recall_turn"]
        ],
        "not via tool_call": lambda r: r["recall_turn"][1]["reply"].update(tool="exec"),
        "off not measured": lambda r: r["cost"]["off"].update(schema_max=0),
    }
    for what, breaks in breakages.items():
        broken = copy.deepcopy(rec)
        breaks(broken)
        assert judged(broken, broken), what


def test_the_venv_judge_fails_a_plugin_that_dies_with_its_venv():
    """Issue 29: the facts of a run where the plugin outlived its venv pass; each way it
    could fall short fails."""
    good = {
        "install_exit": 0,
        "command": "/tmp/x/plugin-live/venv/bin/memoryd",
        "gone_trouble": [],
        "gone_warnings": ["[plugins] memoryd: /tmp/x/venv/bin/memoryd is missing or not "
                          "executable (...): install memoryd again, then run `memoryd plugin "
                          "install`"],
        "gone_reply": "memoryd status failed: ...\n... then run `memoryd plugin install`",
        "reinstall_exit": 0,
        "again_trouble": [],
        "again_hot_notes": True,
    }
    assert venv_problems(good) == []
    breakages = {
        "inside the old venv": {"command": "/x/.venv/lib/python3.11/site-packages/memoryd"},
        "doctor": {"gone_trouble": ["run openclaw doctor --fix"]},
        "silent": {"gone_warnings": []},
        "twice": {"gone_warnings": good["gone_warnings"] * 2},
        "no advice": {"gone_reply": "memoryd status failed"},
        "dead after": {"again_hot_notes": False},
        "reinstall failed": {"reinstall_exit": 1},
    }
    for what, change in breakages.items():
        assert venv_problems({**good, **change}), what


def test_the_search_judge_fails_a_search_that_did_not_reach_the_note_in_that_call():
    """The search hook's live facts (issue 28), as the live run records them: each breakage
    is found. (The committed record predates the search hook; the live run judges these.)"""
    from support.plugin_record import SEARCH_MARK, SEARCH_NOTE, _search_problems

    def good() -> dict:
        answer = f"memoryd brought {SEARCH_NOTE} back … The otter holt: {SEARCH_MARK}."
        return {
            "archived_before_search": True,
            "search_turn": [{"tool_results": []}, {"tool_results": [answer]}],
            "back_after_search": True,
            "plugin_log": [f'memoryd: restored on demand: search "otter" → {SEARCH_NOTE} (9 ms)'],
            "search_hits": [{"agent": "main", "kind": "search", "path": SEARCH_NOTE}],
            "search_latency": {"hook_ms": [9], "hook_p95": 9},
        }

    assert _search_problems(good()) == []
    breakages = {
        "not archived": lambda r: r.update(archived_before_search=False),
        "not in that call": lambda r: r["search_turn"][1].update(tool_results=["no results"]),
        "not back": lambda r: r.update(back_after_search=False),
        "logged twice": lambda r: r["plugin_log"].append(r["plugin_log"][0]),
        "counted twice": lambda r: r["search_hits"].append(r["search_hits"][0]),
        "not counted": lambda r: r.update(search_hits=[]),
        "no time": lambda r: r.update(search_latency={}),
    }
    for what, breaks in breakages.items():
        rec = good()
        breaks(rec)
        assert _search_problems(rec), what
