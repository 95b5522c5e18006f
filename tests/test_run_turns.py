"""Turns that are not the user's, in JSONL transcripts (OpenClaw 2026.7 and before).

OpenClaw runs its heartbeat in the main session by default and a cron job may be pinned to
a named session: their lookups are told from the user's by the user message that starts the
turn (``[cron:<jobId> <name>] …``, ``[OpenClaw heartbeat poll]`` with its provenance;
tests/live/OBSERVED.md, recorded from 2026.7.35 and 2026.9.6), and are left out unless
``[openclaw] count_cron`` / ``count_heartbeat`` says otherwise. The turn a read resumes in
is found again after a restart, wherever the read stopped.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memoryd.ingest.scan import turn_before
from support import transcripts as tx
from support.run_turns import USERS_ONLY, T, lookup, session_lines, user
from support.scanner_install import Install

LINES = session_lines()


def _counts(inst: Install) -> dict[str, int]:
    return {p: n for p, n in inst.counts().items() if n}


@pytest.mark.parametrize("stop", range(len(LINES) + 1))
def test_runs_turns_are_left_out_wherever_a_read_stops_and_resumes(tmp_path: Path, stop: int):
    inst = Install(tmp_path)
    inst.append("s.jsonl", b"".join(LINES[:stop]))
    inst.scan()
    inst.restart()  # a new process: the turn the read stopped in is known no more
    inst.append("s.jsonl", b"".join(LINES[stop:]))
    inst.scan()
    assert _counts(inst) == USERS_ONLY
    assert inst.scan().new_hits == 0


def test_a_run_kind_the_user_counts_is_counted(tmp_path: Path):
    inst = Install(tmp_path, openclaw_extra="count_cron = true\n")
    inst.append("s.jsonl", b"".join(LINES))
    inst.scan()
    # the cron job's, not the heartbeat's
    assert _counts(inst) == {"MEMORY.md": 2, "memory/a.md": 1}


def test_a_user_session_named_like_a_run_is_the_users(tmp_path: Path):
    """The key's words say nothing: a session of the user's is counted whole."""
    inst = Install(tmp_path)
    lines = [tx.header("heartbeat-notes"), user("the heartbeat notes", T),
             *lookup("h1", "memory/a.md", T + 1)]  # fmt: skip
    inst.append("heartbeat-notes.jsonl", b"".join(lines))
    inst.scan()
    assert _counts(inst) == {"memory/a.md": 1}


def test_the_turn_before_an_offset_is_found_by_looking_back(tmp_path: Path):
    path = tmp_path / "s.jsonl"
    data = b"".join(LINES)
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        at = {n: len(b"".join(LINES[:n])) for n in range(len(LINES) + 1)}
        assert turn_before(fd, 0) is None
        assert turn_before(fd, at[4]) is None  # after the user's search
        assert turn_before(fd, at[5]) == "cron"  # after the cron job's message
        assert turn_before(fd, at[10]) == "heartbeat"
        assert turn_before(fd, at[len(LINES)]) is None  # the user spoke again
    finally:
        os.close(fd)
