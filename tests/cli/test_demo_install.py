"""The install ``memoryd demo`` writes (:mod:`memoryd.demo_install`): small, seeded, in
OpenClaw's everyday line shape, and counted as its own transcripts say.

Since issue 31 the demo no longer runs the tests' generator (``support.corpus``, with its
dialects, decoys and reference counts, outside the wheel): these check what the demo writes
on its own. The command end to end is in test_first_hour, test_rough_edges and
test_hits_command.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import json5
import pytest

from memoryd import demo_install, demo_notes
from memoryd.policy.promote import PREFERENCE, REVIEW, SKILL, classify
from support.inprocess import memoryd as run_memoryd

pytestmark = pytest.mark.unit

NOW = 1_790_000_000.0
DAY = 86_400.0


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> demo_install.DemoInstall:
    return demo_install.build(tmp_path_factory.mktemp("demo") / "d", now=NOW)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_the_demo_install_is_small_and_names_its_workspace(demo) -> None:
    assert len(demo.transcripts) == demo_install.SESSIONS == 12
    assert 300_000 < demo.transcript_bytes < 700_000  # about 0.5 MB: built and scanned at once
    assert demo.transcript_bytes == sum(p.stat().st_size for p in demo.transcripts)
    oc = (demo.state_dir / "openclaw.json").read_text(encoding="utf-8")
    assert oc.startswith("//")  # JSON5, as OpenClaw writes it
    agents = json5.loads(oc)["agents"]
    assert agents["defaults"]["workspace"] == str(demo.workspace)
    assert agents["list"] == [{"id": "main", "default": True, "workspace": str(demo.workspace)}]
    notes = [demo.workspace / "MEMORY.md", *(demo.workspace / "memory").rglob("*.md")]
    assert len(notes) == 79 and notes[0].is_file()
    for note in notes:  # within the history's span, none in the future
        assert NOW - (demo_install.SPAN_DAYS + 1) * DAY < note.stat().st_mtime <= NOW, note


def test_the_index_names_the_live_sessions_and_a_reset_is_renamed(demo) -> None:
    sessions = demo.state_dir / "agents" / "main" / "sessions"
    index = json.loads((sessions / "sessions.json").read_text(encoding="utf-8"))
    assert "agent:main:main" in index
    live = {Path(entry["sessionFile"]) for entry in index.values()}
    renamed = {p for p in demo.transcripts if ".jsonl.reset." in p.name}
    assert live | renamed == set(demo.transcripts) and renamed and not live & renamed
    for path in renamed:
        assert re.fullmatch(
            r"[0-9a-f-]{36}\.jsonl\.reset\.\d{4}-\d\d-\d\dT[\d-]+\.\d{3}Z", path.name
        )


def test_same_seed_same_bytes_wherever_it_is_written(tmp_path: Path, demo) -> None:
    again = demo_install.build(tmp_path / "elsewhere", now=NOW)
    assert [p.name for p in again.transcripts] == [p.name for p in demo.transcripts]
    root_a, root_b = str(demo.state_dir.parent).encode(), str(again.state_dir.parent).encode()
    for a, b in zip(demo.transcripts, again.transcripts, strict=True):
        assert a.read_bytes().replace(root_a, b"ROOT") == b.read_bytes().replace(root_b, b"ROOT")
    other = demo_install.build(tmp_path / "other", now=NOW, seed=8)
    assert [p.name for p in other.transcripts] != [p.name for p in demo.transcripts]


def test_every_line_is_openclaws_everyday_shape_and_every_call_is_answered(demo) -> None:
    """Header, then a chain of entries (8-hex ids, each naming the one before), times in order
    and before now; each ``toolCall`` answered once by a ``toolResult`` of its id and name; a
    memory result names notes that exist, with their text as the notes hold it."""
    for path in demo.transcripts:
        head, *entries = lines_of(path)
        assert (
            head["type"] == "session"
            and head["version"] == 3
            and head["cwd"] == str(demo.workspace)
        )
        assert path.name.startswith(head["id"])
        calls: dict[str, str] = {}
        answered: Counter[str] = Counter()
        parent, last = None, 0.0
        for entry in entries:
            assert re.fullmatch(r"[0-9a-f]{8}", entry["id"]) and entry["parentId"] == parent
            parent = entry["id"]
            when = datetime.fromisoformat(entry["timestamp"]).timestamp()
            assert last <= when < NOW, entry
            last = when
            msg = entry.get("message", {})
            for block in msg.get("content", []) if msg.get("role") == "assistant" else []:
                if block["type"] == "toolCall":
                    calls[block["id"]] = block["name"]
            if msg.get("role") == "toolResult":
                assert calls[msg["toolCallId"]] == msg["toolName"] and not msg["isError"]
                answered[msg["toolCallId"]] += 1
                if msg["toolName"].startswith("memory_"):
                    check_memory_answer(demo.workspace, msg)
        assert answered == Counter(dict.fromkeys(calls, 1)), path.name


def check_memory_answer(ws: Path, msg: dict[str, Any]) -> None:
    answer = json.loads(msg["content"][0]["text"])
    assert msg["details"] == answer or msg["details"]["persistedDetailsTruncated"]
    found = answer.get("results", [answer])
    assert found
    for item in found:
        text = (ws / item["path"]).read_text(encoding="utf-8")
        assert item.get("snippet", item.get("text")).rstrip("\n") in text


def memory_hits_written(demo: demo_install.DemoInstall) -> Counter[str]:
    """The hits the transcripts hold, read back: each note a search result names, once per
    result; each note a ``memory_get`` returned text of."""
    hits: Counter[str] = Counter()
    for path in demo.transcripts:
        for entry in lines_of(path)[1:]:
            msg = entry.get("message", {})
            if msg.get("role") == "toolResult" and msg["toolName"].startswith("memory_"):
                answer = json.loads(msg["content"][0]["text"])
                hits.update({item["path"] for item in answer.get("results", [answer])})
    return hits


@pytest.mark.subprocess
def test_a_scan_counts_the_hits_the_demo_wrote(demo, tmp_path: Path) -> None:
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text(
        f"[openclaw]\nstate_dir = {json.dumps(str(demo.state_dir))}\n"
        f"workspace = {json.dumps(str(demo.workspace))}\n"
        f"[state]\ndir = {json.dumps(str(tmp_path / 'state'))}\n",
        encoding="utf-8",
    )
    env = dict(os.environ, MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(NOW))
    r = run_memoryd(["hits", "--all", "--json"], env=env)
    assert r.returncode == 0, r.stderr
    got = {f["path"]: f["hits"] for f in json.loads(r.stdout)["files"] if f["hits"]}
    assert got == dict(memory_hits_written(demo))
    assert 150 < sum(got.values()) < 400  # a memory-heavy agent, plausibly


def test_demo_size_writes_a_heavy_users_year(tmp_path: Path) -> None:
    big = demo_install.build(tmp_path / "big", now=NOW, size_mb=2)
    assert len(big.transcripts) == 12
    assert 1.5 * (1 << 20) < big.transcript_bytes < 3 * (1 << 20)
    first = min(
        datetime.fromisoformat(lines_of(p)[0]["timestamp"]).timestamp() for p in big.transcripts
    )
    assert first < NOW - 240 * DAY  # a year, not the small demo's eight months
    assert sum(memory_hits_written(big).values()) > 500


def test_the_notes_promote_would_nominate_are_of_every_kind() -> None:
    """Issue 32: the demo's promotion candidates were all "procedure words ('recipe')". The
    notes a search finds most are a procedure, a preference and one a person must judge, and
    no note says "recipe"."""
    kinds = {classify(demo_notes.TOPIC_NOTES[rel])[0] for rel in demo_notes.FAVOURITES}
    assert kinds == {SKILL, PREFERENCE, REVIEW}
    every = {rel: classify(text)[0] for rel, text in demo_notes.TOPIC_NOTES.items()}
    assert set(every.values()) == {SKILL, PREFERENCE, REVIEW}
    prose = " ".join(demo_notes.WHO + demo_notes.DID + demo_notes.WHAT + demo_notes.WHEN)
    assert classify(prose) == (REVIEW, "no rule matched; a person decides")
    assert not [t for t in demo_notes.TOPIC_NOTES.values() if "recipe" in t.lower()]
