"""The fast path of the parser: OpenClaw's own line shapes, read by a direct walk.

Nearly every line a scan parses is one of two shapes OpenClaw writes
(openclaw-formats.md §3–4): an assistant message whose ``content`` holds
``toolCall`` blocks, or a ``toolResult`` message naming its call id and tool,
with the answer in ``details`` or in ``content[].text``. :func:`parse_fast`
reads exactly those, going straight to the fields that matter (call id, tool,
query, the results' path, source, score and lines), and computes the line's
timestamp only when the line yields a call or a result. Any other shape, or a
field that is not what OpenClaw writes (an id given as a number, a block type
in another spelling, a bare record), returns None and the caller uses the
general :func:`.parser.parse_line`.

The answer is always the general parser's, value for value: what it builds it
builds with the parser's own pieces (``_call``, ``_result``), and the property
tests (tests/test_fastpath.py) compare both on generated and mutated lines.
"""

from __future__ import annotations

from typing import Any

import orjson

from .parser import (
    _CALL_BLOCK_TYPES,
    _EMPTY,
    _RESULT_BLOCK_TYPES,
    GET,
    SEARCH,
    ParsedLine,
    ToolCall,
    _call,
    _new,
    _result,
    memory_tool,
    parse_line,
    parse_record,
    to_epoch,
)

_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError
_TOOLS = {"memory_search": SEARCH, "memory_get": GET}
# Block types of an assistant message that hold no tool call (skipped without a lower()).
_PLAIN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "image"})
_TOOL_BLOCKS = _CALL_BLOCK_TYPES | _RESULT_BLOCK_TYPES
# What the general parser turns into a malformed line (caught there around the same walk).
_WALK_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)


def parse(line: bytes) -> ParsedLine:
    """What :func:`.parser.parse_line` says of ``line``, by the fast path where it can.

    The line is decoded once: a shape the fast path does not take goes to the
    general walk with the record already decoded; a line that is not JSON goes to
    the general parser whole (it keeps what invalid UTF-8 leaves readable).
    """
    try:
        record = _loads(line)
    except _DecodeError:
        return parse_line(line)
    if type(record) is dict:
        fast = fast_record(record)
        if fast is not None:
            return fast
    return parse_record(record)


def parse_fast(line: bytes) -> ParsedLine | None:
    """The line's events if it has one of OpenClaw's usual shapes, else None (use parse_line)."""
    try:
        record = _loads(line)
    except _DecodeError:
        return None
    return fast_record(record) if type(record) is dict else None


def fast_record(record: dict[str, Any]) -> ParsedLine | None:
    """The events of a decoded line of one of OpenClaw's usual shapes, else None."""
    msg = record.get("message")
    if type(msg) is not dict:
        return None  # a bare record or no message at all: the general parser's
    try:
        role = msg.get("role")
        if role == "toolResult":
            return _tool_result(record, msg)
        if role == "assistant":
            return _tool_calls(record, msg)
    except _WALK_ERRORS:
        return None  # the general parser says what this is (malformed, as a rule)
    return None


def _timestamp(record: dict[str, Any], msg: dict[str, Any]) -> float | None:
    """The line's time, as the general parser takes it: the record's, else the message's."""
    ts = to_epoch(record.get("timestamp"))
    return to_epoch(msg.get("timestamp")) if ts is None else ts


def _tool_result(record: dict[str, Any], msg: dict[str, Any]) -> ParsedLine | None:
    call_id = msg.get("toolCallId")
    name = msg.get("toolName")
    # The general parser takes the first non-empty id and name among several keys; these
    # are the first ones, so when they hold non-empty strings the choice is the same.
    if type(call_id) is not str or not call_id or type(name) is not str or not name:
        return None
    if _TOOLS.get(name) is None and memory_tool(name) is None:
        return _EMPTY  # another tool's result: no event, no timestamp
    ts = _timestamp(record, msg)
    result = _result(call_id, name, msg.get("content"), msg.get("details"), msg, ts)
    assert result is not None  # (a memory tool's result always is one)
    return _new(ParsedLine, ((result,), False))


def _tool_calls(record: dict[str, Any], msg: dict[str, Any]) -> ParsedLine | None:
    content = msg.get("content")
    if type(content) is not list:
        return None
    found: list[ToolCall] = []
    for block in content:
        if type(block) is not dict:
            continue
        btype = block.get("type")
        if btype == "toolCall":
            call = _call(block, None)
            if call is not None:
                found.append(call)
        elif btype in _PLAIN_BLOCKS:
            continue
        elif type(btype) is not str or btype.lower() in _TOOL_BLOCKS:
            return None  # another spelling of a tool block (or a result in it): general
    if not found:
        return _EMPTY  # no memory call: no timestamp
    ts = _timestamp(record, msg)
    return _new(ParsedLine, (tuple(_new(ToolCall, (*c[:3], ts)) for c in found), False))
