"""The ground truth of a recording, from the requests OpenClaw sent the scripted model.

A tool result reaches the model once as the newest message of a request (and again, as
history, in later requests): each result is taken once, by its call id. A hit is one memory
file in one ``memory_search`` result, or one ``memory_get`` that returned text (the README's
definition), whichever way the call was made: directly, through Tool Search's ``tool_call``
(``{"tool", "result"}`` envelope), or inside a code-mode cell (``{"ok", "value"}`` holding
one envelope per bridged call). What the model never saw (a cell that timed out or failed)
is no hit.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .model_server import INTERNAL, message_text

MEMORY_TOOLS = ("memory_search", "memory_get")
RUNTIME_LINE = re.compile(r"Runtime: agent=(?P<agent>[^ |]+) \| session=(?P<key>[^ |]+)")


@dataclass
class MemoryCall:
    """One memory tool call as the model saw its result."""

    call_id: str
    agent: str
    session_key: str
    route: str  # direct | tool_call | code
    tool: str
    args: dict[str, Any]
    files: list[str] = field(default_factory=list)
    outcome: str = "ok"  # ok | empty | error | not-seen
    run: str | None = None  # heartbeat | cron: a turn that is not the user's (None: the user's)


# The heartbeat prompt the scenarios configure begins so (OpenClaw sends it as the turn's user
# message to the model, and writes "[OpenClaw heartbeat poll]" in the transcript); a cron
# job's message reaches the model as "[cron:<jobId> <name>] …".
HEARTBEAT_PROMPT = "heartbeat check"
# The runs memoryd leaves out by default (openclaw.count_heartbeat / count_cron off).
LEFT_OUT_RUNS = ("heartbeat", "cron")


def run_of(text: str) -> str | None:
    """The kind of run a turn is, from the user message the model was sent."""
    text = text.lstrip()
    if text.startswith(HEARTBEAT_PROMPT):
        return "heartbeat"
    if text.startswith("[cron:"):
        return "cron"
    return None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def inside(path: str, workspace_files: set[str]) -> str | None:
    """The workspace-relative name of a path a tool reported, when it names a note there."""
    if not isinstance(path, str) or not path:
        return None
    norm = posixpath.normpath(path.replace("\\", "/"))
    return norm if norm in workspace_files else None


def files_of(tool: str, text: str, workspace_files: set[str]) -> tuple[list[str], str]:
    """The files one memory tool's result text hits, and how it came out."""
    doc = _json(text)
    if not isinstance(doc, dict):
        return [], "error"
    if tool == "memory_search":
        results = doc.get("results")
        if not isinstance(results, list):
            return [], "error"
        seen: list[str] = []
        for r in results:
            if isinstance(r, dict):
                name = inside(r.get("path"), workspace_files)
                if name and name not in seen:
                    seen.append(name)
        return seen, "ok" if seen else "empty"
    text_value = doc.get("text")
    if doc.get("error") or doc.get("disabled"):
        return [], "error"
    if isinstance(text_value, str) and text_value:
        name = inside(doc.get("path"), workspace_files)
        return ([name], "ok") if name else ([], "outside")
    return [], "empty"


def envelopes(value: Any) -> list[dict[str, Any]]:
    """Every ``{"tool": {...}, "result": {...}}`` envelope inside a code cell's value."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if isinstance(value.get("tool"), dict) and isinstance(value.get("result"), dict):
            found.append(value)
        else:
            for v in value.values():
                found.extend(envelopes(v))
    elif isinstance(value, list):
        for v in value:
            found.extend(envelopes(v))
    return found


def calls_of_result(call_id: str, name: str, args: dict[str, Any], text: str, agent: str,
                    key: str, workspace_files: set[str]) -> list[MemoryCall]:
    """The memory calls one tool result reports (none, one, or a code cell's many)."""
    if name in MEMORY_TOOLS:
        files, outcome = files_of(name, text, workspace_files)
        return [MemoryCall(call_id, agent, key, "direct", name, args, files, outcome)]
    doc = _json(text)
    if name == "tool_call":
        target = args.get("id") or args.get("name")
        if target not in MEMORY_TOOLS:
            return []
        if not isinstance(doc, dict) or not isinstance(doc.get("result"), dict):
            return [MemoryCall(call_id, agent, key, "tool_call", target, args.get("args") or {},
                               [], "error")]
        inner = _content_text(doc["result"].get("content"))
        files, outcome = files_of(target, inner, workspace_files)
        return [MemoryCall(call_id, agent, key, "tool_call", target, args.get("args") or {},
                           files, outcome)]
    if name == "tool_search_code":
        if not isinstance(doc, dict) or doc.get("ok") is not True:
            return [MemoryCall(call_id, agent, key, "code", "?", args, [], "error")]
        out = []
        for n, env in enumerate(envelopes(doc.get("value"))):
            target = env["tool"].get("name")
            if target not in MEMORY_TOOLS:
                continue
            inner = _content_text(env["result"].get("content"))
            files, outcome = files_of(target, inner, workspace_files)
            out.append(MemoryCall(f"{call_id}#{n}", agent, key, "code", target, {}, files, outcome))
        return out
    return []


def memory_calls(log: Path, workspaces: dict[str, set[str]]) -> list[MemoryCall]:
    """Every memory call in a request log, once, in the order the model saw the results."""
    seen: set[str] = set()
    calls: list[MemoryCall] = []
    for line in log.read_text(encoding="utf-8").splitlines():
        body = json.loads(line)["body"]
        messages = body.get("messages") or []
        agent, key = "main", "?"
        for m in messages:
            if m.get("role") == "user" and INTERNAL not in message_text(m):
                found = RUNTIME_LINE.search(message_text(m))
                if found:
                    agent, key = found.group("agent"), found.group("key")
                    break
        users = [message_text(m) for m in messages
                 if m.get("role") == "user" and INTERNAL not in message_text(m)]
        run = run_of(users[-1]) if users else None
        asked: dict[str, tuple[str, dict[str, Any]]] = {}
        for m in messages:
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                args = _json(fn.get("arguments") or "{}")
                asked[tc.get("id")] = (fn.get("name"), args if isinstance(args, dict) else {})
            if m.get("role") == "tool":
                call_id = m.get("tool_call_id")
                if call_id in seen or call_id not in asked:
                    continue
                seen.add(call_id)
                name, args = asked[call_id]
                found_calls = calls_of_result(call_id, name, args, _content_text(m.get("content")),
                                              agent, key, workspaces.get(agent, set()))
                for c in found_calls:
                    c.run = run
                calls.extend(found_calls)
    return calls


def hits_per_file(calls: list[MemoryCall], agent: str = "main") -> dict[str, int]:
    """Hits per note of one agent's workspace."""
    counter: Counter[str] = Counter()
    for c in calls:
        if c.agent == agent and c.run not in LEFT_OUT_RUNS:
            counter.update(c.files)
    return dict(sorted(counter.items()))


def truth_document(calls: list[MemoryCall], workspaces: dict[str, set[str]],
                   meta: dict[str, Any]) -> dict[str, Any]:
    """``truth.json``: hits per file per agent (zeros included), and every call."""
    hits = {}
    for agent, files in workspaces.items():
        counts = dict.fromkeys(sorted(files), 0)
        counts.update(hits_per_file(calls, agent))
        hits[agent] = counts
    routes = Counter(c.route for c in calls)
    return {**meta, "hits": hits, "calls_by_route": dict(sorted(routes.items())),
            "calls": [asdict(c) for c in calls]}
