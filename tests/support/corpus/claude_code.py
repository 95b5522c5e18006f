"""Claude Code's forms of a tool answer: ``tool_result`` blocks inside a user message.

Claude Code (and any session on Anthropic's messages API) answers a ``tool_use`` block
with a ``tool_result`` block that carries only the call's id, not the tool's name, in
a *user* message; one turn's answers come together in one message. OpenClaw's own
``toolResult`` block can travel the same way. The OpenClaw JSONL writer wraps these
messages in its line envelope; the call side (``tool_use`` blocks, ``toolu_01…`` ids)
is a dialect choice in :mod:`.dialects` and :meth:`.draw.Draw.tool_id`.
"""

from __future__ import annotations

import random
from typing import Any

from .dialects import Pending

BLOCK_RESULTS = ("tool_result_block", "toolResult_block")  # the Spec.result forms made here


def result_block(rng: random.Random, p: Pending) -> dict[str, Any]:
    """One answer as a content block: Claude's ``tool_result`` or OpenClaw's ``toolResult``."""
    sp = p.spec
    if sp.result == "tool_result_block":
        content: Any = (
            p.payload_text if rng.random() < 0.5 else [{"type": "text", "text": p.payload_text}]
        )
        block = {"type": "tool_result", "tool_use_id": p.call_id, "content": content}
        if sp.outcome == "error":
            block["is_error"] = True
        return block
    block = {
        "type": "toolResult",
        sp.result_id: p.call_id,
        "toolName": p.name,
        "content": [{"type": "text", "text": p.payload_text}],
    }
    block["isError"] = sp.outcome == "error"
    return block


def results_message(blocks: list[dict[str, Any]], timestamp: int | None) -> dict[str, Any]:
    """The user message that carries a turn's result blocks (with its own ms time, or none)."""
    msg: dict[str, Any] = {"role": "user", "content": blocks}
    if timestamp is not None:
        msg["timestamp"] = timestamp
    return msg
