"""The live harness's own logic (tests/live/): the scripted model's moves and the truth taken
from the requests OpenClaw sent it. The fixtures' truth rests on these, so they are checked
here without Node: a real HTTP server on 127.0.0.1 and request logs shaped as OpenClaw
2026.9.6 sent them (tests/live/OBSERVED.md)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from live import truth
from live.model_server import INTERNAL, ScriptedModel, ToolCall, completion, decide

NOTES = {"MEMORY.md", "memory/alpha.md", "memory/beta.md"}


def tools(*names: str) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": f"[Tue 2026-12-01 14:57 UTC] {text}\n\nRuntime: "
            "agent=main | session=agent:main:a | sessionId=x"}


INTERNAL_TURN = {"role": "user", "content": [{"type": "text", "text": INTERNAL + " none"}]}
ASK = 'find [[call memory_search {"query": "postgres"}]] [[call memory_get {"path": "MEMORY.md"}]]'


def test_a_call_goes_the_way_the_tool_list_allows() -> None:
    body = {"messages": [user(ASK), INTERNAL_TURN]}
    assert decide({**body, "tools": tools("memory_search", "read")}) == ToolCall(
        "memory_search", {"query": "postgres"})
    assert decide({**body, "tools": tools("tool_search", "tool_call")}) == ToolCall(
        "tool_call", {"id": "memory_search", "args": {"query": "postgres"}})
    move = decide({**body, "tools": tools("tool_search_code")})
    assert isinstance(move, ToolCall) and move.name == "tool_search_code"
    assert 'openclaw.tools.call("memory_search", {"query": "postgres"})' in move.arguments["code"]
    assert decide(body) == "ok", "no tools offered (a compaction's summary): text"


def test_each_directive_is_one_step_then_the_reply() -> None:
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call00001", "type": "function", "function": {"name": "memory_search",
                                                            "arguments": "{}"}}]}
    result = {"role": "tool", "tool_call_id": "call00001", "content": "{}"}
    offered = tools("memory_search", "memory_get")
    second = decide({"tools": offered, "messages": [user(ASK), call, result, INTERNAL_TURN]})
    assert second == ToolCall("memory_get", {"path": "MEMORY.md"})
    done = decide({"tools": offered, "messages": [user(ASK), call, result, call, result]})
    assert done == "done"


def test_calls_made_together_are_one_assistant_message_each_the_way_the_tools_allow() -> None:
    ask = ('both [[many memory_search {"query": "postgres"} ;; memory_get {"path": "MEMORY.md"}]]'
           ' [[call memory_get {"path": "memory/beta.md"}]]')
    body = {"messages": [user(ask)]}
    move = decide({**body, "tools": tools("memory_search", "memory_get")})
    assert move == (ToolCall("memory_search", {"query": "postgres"}),
                    ToolCall("memory_get", {"path": "MEMORY.md"}))
    via = decide({**body, "tools": tools("tool_search", "tool_call")})
    assert [c.arguments["id"] for c in via] == ["memory_search", "memory_get"]
    message = completion(move, ["call00001", "call00002"])["choices"][0]["message"]
    assert [(c["id"], c["function"]["name"]) for c in message["tool_calls"]] == [
        ("call00001", "memory_search"), ("call00002", "memory_get")]
    # the two results answer one step: the next move is the next directive
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "{}"}
               for c in message["tool_calls"]]
    after = decide({"tools": tools("memory_get"), "messages": [user(ask), message, *results]})
    assert after == ToolCall("memory_get", {"path": "memory/beta.md"})


def search_text(*paths: str) -> str:
    return json.dumps({"results": [{"path": p, "source": "memory"} for p in paths]}, indent=2)


def envelope(name: str, text: str) -> dict[str, Any]:
    return {"tool": {"id": f"openclaw:memory-core:{name}", "name": name, "source": "openclaw"},
            "result": {"content": [{"type": "text", "text": text}], "details": {}}}


def request(*messages: dict[str, Any]) -> str:
    return json.dumps({"path": "/v1/chat/completions", "body": {"messages": list(messages)}})


def asked(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": call_id, "type": "function",
         "function": {"name": name, "arguments": json.dumps(args)}}]}


def answered(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def test_truth_unwraps_every_route_and_takes_each_result_once(tmp_path: Path) -> None:
    direct = (asked("c1", "memory_search", {"query": "q"}),
              answered("c1", search_text("memory/alpha.md", "memory/alpha.md", "/etc/x")))
    wrapped = (asked("c2", "tool_call", {"id": "memory_get", "args": {"path": "MEMORY.md"}}),
               answered("c2", json.dumps(envelope("memory_get", json.dumps(
                   {"status": "ok", "text": "# Memory", "path": "MEMORY.md"})))))
    cell = (asked("c3", "tool_search_code", {"code": "…"}),
            answered("c3", json.dumps({"ok": True, "value": [
                envelope("memory_search", search_text("memory/beta.md", "MEMORY.md")),
                envelope("memory_get", json.dumps(
                    {"path": "../x.md", "text": "", "status": "error", "error": "no"}))]})))
    timed_out = (asked("c4", "tool_search_code", {"code": "while (true) {}"}),
                 answered("c4", json.dumps({"status": "error", "error": "timed out"})))
    missing = (asked("c5", "memory_get", {"path": "memory/gone.md"}),
               answered("c5", json.dumps({"status": "not_found", "text": "",
                                          "path": "memory/gone.md"})))
    log = tmp_path / "requests.jsonl"
    first = (user("x"), *direct)
    log.write_text("\n".join([
        request(*first),
        request(*first, *wrapped),  # c1 again, as history: not a second hit
        request(*first, *wrapped, *cell, *timed_out, *missing),
    ]) + "\n")
    calls = truth.memory_calls(log, {"main": NOTES})
    assert [(c.route, c.tool, c.outcome) for c in calls] == [
        ("direct", "memory_search", "ok"), ("tool_call", "memory_get", "ok"),
        ("code", "memory_search", "ok"), ("code", "memory_get", "error"),
        ("code", "?", "error"), ("direct", "memory_get", "empty")]
    assert {c.session_key for c in calls} == {"agent:main:a"}
    assert truth.hits_per_file(calls) == {"MEMORY.md": 2, "memory/alpha.md": 1,
                                          "memory/beta.md": 1}


@given(st.text(max_size=200), st.sampled_from(["memory_search", "memory_get"]))
def test_any_result_text_is_read_without_crashing(text: str, tool: str) -> None:
    files, outcome = truth.files_of(tool, text, NOTES)
    assert set(files) <= NOTES and outcome in {"ok", "empty", "error", "outside"}


def test_the_server_answers_streamed_and_not_and_logs_each_request(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    with ScriptedModel(log) as model:
        base = f"http://127.0.0.1:{model.port}/v1"
        models = json.load(urllib.request.urlopen(base + "/models", timeout=10))
        assert models["data"][0]["id"] == "scripted"
        body = {"model": "scripted", "tools": tools("memory_search"), "messages": [user(ASK)]}
        req = urllib.request.Request(base + "/chat/completions", json.dumps(body).encode(),
                                     {"content-type": "application/json"})
        reply = json.load(urllib.request.urlopen(req, timeout=10))
        call = reply["choices"][0]["message"]["tool_calls"][0]
        assert call["function"]["name"] == "memory_search"
        req = urllib.request.Request(base + "/chat/completions",
                                     json.dumps({**body, "stream": True}).encode(),
                                     {"content-type": "application/json"})
        stream = urllib.request.urlopen(req, timeout=10).read().decode()
        assert stream.rstrip().endswith("data: [DONE]") and '"tool_calls"' in stream
    assert len(log.read_text().splitlines()) == 3 - 1  # /models is not logged
