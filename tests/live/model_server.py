"""A scripted OpenAI-compatible model for driving the real OpenClaw on 127.0.0.1.

No model runs here: every reply is decided by directives written in the newest user message,
so a scenario states exactly which tool calls the "model" makes, and the request log records
what OpenClaw sent back (the tool results), which is where the ground truth comes from.

Directives (each is one assistant turn, taken in order; then a plain text reply):

- ``[[call NAME {json}]]``      call NAME the way this run's tool list allows: directly when
  NAME is offered, else through Tool Search's ``tool_call`` ({"id": NAME, "args": {...}}),
  else through code mode's ``tool_search_code`` (one ``openclaw.tools.call``).
- ``[[direct NAME {json}]]``    call NAME by its own name even when it is not offered
  (directory mode runs hidden names called directly).
- ``[[tool_call NAME {json}]]`` always through ``tool_call``.
- ``[[code JS]]``               one ``tool_search_code`` call with this JavaScript body.
- ``[[many NAME {json} ;; NAME {json} ...]]``  these calls together, in one assistant message
  (parallel tool calls), each made the way ``call`` makes it.
- ``[[text WORDS]]``            reply with this text (ends the turn).

One request is answered without directives: dreaming's consolidation (memory-core's tool-free
completion that asks how each promotion candidate goes into MEMORY.md) gets the operations a
careful model would choose, :func:`consolidation_plan`: a candidate whose text is already an
entry of MEMORY.md is ``merged`` with it, any other is ``added``. OpenClaw then validates the
plan and rewrites MEMORY.md itself.

Every request is appended to the log as one JSON line: ``{"path", "body", "reply"}``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL_ID = "scripted"
INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"  # OpenClaw's own context, sent as a user turn
# the system prompt of memory-core's consolidation completion (2026.9.6)
CONSOLIDATION = "Choose how to incorporate each supplied candidate into MEMORY.md."
DIRECTIVE = re.compile(r"\[\[(call|direct|tool_call|code|text|many)\s+(.*?)\]\]", re.S)


@dataclass(frozen=True)
class ToolCall:
    """One tool call the scripted model makes: the name sent and its JSON arguments."""

    name: str
    arguments: dict[str, Any]


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def directives_of(text: str) -> list[tuple[str, str]]:
    """The (verb, rest) directives of a user message, in order."""
    return [(m.group(1), m.group(2).strip()) for m in DIRECTIVE.finditer(text)]


def offered_tools(body: dict[str, Any]) -> set[str]:
    """Names of the tools this request offers the model."""
    names = set()
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return names


def code_calling(name: str, args: dict[str, Any]) -> str:
    """A code-mode body that makes one bridged call and returns its envelope."""
    return f"return await openclaw.tools.call({json.dumps(name)}, {json.dumps(args)});"


Move = ToolCall | tuple[ToolCall, ...] | str  # one call, calls made together, or the text


def _entry_fact(line: str) -> str:
    """An entry's text as memory-core compares two facts: no list marker, blanks collapsed,
    lower case."""
    return " ".join(re.sub(r"^[-*+]\s+", "", line.strip()).split()).lower()


def consolidation_plan(body: dict[str, Any]) -> str | None:
    """The JSON answer to dreaming's consolidation request, or None when ``body`` is not one.

    The request's user message is ``{"currentMemory": ..., "candidates": [{"key", "text",
    ...}]}``; the answer names, per candidate, ``merged`` with the one prior entry of the same
    fact (the line exactly as MEMORY.md has it) or ``added``."""
    messages = body.get("messages") or []
    if not any(CONSOLIDATION in message_text(m) for m in messages if m.get("role") == "system"):
        return None
    for m in reversed(messages):
        text = message_text(m) if m.get("role") == "user" else ""
        at = text.find('{"currentMemory"')
        if at < 0:
            continue
        try:
            doc, _ = json.JSONDecoder().raw_decode(text[at:])
        except ValueError:
            continue
        prior = [ln.strip() for ln in str(doc.get("currentMemory", "")).split("\n")
                 if ln.strip().startswith(("- ", "* ", "+ "))]
        ops = []
        for cand in doc.get("candidates") or []:
            same = [ln for ln in prior if _entry_fact(ln) == _entry_fact(str(cand.get("text", "")))]
            ops.append({"candidateKey": cand.get("key"), "action": "merged" if same else "added",
                        "priorEntries": same[:1]})
        return json.dumps({"operations": ops})
    return None


def decide(body: dict[str, Any]) -> Move:
    """The scripted model's next move for a request: tool call(s), or the final text."""
    plan = consolidation_plan(body)
    if plan is not None:
        return plan
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages)
                     if m.get("role") == "user" and INTERNAL not in message_text(m)), default=-1)
    if last_user < 0 or not body.get("tools"):
        return "ok"  # e.g. a compaction's summary request: no tools, no directives obeyed
    steps = directives_of(message_text(messages[last_user]))
    done = sum(
        1 for m in messages[last_user + 1:] if m.get("role") == "assistant" and m.get("tool_calls")
    )
    if done >= len(steps):
        return "done"
    verb, rest = steps[done]
    if verb == "text":
        return rest
    if verb == "code":
        return ToolCall("tool_search_code", {"code": rest})
    tools = offered_tools(body)
    if verb == "many":
        return tuple(_one_call("call", part.strip(), tools) for part in rest.split(";;"))
    return _one_call(verb, rest, tools)


def _one_call(verb: str, rest: str, tools: set[str]) -> ToolCall:
    name, _, raw = rest.partition(" ")
    args = json.loads(raw) if raw.strip() else {}
    if verb == "direct" or (verb == "call" and name in tools):
        return ToolCall(name, args)
    if verb == "tool_call" or "tool_call" in tools:
        return ToolCall("tool_call", {"id": name, "args": args})
    if "tool_search_code" in tools:
        return ToolCall("tool_search_code", {"code": code_calling(name, args)})
    return ToolCall(name, args)


def calls_of(move: Move) -> tuple[ToolCall, ...]:
    """The tool calls of a move (none for a text)."""
    if isinstance(move, str):
        return ()
    return (move,) if isinstance(move, ToolCall) else move


# A scenario's own player for requests no directive can script (a task text written by
# memoryd, say): given a chat request, its move, or an HTTP status to fail it with, or None to
# leave the request to the directives.
Responder = Callable[[dict[str, Any]], "Move | int | None"]


class ScriptedModel:
    """The HTTP server and its request log; ``with ScriptedModel(log) as m: m.port``."""

    def __init__(self, log_path: Path, responders: list[Responder] | None = None) -> None:
        self.log_path = log_path
        self.responders = responders if responders is not None else []
        self._lock = threading.Lock()
        self._calls = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # quiet: the JSON log says it all
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json({"object": "list", "data": [
                        {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "memoryd"}]})
                else:
                    self._json({"error": {"message": "not found"}}, 404)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json({"error": {"message": "bad json"}}, 400)
                    return
                if self.path.rstrip("/").endswith("/embeddings"):
                    inputs = body.get("input")
                    inputs = inputs if isinstance(inputs, list) else [inputs]
                    reply = {"object": "list", "model": MODEL_ID, "data": [
                        {"object": "embedding", "index": i, "embedding": embed(str(x))}
                        for i, x in enumerate(inputs)],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1}}
                    model.record(self.path, body, {"embeddings": len(inputs)})
                    self._json(reply)
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    model.record(self.path, body, {"error": "unknown path"})
                    self._json({"error": {"message": "not found"}}, 404)
                    return
                played = next((got for r in model.responders
                               if (got := r(body)) is not None), None)
                if isinstance(played, int):  # the scenario fails this request
                    model.record(self.path, body, {"error": played})
                    failure = {"message": "scripted failure", "type": "invalid_request_error"}
                    self._json({"error": failure}, played)
                    return
                move = decide(body) if played is None else played
                call_id = model.next_call_id()
                ids = [call_id] + [model.next_call_id() for _ in calls_of(move)[1:]]
                made = [{"tool": c.name, "arguments": c.arguments, "id": i}
                        for c, i in zip(calls_of(move), ids, strict=False)]
                model.record(self.path, body, move if isinstance(move, str) else
                             made[0] if len(made) == 1 else made)
                if body.get("stream"):
                    self._stream(move, ids)
                else:
                    self._json(completion(move, ids))

            def _json(self, payload: dict[str, Any], status: int = 200) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, move: Move, ids: list[str]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                for chunk in stream_chunks(move, ids):
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def next_call_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call{self._calls:05d}"  # letters and digits: OpenClaw keeps such ids as sent

    def record(self, path: str, body: dict[str, Any], reply: Any) -> None:
        line = json.dumps({"t": time.time(), "path": path, "body": body, "reply": reply})
        with self._lock, self.log_path.open("a", encoding="utf-8") as out:
            out.write(line + "\n")

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def embed(text: str) -> list[float]:
    """A fixed 8-dimensional bag-of-letters vector: deterministic, no model."""
    vec = [0.0] * 8
    for ch in text.lower():
        vec[ord(ch) % 8] += 1.0
    norm = sum(v * v for v in vec) ** 0.5 or 1.0
    return [v / norm for v in vec]


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _tool_calls(move: Move, ids: list[str], streamed: bool) -> list[dict[str, Any]]:
    return [{**({"index": n} if streamed else {}), "id": i, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for n, (c, i) in enumerate(zip(calls_of(move), ids, strict=False))]


def completion(move: Move, ids: list[str]) -> dict[str, Any]:
    """A non-streaming chat completion for a move (``ids``: one per tool call)."""
    if isinstance(move, str):
        message: dict[str, Any] = {"role": "assistant", "content": move}
        finish = "stop"
    else:
        message = {"role": "assistant", "content": None,
                   "tool_calls": _tool_calls(move, ids, streamed=False)}
        finish = "tool_calls"
    return {"id": "chatcmpl-" + ids[0], "object": "chat.completion", "created": int(time.time()),
            "model": MODEL_ID,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage()}


def stream_chunks(move: Move, ids: list[str]) -> list[dict[str, Any]]:
    """The server-sent chunks of a streamed chat completion for a move."""
    base = {"id": "chatcmpl-" + ids[0], "object": "chat.completion.chunk",
            "created": int(time.time()), "model": MODEL_ID}
    if isinstance(move, str):
        deltas = [{"role": "assistant", "content": move}]
        finish = "stop"
    else:
        deltas = [{"role": "assistant", "content": None,
                   "tool_calls": _tool_calls(move, ids, streamed=True)}]
        finish = "tool_calls"
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}
              for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**base, "choices": [], "usage": _usage()})
    return chunks
