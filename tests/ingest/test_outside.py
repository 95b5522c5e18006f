"""Black-box check of memoryd against an OpenClaw state folder written from OpenClaw's source.

The folder and its truth come from ``outside_transcripts`` (independent of memoryd's own
generator and parser); memoryd runs as a real process, daemon-free (``scan`` and ``hits``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.inprocess import memoryd as run_memoryd
from support.outside_transcripts import MEMORY_FILES, UNUSED_FILES, build

pytestmark = pytest.mark.subprocess


def memoryd(config: Path, *args: str) -> dict:
    proc = run_memoryd(["--config", str(config), *args])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def setup(tmp_path: Path, seed: int, layout: str = "jsonl"):
    synth = build(tmp_path / "home", seed, layout)
    config = tmp_path / "memoryd.toml"
    config.write_text(
        f'[openclaw]\nstate_dir = "{synth.state}"\n\n[state]\ndir = "{tmp_path / "mstate"}"\n',
        encoding="utf-8",
    )
    return synth, config


@pytest.mark.parametrize(("seed", "layout"), [(1, "jsonl"), (2, "jsonl"), (3, "store")])
def test_counts_equal_the_truth_per_file(tmp_path: Path, seed: int, layout: str) -> None:
    synth, config = setup(tmp_path, seed, layout)
    truth = synth.truth
    if layout == "jsonl":
        # the folder really holds the hard cases: capped details, cut text, a line over 1 MB
        text = "\n".join(
            p.read_text(encoding="utf-8") for p in synth.state.glob("agents/*/sessions/*.jsonl")
        )
        assert "persistedDetailsTruncated" in text and "middle content omitted" in text
        assert max(len(line) for line in text.split("\n")) > 1_000_000

    scan = memoryd(config, "scan", "--json")
    assert scan["errors"] == 0
    assert scan["malformed"] == 0
    assert scan["new_hits"] == sum(truth.hits.values())

    report = memoryd(config, "hits", "--all", "--json", "--no-scan")
    got = {f["path"]: f["hits"] for f in report["files"] if f["hits"]}
    assert got == dict(truth.hits)
    last = {f["path"]: f["last_hit"] for f in report["files"] if f["hits"]}
    assert last == truth.last
    never = set(report["never_hit"])
    assert set(UNUSED_FILES) <= never
    assert never.isdisjoint(truth.hits)
    assert set(MEMORY_FILES) - set(truth.hits) <= never

    again = memoryd(config, "scan", "--json")
    assert again["new_hits"] == 0
    assert again["new_calls"] == 0
    report2 = memoryd(config, "hits", "--all", "--json")
    assert {f["path"]: f["hits"] for f in report2["files"] if f["hits"]} == dict(truth.hits)


def _lines_of(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line]


def test_reused_ids_across_scans_and_copies(tmp_path: Path) -> None:
    """Numbered ids (``memory_search_0`` every turn): a call read in one scan and its result
    in the next still counts; a re-appended copy of a turn (new entry ids and times, the same
    message, as OpenClaw's transcript rewrite writes it) counts nothing more."""
    synth, config = setup(tmp_path, 7)
    memoryd(config, "scan", "--json")
    before = memoryd(config, "hits", "--all", "--json", "--no-scan")
    total = sum(f["hits"] for f in before["files"])
    assert total == sum(synth.truth.hits.values())

    key = "agent:main:whatsapp:direct:+33612345678"
    path = Path(synth.sessions[key]["sessionFile"])
    lines = _lines_of(path)
    # the file's last turn again, as a new turn: same ids, later message times
    turn = lines[-5:]  # user, assistant (2 calls), search result, get result, answer
    later = []
    for i, line in enumerate(turn):
        entry = json.loads(line)
        entry["id"] = f"{0xABC000 + i:08x}"
        entry["message"]["timestamp"] += 3_600_000
        later.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
    with path.open("a", encoding="utf-8") as f:  # the call, not yet its results
        f.write("\n".join(later[:2]) + "\n")
    assert memoryd(config, "scan", "--json")["new_hits"] == 0
    with path.open("a", encoding="utf-8") as f:
        f.write("\n".join(later[2:]) + "\n")
    assert memoryd(config, "scan", "--json")["new_hits"] == 3  # two files searched, one read

    # a re-appended copy of that turn: new entry ids and entry times, the same messages
    copies = []
    for i, line in enumerate(later):
        entry = json.loads(line)
        entry["id"] = f"{0xDEF000 + i:08x}"
        entry["timestamp"] = "2026-12-01T00:00:0" + str(i) + ".000Z"
        copies.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
    with path.open("a", encoding="utf-8") as f:
        f.write("\n".join(copies) + "\n")
    again = memoryd(config, "scan", "--json")
    assert again["new_hits"] == 0
    after = memoryd(config, "hits", "--all", "--json", "--no-scan")
    assert sum(f["hits"] for f in after["files"]) == total + 3


def test_the_parser_reads_the_message_time_of_a_call() -> None:
    """The occurrence of a numbered id comes from the message's own time, whatever form the
    call's arguments take."""
    from memoryd.ingest.parser import parse

    line = json.dumps(
        {
            "type": "message",
            "id": "0a1b2c3d",
            "parentId": None,
            "timestamp": "2026-11-02T08:00:01.037Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": "memory_search_0",
                        "name": "memory_search",
                        "arguments": {"query": "q"},
                    },
                    {
                        "type": "toolCall",
                        "id": "memory_get_1",
                        "name": "memory_get",
                        "arguments": '{"path": "MEMORY.md"}',
                    },
                ],
                "timestamp": 1793606401000,
            },
        }
    ).encode()
    parsed = parse(line)
    assert [ev.made for ev in parsed.events] == [1793606401.0, 1793606401.0]
    assert parsed.events[0].ts == pytest.approx(1793606401.037)
