"""Hits per section and the bootstrap cut on a run of the real OpenClaw 2026.9.6 (issue 33),
replayed without Node: ``python -m tests.live.sections_live record`` recorded it (a MEMORY.md
of 16 topics over 20,000 characters, searches returning different topics, an edit that moves
them, a dreaming-style append, a new session). memoryd scans the recorded store and its
``sections`` must give each section exactly the hits the model was sent, and mark as cut
exactly what the gateway left out of the new session's request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from live.sections_live import FIXTURE, analyze, unpack_run, versions

pytestmark = pytest.mark.subprocess


def unpack(dest: Path) -> Path:
    """The run in ``dest``, openclaw.json naming the workspace where it now is."""
    return unpack_run(FIXTURE, dest)


def test_the_recorded_run_gives_every_section_its_hits_and_the_cut_the_gateway_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    work = unpack(tmp_path / "run")
    assert analyze(work, work / "logs" / "requests.jsonl", versions()) == 0, capsys.readouterr().out
    said = json.loads(capsys.readouterr().out.split("\n}\n", 1)[0] + "\n}")
    assert said["hits_truth"] == said["hits_memoryd"] and sum(said["hits_truth"].values()) >= 5
    assert said["sections_not_loaded"] >= 4  # (the file is over its 20,000-character budget)


def test_the_replay_fails_when_memoryd_would_place_hits_in_the_wrong_sections(tmp_path: Path):
    """The same run with two topics' headings swapped in the final MEMORY.md: the hits
    memoryd credits no longer equal what the model was sent."""
    work = unpack(tmp_path / "run")
    memory = work / "install" / "ws" / "MEMORY.md"
    text = memory.read_text(encoding="utf-8")
    assert "## Wombat notes" in text and "## Numbat notes" in text
    swapped = text.replace("## Wombat", "## @@").replace("## Numbat", "## Wombat")
    memory.write_text(swapped.replace("## @@", "## Numbat"), encoding="utf-8")
    assert analyze(work, work / "logs" / "requests.jsonl", versions()) == 1
