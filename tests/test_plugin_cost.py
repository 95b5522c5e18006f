"""What the plugin adds to a model request (issue 35), measured from the request log.

The measure (``memoryd.testing.plugin_cost``) reads the bodies OpenClaw sent the scripted
model; here it is checked on bodies shaped as the real 2026.9.6 sends them (the tool list's
line, Tool Search's directory line, the schema, the hot notes before the user's words), and
on the committed live run's log: with Tool Search on, at most 200 characters a request.
"""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest

from memoryd.testing.plugin_cost import cost, directory_line, notes_block, parts

pytestmark = pytest.mark.unit

LOG = Path(__file__).parent / "fixtures" / "openclaw-plugin" / "2026.9.6" / "requests.jsonl.xz"
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


def test_the_recorded_live_run_costs_at_most_200_characters_a_request_with_tool_search_on():
    if not LOG.exists():
        pytest.skip("no recorded request log (python -m tests.live.plugin_live record)")
    lines = lzma.decompress(LOG.read_bytes()).decode().splitlines()
    on = [ln for ln in lines if '"name": "tool_search"' in ln]
    off = [ln for ln in lines if '"name": "tool_search"' not in ln and "chat/completions" in ln]
    c_on, c_off = cost(on), cost(off)
    assert c_on["requests"] > 5 and 0 < c_on["standing_max"] <= 200
    assert c_on["schema_max"] == 0  # deferred: no schema in any request
    assert c_on["notes_per_session_max"] > 0
    assert c_off["schema_max"] > 0  # Tool Search off: the schema itself
