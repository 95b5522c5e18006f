"""Black-box check of memoryd against an OpenClaw state folder written from OpenClaw's source.

The folder and its truth come from ``outside_transcripts`` (independent of memoryd's own
generator and parser); memoryd runs as a real process, daemon-free (``scan`` and ``hits``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from outside_transcripts import MEMORY_FILES, UNUSED_FILES, build

pytestmark = pytest.mark.subprocess


def memoryd(config: Path, *args: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "memoryd", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def setup(tmp_path: Path, seed: int):
    synth = build(tmp_path / "home", seed)
    config = tmp_path / "memoryd.toml"
    config.write_text(
        f'[openclaw]\nstate_dir = "{synth.state}"\n\n[state]\ndir = "{tmp_path / "mstate"}"\n',
        encoding="utf-8",
    )
    return synth, config


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_counts_equal_the_truth_per_file(tmp_path: Path, seed: int) -> None:
    synth, config = setup(tmp_path, seed)
    truth = synth.truth
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
