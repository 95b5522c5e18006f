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


def test_a_successor_read_with_its_parent_continues_the_parents_turn(tmp_path: Path):
    """A compaction may cut a cron job's turn in two: the successor file begins inside it (its
    first line answers the parent's last call), and that turn is still the cron job's."""
    inst = Install(tmp_path)
    parent = inst.append(
        "p1.jsonl",
        tx.header("p1") + user("hello", T - 5) + user("[cron:0f3a job4] check", T)
        + tx.call("k1", ts=T + 1),
    )  # fmt: skip
    head = {"type": "session", "id": "s2", "timestamp": tx.iso(T), "parentSession": str(parent)}
    inst.append(
        "2026-02-25T10-00-00.000Z_s2.jsonl",
        tx.dump(head) + tx.result("k1", tx.search_payload(["memory/a.md"]), ts=T + 2)
        + b"".join(lookup("k2", "memory/a.md", T + 3))
        + user("the user again", T + 10) + b"".join(lookup("k3", "MEMORY.md", T + 11)),
    )  # fmt: skip
    inst.scan()
    assert _counts(inst) == {"MEMORY.md": 1}


def test_a_cold_stored_sessions_runs_are_left_out(tmp_path: Path):
    """A session OpenClaw cold-stored (its events as JSON strings in store records) read for
    the first time: the runs' turns are told apart there too."""
    import hashlib

    import orjson

    try:
        from compression import zstd  # type: ignore[import-not-found]
    except ImportError:
        from backports import zstd  # type: ignore[import-not-found,no-redef]

    inst = Install(tmp_path)
    records = [{"kind": "header", "session_id": "s", "session_key": "agent:main:main"}]
    records += [
        {"kind": "event", "row": {"seq": n, "event_json": line.rstrip(b"\n").decode(),
                                  "created_at": 0}}
        for n, line in enumerate(LINES[1:], 1)
    ]  # fmt: skip
    cold = inst.sessions.parent / "agent" / "cold" / f"{hashlib.sha256(b's').hexdigest()}.jsonl.zst"
    cold.parent.mkdir(parents=True, exist_ok=True)
    cold.write_bytes(zstd.compress(b"".join(orjson.dumps(r) + b"\n" for r in records)))
    inst.scan()
    assert _counts(inst) == USERS_ONLY


def test_a_user_message_of_tool_results_is_no_turn():
    from memoryd.ingest.events import TurnStarted
    from memoryd.ingest.parser import parse

    for kind in ("tool_result", "toolResult", "function_result"):
        block = {"type": kind, "tool_use_id": "x1", "name": "web_fetch", "content": "done"}
        line = tx.dump({"type": "message", "message": {"role": "user", "content": [block]}})
        assert not [ev for ev in parse(line).events if isinstance(ev, TurnStarted)], kind


def test_the_look_back_finds_a_user_message_right_at_its_window_edge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from memoryd.ingest import scan

    cron = user("[cron:0f3a job4] check", T)
    filler = tx.chatter(1, ts=T + 1)
    path = tmp_path / "s.jsonl"
    path.write_bytes(filler + cron + filler)
    monkeypatch.setattr(scan, "_LOOK_BACK_BYTES", len(cron + filler))  # begins where cron does
    fd = os.open(path, os.O_RDONLY)
    try:
        assert turn_before(fd, len(filler + cron + filler)) == "cron"
        monkeypatch.setattr(scan, "_LOOK_BACK_BYTES", len(cron + filler) - 1)  # cut: unknown
        assert turn_before(fd, len(filler + cron + filler)) is None
    finally:
        os.close(fd)
