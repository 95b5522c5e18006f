"""Whose turn a user message starts: the user's, or a run OpenClaw makes itself.

The heartbeat runs in the main session by default, and a cron job may be pinned to a named
session: what tells those turns from the user's is their user message, never the session's
key (docs/ingest.md, "Runs that are not the user's"). Pure: the parser and the store reader
both ask it.
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
