"""What the plugin adds to a model request (issue 35), measured from the request log.

The measure (``live.plugin_cost``) reads the bodies OpenClaw sent the scripted
model; here it is checked on bodies shaped as the real 2026.9.6 sends them (the tool list's
line, Tool Search's directory line, the schema, the hot notes before the user's words), and
on two committed live runs' logs: 746 characters a request before, at most 200 now.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from live.plugin_cost import chat_bodies, cost, directory_line, notes_block, parts

pytestmark = pytest.mark.unit

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openclaw-plugin" / "2026.9.6"
SCHEMA = {
    "type": "function",
    "function": {
        "name": "memoryd_recall",
        "description": "Recall past notes.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}
DIRECTORY = '- memoryd_recall (memoryd): Recall past notes: "did we discuss X before?"'
NOTES = (
    "Recent notes from memoryd's tier store (hot/, the last few hours):\n\n"
    "## hot/zebra.md\n# Deploy\n\nThe marker is ZEBRA-42.\n\n"
)


def body(system: str, user: str, tools: list[dict] | None = None) -> dict:
    return {
        "messages": [
            {"role": "system", "content": system},
            {
                "role": "user",
                "content": f"[Tue 2026-12-01 15:40 UTC] {user}\n\nRuntime: "
                "agent=main | session=agent:main:s1 | host=vm",
            },
        ],
        "tools": tools or [{"type": "function", "function": {"name": "read"}}],
    }


def line(b: dict) -> str:
    return json.dumps({"path": "/v1/chat/completions", "body": b, "reply": "ok"})


def test_a_deferred_tool_costs_its_directory_line_and_nothing_else():
    b = body(f"## Tooling\n- read: Read files\n{DIRECTORY}\n- tool_call\n", "hi [[text hi]]")
    assert parts(b) == {"schema": 0, "prompt": len(DIRECTORY) + 1, "notes": 0}
    assert directory_line(b) == DIRECTORY


def test_a_tool_offered_by_name_costs_its_schema_and_its_tool_list_line():
    b = body(
        "## Tooling\n- read: Read files\n- memoryd_recall\n",
        "hi [[text hi]]",
        [SCHEMA, {"type": "function", "function": {"name": "read"}}],
    )
    got = parts(b)
    assert got["schema"] == len(json.dumps(SCHEMA, separators=(",", ":")))
    assert got["prompt"] == len("- memoryd_recall\n")
    assert directory_line(b) == ""


def test_the_hot_notes_are_counted_up_to_the_users_own_words():
    b = body("## Tooling\n", NOTES + "hello [[text hi]]")
    assert notes_block(b["messages"][1]["content"]) == NOTES
    assert parts(b)["notes"] == len(NOTES)
    assert notes_block("hello [[text hi]]") == ""


def test_per_session_the_notes_once_per_first_turn_request_and_the_standing_cost_each():
    first = body(f"{DIRECTORY}\n", NOTES + "hello [[text hi]]")
    later = body(f"{DIRECTORY}\n", "again [[text ok]]")
    heartbeat = body("## Tooling\n", "heartbeat")  # a request without the plugin's lines
    c = cost([line(first), line(later), line(later), line(heartbeat)])
    each = len(DIRECTORY) + 1
    assert c["standing_max"] == each and c["requests"] == 4
    s = c["sessions"]["agent:main:s1"]
    assert s == {
        "requests": 4,
        "standing": 3 * each,
        "notes": len(NOTES),
        "total": 3 * each + len(NOTES),
    }


def _recorded(name: str) -> list[str]:
    return lzma.decompress((FIXTURES / name).read_bytes()).decode().splitlines()


def test_live_before_the_recall_tool_cost_746_characters_a_request():
    """The plugin as it was (direct-only, the long description) in the real 2026.9.6."""
    c = cost(_recorded("requests-before.jsonl.xz"))
    with_plugin = [r for r in c["rows"] if r["standing"]]
    assert with_plugin and all(r == with_plugin[0] for r in with_plugin)
    assert with_plugin[0]["schema"] == 729 and with_plugin[0]["prompt"] == 17


def test_live_deferred_it_costs_at_most_200_characters_and_is_still_found_and_called():
    """Now, in the real 2026.9.6 with Tool Search at its default: one directory line with the
    seed's cues in every request, no schema; tool_search finds it, tool_call runs it."""
    lines = _recorded("requests-deferred.jsonl.xz")
    c = cost(lines)
    assert c["requests"] >= 3 and c["schema_max"] == 0
    assert all(0 < r["standing"] <= 200 for r in c["rows"])
    bodies = chat_bodies(lines)
    line = directory_line(bodies[0])
    for cue in ("did we discuss X before", "what was the conclusion on Y"):
        assert cue in line
    replies = [json.loads(ln)["reply"] for ln in lines if "chat/completions" in ln]
    assert {"tool": "tool_search"}.items() <= replies[1].items()
    assert replies[2]["tool"] == "tool_call" and replies[2]["arguments"]["id"] == "memoryd_recall"
    last = [m for m in bodies[-1]["messages"] if m.get("role") == "tool"]
    assert "openclaw:memoryd:memoryd_recall" in json.dumps(last[0])  # the search found it
    assert "ZEBRA-42" in json.dumps(last[-1])  # the recall's answer, through tool_call
