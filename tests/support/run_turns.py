"""A session with the user's turns and runs' turns (a cron job pinned to it, the heartbeat),
as OpenClaw's JSONL writes them (tests/live/OBSERVED.md): for tests/ingest/test_run_turns.py and
the forked helper's test in tests/ingest/test_scan_helper.py."""

from __future__ import annotations

from support import transcripts as tx

T = tx.T0


def user(text: str, ts: float, *, heartbeat: bool = False) -> bytes:
    msg: dict[str, object] = {"role": "user", "content": text, "timestamp": int(ts * 1000)}
    if heartbeat:
        msg["provenance"] = {"kind": "internal_system", "sourceTool": "heartbeat"}
    return tx.dump({"type": "message", "id": f"u{ts}", "timestamp": tx.iso(ts), "message": msg})


def lookup(cid: str, path: str, ts: float) -> list[bytes]:
    return [tx.call(cid, ts=ts), tx.result(cid, tx.search_payload([path]), ts=ts + 1)]


def session_lines(prefix: str = "c") -> list[bytes]:
    """The user, a cron job pinned to the session, the heartbeat and the user again each
    make one search finding one note (MEMORY.md the user's, memory/a.md the runs'), with
    other traffic between: USERS_ONLY when the runs are left out."""
    return [
        tx.header("s"),
        user("what was the boat trip?", T),
        *lookup(f"{prefix}1", "MEMORY.md", T + 1),
        user("[cron:0f3a job4] check the boat trip\nCurrent time: …", T + 10),
        tx.chatter(1, ts=T + 11),
        *lookup(f"{prefix}2", "memory/a.md", T + 12),
        user("[OpenClaw heartbeat poll]", T + 20, heartbeat=True),
        *lookup(f"{prefix}3", "memory/a.md", T + 21),
        user("and the boat trip again", T + 30),
        *lookup(f"{prefix}4", "MEMORY.md", T + 31),
    ]


USERS_ONLY = {"MEMORY.md": 2}
