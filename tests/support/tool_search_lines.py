"""Builders for the lines OpenClaw writes when a memory tool is reached through Tool Search.

Modelled on what the 2026.9.6 package writes (docs/openclaw-formats.md §5): the ``tool_call``
wrapper (call, nested-tool record, wrapped result), code mode (``tool_search_code`` with one
nested-tool record per inner call), and 2026.7's wrapper without a nested-tool record. Values
are made up; each builder returns one line as bytes, with its newline.
"""

from __future__ import annotations

import json
from typing import Any

from support.transcripts import T0, dump, iso

NESTED = "openclaw.nested-tool.v1"
SCOPE = "3b0f5c1e-8d2a-4c7b-9e41-6a5d2f0c7b18"


def _message(entry_id: str, ts: float, msg: dict[str, Any]) -> bytes:
    return dump({"type": "message", "id": entry_id, "timestamp": iso(ts), "message": msg})


def _text(payload: Any) -> list[dict[str, str]]:
    return [{"type": "text", "text": json.dumps(payload, indent=2)}]


def wrapper_call(
    call_id: str, tool: str, args: dict[str, Any], ts: float = T0, *, selector: str = "id"
) -> bytes:
    """The assistant calls ``tool_call`` with the real tool's id and its arguments."""
    block = {"type": "toolCall", "id": call_id, "name": "tool_call",
             "arguments": {selector: tool, "args": args}}  # fmt: skip
    msg = {"role": "assistant", "content": [block], "stopReason": "toolUse",
           "timestamp": int(ts * 1000)}  # fmt: skip
    return _message("a" + call_id, ts, msg)


def code_call(call_id: str, code: str, ts: float = T0) -> bytes:
    """The assistant runs JavaScript through ``tool_search_code``."""
    block = {"type": "toolCall", "id": call_id, "name": "tool_search_code",
             "arguments": {"code": code}}  # fmt: skip
    msg = {"role": "assistant", "content": [block], "stopReason": "toolUse",
           "timestamp": int(ts * 1000)}  # fmt: skip
    return _message("a" + call_id, ts, msg)


def tool_answer(payload: dict[str, Any]) -> dict[str, Any]:
    """What a memory tool returns: its JSON as text, and the object as details."""
    return {"content": _text(payload), "details": payload}


def nested(
    parent: str,
    seq: int,
    tool: str,
    args: dict[str, Any],
    payload: dict[str, Any] | None,
    ts: float = T0 + 0.5,
    *,
    error: str | None = None,
    omitted: bool = False,
    scope: str = SCOPE,
) -> bytes:
    """The nested-tool record OpenClaw appends when an inner call ends."""
    if error is not None:
        result: dict[str, Any] = {"content": [{"type": "text", "text": error}]}
    elif omitted:
        result = {"content": [{"type": "text", "text": "[output omitted: over the limit]"}]}
    else:
        result = tool_answer(payload or {})
    details = {
        "runId": "run-1", "scopeId": scope, "afterEntryId": "a" + parent, "startOrder": seq - 1,
        "parentToolCallId": parent, "toolCallId": f"tool_search_code:{parent}:{tool}:{seq}",
        "toolName": tool, "input": args, "result": result, "isError": error is not None,
        "startedAt": int(ts * 1000) - 40, "timestamp": int(ts * 1000),
    }  # fmt: skip
    msg = {"role": "custom", "customType": NESTED, "display": True, "excludeFromContext": True,
           "content": "", "details": details, "timestamp": int(ts * 1000) - 40,
           "idempotencyKey": f"{scope}:{details['toolCallId']}"}  # fmt: skip
    return _message(f"n{parent}{seq}", ts, msg)


def wrapper_result(
    call_id: str,
    tool: str,
    payload: dict[str, Any],
    ts: float = T0 + 1,
    *,
    details_kept: bool = True,
    error: bool = False,
) -> bytes:
    """The ``tool_call`` result: ``{tool, result}`` as pretty JSON text and as details."""
    info = {"id": tool, "name": tool, "source": "openclaw"}
    wrapped = {"tool": info, "result": tool_answer(payload)}
    details: Any = {"tool": {**info, "label": tool, "description": "…", "input": "query"},
                    "result": tool_answer(payload)}  # fmt: skip
    if not details_kept:  # over 8 KiB: OpenClaw keeps a marker instead
        details = {"persistedDetailsTruncated": True, "originalDetailKeys": ["tool", "result"]}
    msg = {"role": "toolResult", "toolCallId": call_id, "toolName": "tool_call",
           "content": _text(wrapped), "details": details, "isError": error,
           "timestamp": int(ts * 1000)}  # fmt: skip
    return _message("r" + call_id, ts, msg)


def code_result(call_id: str, value: Any, ts: float = T0 + 1) -> bytes:
    """The ``tool_search_code`` result: ``{"ok": true, "value": …}`` (what the code returned)."""
    doc = {"ok": True, "value": value, "logs": [], "telemetry": {"calls": 1}}
    msg = {"role": "toolResult", "toolCallId": call_id, "toolName": "tool_search_code",
           "content": _text(doc), "details": doc, "isError": False,
           "timestamp": int(ts * 1000)}  # fmt: skip
    return _message("r" + call_id, ts, msg)


def code_failed(call_id: str, ts: float = T0 + 1, error: str = "timed out") -> bytes:
    """A cell that ran past its time (or threw): an error result; no memory tool named in it."""
    doc = {"status": "error", "tool": "tool_search_code", "error": error}
    msg = {"role": "toolResult", "toolCallId": call_id, "toolName": "tool_search_code",
           "content": [{"type": "text", "text": json.dumps(doc)}], "details": doc,
           "isError": True, "timestamp": int(ts * 1000)}  # fmt: skip
    return _message("r" + call_id, ts, msg)


def reset(ts: float = T0 + 2) -> bytes:
    """``/new`` in a store session: a boundary, the same session id."""
    return dump({"type": "reset", "reason": "new", "id": "reset1", "timestamp": iso(ts)})
