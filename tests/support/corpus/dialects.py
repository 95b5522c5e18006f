"""The dialects of a memory call: every form openclaw-formats.md §2–4 lists, as weighted choices.

A call's dialect (:class:`Spec`) is chosen before any byte is written: which tool, which
block type and id key (OpenClaw's ``toolCall``, Claude Code's ``tool_use``, OpenAI's
``functionCall``…), how the result comes back, how much of it survives, how paths and
numbers are spelled. The writers render a spec; :data:`DIMS` is what the ground-truth
tests check the corpus covers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

# Variant dimensions of one memory call: (options, weights). Option 0 is the common form.
DIMS: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
    "tool": (("search", "get"), (70, 30)),
    "block": (
        ("toolCall", "toolUse", "functionCall", "tool_use", "tool_call", "ToolCall", "TOOL_USE"),
        (80, 4, 3, 6, 3, 2, 2),
    ),
    "name": (("plain", "mcp__openclaw__", "mcp_openclaw_"), (90, 6, 4)),
    "args": (("arguments", "input"), (85, 15)),
    "call_id": (("id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id"), (84, 4, 4, 4, 4)),
    "call_wrap": (("wrapped", "bare"), (92, 8)),
    "result": (("message", "bare", "tool_result_block", "toolResult_block"), (80, 7, 9, 4)),
    "result_id": (("toolCallId", "tool_call_id", "toolUseId"), (90, 5, 5)),
    "payload": (("full", "details_truncated", "content_only", "cut"), (45, 33, 14, 8)),
    "outcome": (("normal", "disabled", "empty", "unanswered", "error"), (89, 3, 3, 3, 2)),
    "numbers": (("numbers", "strings"), (88, 12)),
    "keys": (("camel", "snake"), (92, 8)),
    "path_style": (("plain", "dot", "backslash", "dot_backslash"), (86, 6, 6, 2)),
    "msg_ts": (("present", "absent"), (85, 15)),
    "synthetic": (("user", "dreaming"), (96, 4)),
}
FORCE_COVERAGE_FROM = 60  # with at least this many calls, every option of every dimension occurs


@dataclass
class Spec:
    """The dialect of one memory call, chosen before any byte is written."""

    tool: str
    block: str
    name: str
    args: str
    call_id: str
    call_wrap: str
    result: str
    result_id: str
    payload: str
    outcome: str
    numbers: str
    keys: str
    path_style: str
    msg_ts: str
    synthetic: str
    big: bool = False  # a memory_get whose line is 600 KB+


def plain_spec() -> Spec:
    """The everyday form: a wrapped ``memory_search`` toolCall answered by a toolResult."""
    return Spec(
        "search",
        "toolCall",
        "plain",
        "arguments",
        "id",
        "wrapped",
        "message",
        "toolCallId",
        "full",
        "normal",
        "numbers",
        "camel",
        "plain",
        "present",
        "user",
    )


def plan_specs(rng: random.Random, n: int) -> list[Spec]:
    """``n`` dialects drawn by weight; from FORCE_COVERAGE_FROM on, every option at least twice."""
    columns: dict[str, list[str]] = {}
    for dim, (options, weights) in DIMS.items():
        col: list[str] = []
        if n >= FORCE_COVERAGE_FROM:
            col.extend(options[1:] * 2)
        col.extend(rng.choices(options, weights=weights, k=n - len(col)))
        rng.shuffle(col)
        columns[dim] = col
    # (each dimension of DIMS is a str field of Spec; its bool fields keep their defaults)
    specs = [Spec(**{dim: columns[dim][i] for dim in DIMS}) for i in range(n)]  # type: ignore[arg-type]
    for sp in specs:  # a few combinations make no sense: resolve them
        if sp.outcome == "empty":
            sp.tool = "get"
        if sp.payload == "cut" and sp.tool == "get":
            sp.tool = "search"
            if sp.outcome == "empty":
                sp.outcome = "normal"
        if sp.synthetic == "dreaming":
            sp.tool = "search"
            if sp.outcome == "empty":
                sp.outcome = "normal"
    return specs


@dataclass
class Pending:
    """An answered call whose result line is still to be written (maybe in a successor)."""

    spec: Spec
    call_id: str
    name: str
    payload_text: str
    details: dict[str, Any] | None
    hit_paths: list[str]
