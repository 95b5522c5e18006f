"""What memoryd's OpenClaw plugin adds to each model request, read from a request log (issue 35).

The live harness's scripted model (``tests/live/model_server.py``) logs every request the real
OpenClaw sends as one JSON line ``{"path", "body", "reply"}``. The plugin's share of a request
is found in the body itself, by what only the plugin puts there, so no second run without the
plugin is needed (OpenClaw's own prompt changes between runs: a heartbeat's request differs
from a chat turn's by thousands of characters):

- ``schema``: the ``tools`` entry named ``memoryd_recall`` (compact JSON, as a model provider
  receives it; offered by name when Tool Search is off or the tool is ``direct``);
- ``prompt``: the system prompt's lines naming ``memoryd_recall`` (the tool list's ``-
  memoryd_recall`` when offered by name; Tool Search's directory line when deferred);
- ``notes``: the hot notes put before a session's first message (from their heading to the
  paragraph the user wrote; every request of the first turn's tool loop repeats them).

``schema`` and ``prompt`` are the standing cost: every request pays it, recall used or not.
Characters are Python ``str`` lengths (UTF-16 would differ only for characters beyond the
BMP). Pure: a list of lines in, numbers out; ``bench/bench_plugin_cost.py`` prints them.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterable
from typing import Any

from .model_server import message_text as _text

TOOL = "memoryd_recall"
NOTES_HEADING = "Recent notes from memoryd's tier store"
DIRECTIVE = "[["  # every message the harness sends holds a directive for the scripted model
SESSION = re.compile(r"session=(agent:[^\s|]+)")


def chat_bodies(lines: Iterable[str]) -> list[dict[str, Any]]:
    """The bodies of the chat requests in a request log, in order (other paths skipped)."""
    out = []
    for line in lines:
        if not line.strip():
            continue
        entry = json.loads(line)
        if str(entry.get("path", "")).endswith("/chat/completions"):
            out.append(entry["body"])
    return out


def notes_block(text: str) -> str:
    """The injected hot notes in a user message's text ("" when there are none)."""
    start = text.find(NOTES_HEADING)
    if start < 0:
        return ""
    said = text.find(DIRECTIVE, start)
    end = text.rfind("\n\n", start, said) + 2 if said >= 0 else len(text)
    return text[start:end] if end > start else text[start:]


def parts(body: dict[str, Any]) -> dict[str, int]:
    """The plugin's characters in one request: ``schema``, ``prompt``, ``notes``."""
    schema = sum(
        len(json.dumps(t, ensure_ascii=False, separators=(",", ":")))
        for t in body.get("tools") or []
        if (t.get("function") or {}).get("name") == TOOL
    )
    messages = body.get("messages") or []
    system = "\n".join(_text(m) for m in messages if m.get("role") in ("system", "developer"))
    prompt = sum(len(line) + 1 for line in system.splitlines() if TOOL in line)
    notes = sum(len(notes_block(_text(m))) for m in messages if m.get("role") == "user")
    return {"schema": schema, "prompt": prompt, "notes": notes}


def directory_line(body: dict[str, Any]) -> str:
    """Tool Search's directory line for the tool ("" when it is not deferred)."""
    for m in body.get("messages") or []:
        for line in _text(m).splitlines():
            if line.startswith(f"- {TOOL} ("):
                return line
    return ""


def session_of(body: dict[str, Any]) -> str:
    """The session key OpenClaw's runtime line names in the request ("?" when none)."""
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            found = SESSION.search(_text(m))
            if found:
                return found.group(1)
    return "?"


def cost(lines: Iterable[str]) -> dict[str, Any]:
    """Per request and per session, the plugin's characters in a request log."""
    rows = []
    for body in chat_bodies(lines):
        p = parts(body)
        rows.append({"session": session_of(body), **p, "standing": p["schema"] + p["prompt"]})
    sessions: dict[str, dict[str, int]] = {}
    for r in rows:
        s = sessions.setdefault(r["session"], {"requests": 0, "standing": 0, "notes": 0})
        s["requests"] += 1
        s["standing"] += r["standing"]
        s["notes"] += r["notes"]
    for s in sessions.values():
        s["total"] = s["standing"] + s["notes"]
    standing = [r["standing"] for r in rows]
    return {
        "requests": len(rows),
        "standing_max": max(standing, default=0),
        "standing_median": statistics.median(standing) if standing else 0,
        "schema_max": max((r["schema"] for r in rows), default=0),
        "prompt_max": max((r["prompt"] for r in rows), default=0),
        "notes_per_session_max": max((s["notes"] for s in sessions.values()), default=0),
        "notes_requests": sum(1 for r in rows if r["notes"]),
        "sessions": sessions,
        "rows": rows,
    }


def describe(c: dict[str, Any], label: str) -> list[str]:
    """A few lines a person reads: the standing cost, the notes, the busiest session."""
    if not c["requests"]:
        return [f"{label}: no requests"]
    busiest = max(c["sessions"].items(), key=lambda kv: kv[1]["total"])
    key, s = busiest
    return [
        f"{label}: {c['requests']} requests; the plugin adds at most {c['standing_max']} "
        f"characters to a request, every request (schema {c['schema_max']}, prompt lines "
        f"{c['prompt_max']}; median {c['standing_median']})",
        f"{label}: hot notes {c['notes_per_session_max']} characters a session at most, in "
        f"{c['notes_requests']} request(s) (a first turn's)",
        f"{label}: per session, e.g. {key}: {s['requests']} requests, {s['total']} characters "
        f"({s['standing']} standing + {s['notes']} notes)",
    ]
