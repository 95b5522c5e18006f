"""Builders for OpenClaw / Claude Code transcript lines, written from openclaw-formats.md.

Each builder returns one line as bytes (with its newline) so tests can append,
cut and replay them exactly as OpenClaw would write them.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

T0 = 1_772_010_842.0  # 2026-02-25T09:14:02Z


def iso(ts: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def dump(obj: Any, crlf: bool = False) -> bytes:
    return (json.dumps(obj, ensure_ascii=False) + ("\r\n" if crlf else "\n")).encode()


def header(session: str, ts: float = T0) -> bytes:
    return dump({"type": "session", "version": 3, "id": session, "timestamp": iso(ts), "cwd": "/w"})


def call(
    call_id: str,
    tool: str = "memory_search",
    query: str | None = "boat trip",
    ts: float = T0,
    *,
    block_type: str = "toolCall",
    args_key: str = "arguments",
    id_key: str = "id",
    path: str | None = None,
    wrapped: bool = True,
) -> bytes:
    args: dict[str, Any] = {}
    args = {"query": query, "maxResults": "5"} if "search" in tool else {"path": path or query}
    block = {"type": block_type, id_key: call_id, "name": tool, args_key: args}
    msg = {"role": "assistant", "content": [block], "stopReason": "toolUse"}
    if wrapped:
        return dump({"type": "message", "id": "m" + call_id, "timestamp": iso(ts), "message": msg})
    return dump({**msg, "timestamp": int(ts * 1000)})


def search_payload(paths: list[str] | list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    results = []
    for i, p in enumerate(paths):
        item = (
            p
            if isinstance(p, dict)
            else {
                "path": p,
                "startLine": 1 + i,
                "endLine": 5 + i,
                "score": 0.5,
                "snippet": "...",
                "source": "memory",
            }
        )
        results.append(item)
    return {"results": results, "provider": "openai", "model": "m", **extra}


def result(
    call_id: str,
    payload: dict[str, Any] | str,
    ts: float = T0 + 1,
    *,
    tool: str | None = "memory_search",
    details: Any = "truncated",
    wrapped: bool = True,
    crlf: bool = False,
    is_error: bool = False,
) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload, indent=2)
    if details == "truncated":
        details = {"persistedDetailsTruncated": True, "originalDetailKeys": ["results"]}
    elif details == "same":
        details = payload
    msg: dict[str, Any] = {
        "role": "toolResult",
        "toolCallId": call_id,
        "content": [{"type": "text", "text": text}],
        "details": details,
        "isError": is_error,
        "timestamp": int(ts * 1000),
    }
    if tool is not None:
        msg["toolName"] = tool
    if wrapped:
        return dump(
            {"type": "message", "id": "r" + call_id, "timestamp": iso(ts), "message": msg}, crlf
        )
    return dump(msg, crlf)


def claude_call(call_id: str, tool: str, args: dict[str, Any], ts: float = T0) -> bytes:
    block = {"type": "tool_use", "id": call_id, "name": tool, "input": args}
    return dump(
        {
            "type": "assistant",
            "timestamp": iso(ts),
            "message": {"role": "assistant", "content": [block]},
        }
    )


def claude_result(call_id: str, payload: dict[str, Any] | str, ts: float = T0 + 1) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    block = {
        "type": "tool_result",
        "tool_use_id": call_id,
        "content": [{"type": "text", "text": text}],
    }
    return dump(
        {"type": "user", "timestamp": iso(ts), "message": {"role": "user", "content": [block]}}
    )


def chatter(i: int, ts: float = T0) -> bytes:
    """Ordinary traffic: another tool whose output mentions memory files (a decoy)."""
    block = {"type": "toolCall", "id": f"ex{i}", "name": "exec", "arguments": {"cmd": "ls memory/"}}
    return dump(
        {
            "type": "message",
            "timestamp": iso(ts),
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": f"step {i}"}, block],
            },
        }
    )


def decoy_result(i: int, ts: float = T0) -> bytes:
    text = json.dumps({"results": [{"path": "memory/decoy.md"}], "note": "memory_search said"})
    return dump(
        {
            "type": "message",
            "timestamp": iso(ts),
            "message": {
                "role": "toolResult",
                "toolCallId": f"ex{i}",
                "toolName": "exec",
                "content": [{"type": "text", "text": text}],
            },
        }
    )


def reset_history(
    sessions: Path, notes: list[str], hits: int, rng: random.Random, *, days: int, queries: int
) -> None:
    """``hits`` search hits on ``notes`` over the last ``days`` days (``queries`` distinct
    questions), in transcripts OpenClaw has reset: read once, whole, at the first scan."""
    now = time.time()
    per_file = 5_000
    for first in range(0, hits, per_file):
        sid = str(uuid.UUID(int=rng.getrandbits(128)))
        lines = [header(sid, ts=now - days * 86400)]
        for i in range(first, min(hits, first + per_file)):
            ts = now - rng.uniform(0, days * 86400)
            cid = f"toolu_old_{i:08d}"
            lines.append(call(cid, query=f"question {i % queries}", ts=ts))
            lines.append(result(cid, search_payload([rng.choice(notes)]), ts=ts + 0.5))
        (sessions / f"{sid}.jsonl.reset.2026-01-01T00-00-00.000Z").write_bytes(b"".join(lines))


def make_install(
    root: Path, memory_files: list[str], openclaw_extra: str = ""
) -> tuple[Path, Path, Path]:
    """A state dir with agent main, a workspace with the given files, and a config file."""
    state = root / "state"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    ws = root / "workspace"
    for rel in memory_files:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {rel}\n", encoding="utf-8")
    ws.mkdir(exist_ok=True)
    cfg = root / "memoryd.toml"
    cfg.write_text(
        f'[openclaw]\nstate_dir = "{state}"\nworkspace = "{ws}"\n{openclaw_extra}\n'
        f'[state]\ndir = "{root / "md"}"\n',
        encoding="utf-8",
    )
    return sessions, ws, cfg


def timed(line: bytes, ts: float) -> bytes:
    """The line with the message's own time (pi-ai's ``message.timestamp``, ms)."""
    entry = json.loads(line)
    entry["message"]["timestamp"] = int(ts * 1000)
    return dump(entry)
