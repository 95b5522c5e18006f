"""Whose turn a user message starts: the user's, or a run OpenClaw makes itself.

OpenClaw runs its heartbeat in the main session by default, and a cron job may be pinned to
a named session: what tells those turns from the user's is their user message, in a JSONL
transcript (2026.7 and before) as in the agent store (2026.8 on), never the session's key
(``agent:main:heartbeat-notes`` is a user's session). tests/live/OBSERVED.md: 2026.9 writes a
heartbeat poll as ``[OpenClaw heartbeat poll]`` with ``provenance: {kind: "internal_system",
sourceTool: "heartbeat"}``; a cron job's message begins ``[cron:<jobId> <name>]`` (2026.7.35
and 2026.9.6 alike). Pure: the scan's parser and the store reader both ask it.
"""

from __future__ import annotations

import re
from typing import Any

HEARTBEAT, CRON = "heartbeat", "cron"
TURN_RUNS = frozenset({HEARTBEAT, CRON})  # the runs told by their turns, not by their keys
HEARTBEAT_TEXT = "[OpenClaw heartbeat poll]"
_CRON_PREFIX = re.compile(r"\[cron:[^\s\]]+(?: [^\]\n]*)?\]")


def run_kind(msg: dict[str, Any]) -> str | None:
    """The run a user message's turn is (HEARTBEAT, CRON), or None for the user's own."""
    provenance = msg.get("provenance")
    if isinstance(provenance, dict) and provenance.get("sourceTool") == HEARTBEAT:
        return HEARTBEAT
    content = msg.get("content")
    if isinstance(content, list):
        first = next((b for b in content if isinstance(b, dict) and b.get("type") == "text"), None)
        content = first.get("text") if first is not None else None
    if not isinstance(content, str):
        return None
    text = content.lstrip()
    if text.startswith(HEARTBEAT_TEXT):
        return HEARTBEAT
    if _CRON_PREFIX.match(text):
        return CRON
    return None
