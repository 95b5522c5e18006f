"""Tool names: which a line's tool is (memory_search, memory_get, Tool Search's own), pure.

A name is read wherever a transcript writes one (a call block's ``name``, a result's
``toolName``, a wrapper's ``id``, a nested-tool record's ``toolName``), with MCP prefixes and
case tolerated; :func:`memory_tool` remembers the names it has read, since a scan reads the
same handful on nearly every line.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from .events import GET, SEARCH

# Tool Search's own tools: the wrapper that calls a tool by id, the code-mode runner whose inner
# calls are told by nested-tool records, and the two that only look tools up (their arguments
# and answers name memory tools without calling them).
WRAPPER = "tool_call"
CODE_RUNNER = "tool_search_code"
LOOKUPS = frozenset({"tool_search", "tool_describe"})
# What a call or custom message must hold to be looked at as a memory call in a shape not known.
_MENTIONS = (b"memory_search", b"memory_get")


def nested_prefix(parent: str) -> str:
    """How the ids of the nested-tool records of outer call ``parent`` begin (Tool Search
    names them ``tool_search_code:<parent, sanitized>:<tool>:<n>``)."""
    return f"{CODE_RUNNER}:{_UNSAFE_IN_ID.sub('_', parent.strip())[:120] or 'call'}:"


_UNSAFE_IN_ID = re.compile(r"[^A-Za-z0-9_.:-]+")


def memory_tool(name: Any) -> str | None:
    """SEARCH / GET for memory_search / memory_get, MCP prefixes and case tolerated."""
    if not isinstance(name, str):
        return None
    tool = _TOOL_OF.get(name, "")
    if tool == "":  # a name not seen yet (a line names one of a handful, as a rule)
        tool = _memory_tool(name)
        if len(_TOOL_OF) < _TOOL_OF_MAX and len(name) <= _TOOL_NAME_MAX:
            _TOOL_OF[name] = tool
    return tool


def _memory_tool(name: str) -> str | None:
    n = name.strip().lower()
    for suffix, tool in (("memory_search", SEARCH), ("memory_get", GET)):
        if n == suffix:
            return tool
        if n.endswith(suffix) and n[-len(suffix) - 1] in "_.:/-":
            return tool
    return None


# The names already read (a handful, as a rule): bounded in count and in length, or a
# transcript of made-up names, each as long as its line, would hold gigabytes for months.
_TOOL_OF: dict[str, str | None] = {"memory_search": SEARCH, "memory_get": GET}
_TOOL_OF_MAX = 4096
_TOOL_NAME_MAX = 128


def mentions(value: Any) -> bool:
    """Whether a value names a memory tool anywhere (a string, or an object's JSON)."""
    if isinstance(value, str):
        raw = value.encode("utf-8", "replace")
    else:
        try:
            raw = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return False
    return any(m in raw for m in _MENTIONS)
