"""Transcript lines → memory tool calls and results (:mod:`.events`). Pure: bytes in, events out.

OpenClaw's readers accept many shapes of the same thing (pi-agent session
format v1–4, Claude Code transcripts, MCP-prefixed tool names), and so does
this parser. It never raises on bad input: a line that is not a JSON object is
reported as malformed and the caller counts it.

This module walks a line's record to its tool calls and results; what an answer found is
read by :mod:`.result_paths` (what counts as a hit is decided there, from the payload
alone), a tool's name by :mod:`.tool_names`, a line's time by :mod:`.timestamps`.
"""

from __future__ import annotations

from typing import Any

import orjson

from .calls import is_numbered
from .events import (
    CELL_VALUE,
    NESTED,
    SEARCH,
    TOOL_CALL,
    CellEnded,
    Event,
    ParsedLine,
    ResultPath,
    ToolCall,
    ToolResult,
    TurnStarted,
    Unrecognised,
)
from .result_paths import paths_of, payload_of, shape_of, text_of, tool_result
from .timestamps import line_epoch, line_time, to_epoch
from .tool_names import CODE_RUNNER, LOOKUPS, WRAPPER, memory_tool, mentions, nested_prefix
from .turn_kinds import run_kind

_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError

NESTED_TOOL_TYPE = "openclaw.nested-tool.v1"
_SAMPLE_MAX = 160

_CALL_BLOCK_TYPES = frozenset({"toolcall", "tooluse", "functioncall", "tool_use", "tool_call"})
_RESULT_BLOCK_TYPES = frozenset({"toolresult", "tool_result", "functionresult", "function_result"})
_RESULT_ROLES = frozenset({"toolresult", "tool_result", "tool", "function"})
_ID_KEYS = ("id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id", "call_id", "callId")
_RESULT_ID_KEYS = ("toolCallId", "toolUseId", "tool_call_id", "tool_use_id", "call_id", "callId",
                   "id")  # fmt: skip
_NAME_KEYS = ("toolName", "tool_name", "name")

_EMPTY = ParsedLine()
_MALFORMED = ParsedLine(malformed=True)

# ``tuple.__new__(ResultPath, fields)`` builds the same named tuple as ``ResultPath(*fields)``
# in one C call (the generated ``__new__`` is a Python function).
_new = tuple.__new__


def parse(line: bytes | memoryview) -> ParsedLine:
    """:func:`parse_line` of a line, decoded once; the scan's entry for every line it parses.

    The line may be a view into a region's bytes (the prescan slices no copy). A line that
    is not JSON goes to :func:`parse_line` whole (it keeps what invalid UTF-8 leaves readable).
    """
    try:
        record = _loads(line)
    except _DecodeError:
        return parse_line(bytes(line))
    if type(record) is not dict:
        return parse_record(record)
    try:  # (parse_record's steps, inline: this runs for every line a scan parses)
        events = _events(record)
    except _WALK_ERRORS:
        return _MALFORMED
    return _new(ParsedLine, (events, False)) if events else _EMPTY


def parse_line(line: bytes) -> ParsedLine:
    """Parse one transcript line (without its newline) into memory-tool events."""
    line = line.rstrip(b"\r")
    if not line.strip():
        return _EMPTY
    try:
        record = _loads(line)
    except _DecodeError:
        try:  # invalid UTF-8 inside an otherwise good line: keep what can be read
            record = _loads(line.decode("utf-8", "replace"))
        except _DecodeError:
            return _MALFORMED
    return parse_record(record)


def parse_record(record: Any) -> ParsedLine:
    """The events of a line already decoded from JSON (what :func:`parse_line` does next)."""
    if type(record) is not dict and not isinstance(record, dict):
        return _MALFORMED
    try:
        events = _events(record)
    except _WALK_ERRORS:
        return _MALFORMED
    return _new(ParsedLine, (events, False)) if events else _EMPTY


# --------------------------------------------------------------------------- records
#
# Nearly every line a scan parses is a tool call or result of another tool (openclaw-formats.md
# §3–4): the walk goes straight to the fields that matter, and takes the line's time only once
# it has an event to stamp.

_NO_EVENTS: tuple[Event, ...] = ()
# What a walk over a record of unexpected values may raise: the line is malformed.
_WALK_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)
# Block types that hold no tool call or result (skipped without a lower()).
_PLAIN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "image"})


def _events(record: dict[str, Any]) -> tuple[Event, ...]:
    msg = record.get("message")
    if type(msg) is not dict and not isinstance(msg, dict):
        msg = record  # bare {"role": "toolResult", ...} records
    role = msg.get("role")
    if role == "user":
        # A user message starts a turn, whose kind decides whether the lookups that follow
        # count (Claude Code's tool results in user messages are answers, not a turn).
        content = msg.get("content")
        if type(content) is list:
            answers = _blocks(record, msg, content)
            if answers or any(_is_tool_result(b) for b in content):
                return answers
        return (_new(TurnStarted, (run_kind(msg), None)),)
    if role == "assistant":
        content = msg.get("content")
        if type(content) is list:
            # (read as such even in a record typed ``custom``)
            return _blocks(record, msg, content)
    elif role == "toolResult" or (isinstance(role, str) and role.lower() in _RESULT_ROLES):
        return _result_message(record, msg)
    if role == "custom" or record.get("type") in ("custom", "custom_message"):
        events = custom_events(msg if role == "custom" else record, line_time(record, msg))
        return tuple(events)
    content = msg.get("content")
    if isinstance(content, list):
        return _blocks(record, msg, content)
    return _NO_EVENTS


def _is_tool_result(block: Any) -> bool:
    kind = block.get("type") if isinstance(block, dict) else None
    return isinstance(kind, str) and kind.lower() in _RESULT_BLOCK_TYPES


def _result_message(record: dict[str, Any], msg: dict[str, Any]) -> tuple[Event, ...]:
    """A tool's result message: a memory tool's answer, or Tool Search's wrapper or cell."""
    call_id = msg.get("toolCallId")
    if type(call_id) is not str or not call_id:  # the first key, usually: else all of them
        call_id = _first_str(msg, _RESULT_ID_KEYS)
        if not call_id:
            return _NO_EVENTS
    name = msg.get("toolName")
    if type(name) is not str or not name:
        name = _first_str(msg, _NAME_KEYS)
    tool = None
    if name is not None:
        tool = memory_tool(name)
        if tool is None:
            outer = name.strip().lower()
            if outer in (WRAPPER, CODE_RUNNER):
                return _tool_search_result(call_id, outer, record, msg)
            return _NO_EVENTS  # another tool's result: no event, no timestamp
    made = line_epoch(msg.get("timestamp")) if is_numbered(call_id) else None
    ts = line_time(record, msg)
    return (tool_result(call_id, tool, msg, ts, made),)


def _tool_search_result(
    call_id: str, outer: str, record: dict[str, Any], msg: dict[str, Any]
) -> tuple[Event, ...]:
    """The result of a ``tool_call`` wrapper or of a ``tool_search_code`` cell."""
    ts = line_time(record, msg)
    made = to_epoch(msg.get("timestamp")) if is_numbered(call_id) else None
    out: list[Event] = []
    if outer == WRAPPER:
        result = wrapped_result(call_id, msg, ts, made)
        if result is not None:
            out.append(result)
    elif msg.get("isError") is not True:
        out.extend(cell_value_events(call_id, msg, ts))
    # (a wrapper's answer that went well is said by its result; a cell's end is said either
    # way: its inner calls are remembered until then)
    failed = msg.get("isError") is True or msg.get("is_error") is True
    if failed or outer == CODE_RUNNER:
        out.append(_new(CellEnded, (call_id, made, failed, outer == WRAPPER)))
    return tuple(out)


def _blocks(record: dict[str, Any], msg: dict[str, Any], content: list[Any]) -> tuple[Event, ...]:
    """The tool calls and results of a message's content blocks (an assistant's calls, a
    Claude Code user message's ``tool_result`` blocks). A call block's usual keys (its name
    under ``name``, its id under ``id``, its arguments as an object) are read inline;
    anything else takes :func:`call_event`."""
    events: list[Event] = []
    ts: float | None = None
    timed = False
    for block in content:
        if type(block) is not dict and not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype != "toolCall":
            if type(btype) is not str or btype in _PLAIN_BLOCKS:
                continue
            btype = btype.lower()
            if btype in _RESULT_BLOCK_TYPES:
                call_id = _first_str(block, _RESULT_ID_KEYS)
                if not call_id:
                    continue
                name = _first_str(block, _NAME_KEYS)
                tool = None if name is None else memory_tool(name)
                if tool is None and name is not None:
                    continue  # another tool's result
                if not timed:
                    ts, timed = line_time(record, msg), True
                made = line_epoch(msg.get("timestamp")) if is_numbered(call_id) else None
                events.append(tool_result(call_id, tool, block, ts, made))
                continue
            if btype not in _CALL_BLOCK_TYPES:
                continue
        tool = memory_tool(block.get("name") or block.get("toolName"))
        if tool is None:
            # another tool, Tool Search's wrapper or a memory tool named in a shape not known:
            # call_event tells which (the line's time taken only when it is an event)
            if call_event(block, None, None) is None:
                continue
            if not timed:
                ts, timed = line_time(record, msg), True
            event = call_event(block, ts, line_epoch(msg.get("timestamp")))
            if event is not None:
                events.append(event)
            continue
        call_id = block.get("id")
        if type(call_id) is not str or not call_id:
            call_id = _first_str(block, _ID_KEYS)
            if not call_id:
                continue
        if not timed:
            ts, timed = line_time(record, msg), True
        args = block.get("arguments")
        if type(args) is dict:
            value = args.get("query" if tool is SEARCH else "path")
            query = value if type(value) is str else None
            made = line_epoch(msg.get("timestamp")) if is_numbered(call_id) else None
            events.append(_new(ToolCall, (call_id, tool, query, ts, made, None, None)))
        else:  # arguments elsewhere, or as a JSON string
            event = _call(block, ts, line_epoch(msg.get("timestamp")))
            if event is not None:
                events.append(event)
    return tuple(events) if events else _NO_EVENTS


def call_event(block: dict[str, Any], ts: float | None, made: float | None) -> Event | None:
    """What a tool-call block says: a memory call (direct, or through Tool Search's
    ``tool_call`` wrapper), a memory tool named in a shape not known here, or nothing."""
    name = block.get("name") or block.get("toolName")
    if memory_tool(name) is not None:
        return _call(block, ts, made)
    if not isinstance(name, str):
        return _unrecognised(block) if name is None else None
    lowered = name.strip().lower()
    if lowered == WRAPPER:
        return _wrapper_call(block, ts, made)
    if lowered == CODE_RUNNER or lowered in LOOKUPS:
        return None  # code mode's inner calls are told by their nested-tool records
    return _unrecognised(block)


def _arguments(block: dict[str, Any]) -> dict[str, Any]:
    """A call block's arguments as an object (some providers keep them as a JSON string)."""
    args = block.get("arguments")
    if args is None:
        args = block.get("input")
    if args is None:
        args = block.get("args")
    if isinstance(args, str):
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            args = {}
    return args if isinstance(args, dict) else {}


def _wrapper_call(block: dict[str, Any], ts: float | None, made: float | None) -> Event | None:
    """A ``tool_call`` block: the tool named by ``id`` (or ``toolId``, ``name``; a catalog id
    such as ``openclaw:core:memory_search`` too), with its arguments under ``args`` (or
    ``input``, or beside the id). Tool Search takes the id from the inner arguments when the
    outer ones name none; so does this."""
    args = _arguments(block)
    inner = args.get("args")
    if inner is None:
        inner = args.get("input")
    selector = _selector(args)
    if selector is None and isinstance(inner, dict):
        selector = _selector(inner)
    tool = memory_tool(selector)
    if tool is None:
        # another tool through the wrapper, as a rule; a memory tool named some other way is
        # shown as unrecognised
        return _unrecognised(block) if selector is None or mentions(selector) else None
    call_id = _first_str(block, _ID_KEYS)
    if not call_id:
        return _unrecognised(block)
    key = "query" if tool == SEARCH else "path"
    value = inner.get(key) if isinstance(inner, dict) and inner else None
    if value is None:
        value = args.get(key)
        if value is None:
            value = args.get("args." + key)
    made = made if is_numbered(call_id) else None
    return _new(
        ToolCall,
        (call_id, tool, value if isinstance(value, str) else None, ts, made, TOOL_CALL, None),
    )


def _selector(args: dict[str, Any]) -> str | None:
    for key in ("id", "toolId", "name"):
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def wrapped_result(
    call_id: str, msg: dict[str, Any], ts: float | None, made: float | None
) -> ToolResult | None:
    """The result of a ``tool_call`` wrapper: ``{tool: {name, …}, result: {content, details}}``
    in ``details`` (while kept whole) and as the text. The inner tool names what it is;
    a result whose inner tool cannot be read at all is an unnamed answer (its payload's
    shape decides, as for Claude Code's results)."""
    wrapped = _wrapped(msg.get("details"))
    if wrapped is None:
        text = text_of(msg.get("content"))
        if text is not None:
            stripped = text.strip()
            try:
                wrapped = _wrapped(orjson.loads(stripped))
            except orjson.JSONDecodeError:
                wrapped = None
            if wrapped is None:
                # cut: what can be recovered, unnamed. The tool's own answer is in there
                # twice, as an object and as a JSON string (its quotes escaped once): read
                # as one text, a path cut from one is still found in the other
                cut = {
                    "content": text.replace('\\"', '"'),
                    "isError": msg.get("isError"),
                    "is_error": msg.get("is_error"),
                }
                return tool_result(call_id, None, cut, ts, made)
    if wrapped is None:
        return None
    info, inner = wrapped
    name = info.get("name") if isinstance(info, dict) else None
    if name is None and isinstance(info, dict):
        name = info.get("id")
    tool = memory_tool(name)
    if tool is None:
        return None  # another tool's answer through the wrapper
    if msg.get("isError") is True or msg.get("is_error") is True or not isinstance(inner, dict):
        return _new(ToolResult, (call_id, tool, (), ts, False, None, made, None))
    return tool_result(call_id, tool, inner, ts, made)


def _wrapped(value: Any) -> tuple[Any, Any] | None:
    """(tool, result) of a wrapper's answer, or None when ``value`` is not one."""
    if isinstance(value, dict) and "tool" in value and "result" in value:
        return value["tool"], value["result"]
    return None


def cell_value_events(cell: str, msg: dict[str, Any], ts: float | None) -> list[Event]:
    """The memory calls a code-mode cell's value returned (``{"ok": true, "value": …}``): each
    envelope ``{"tool", "result"}`` of a memory tool in it, in order, as a call and its answer
    (``via`` CELL_VALUE, ``parent`` the cell; their ids from the cell's and the place).

    The value is whatever the code returned. What it holds counts only for a cell that wrote
    no nested-tool record of its own (the applier decides).
    """
    payload = msg.get("details")
    if not isinstance(payload, dict) or "value" not in payload:
        text = text_of(msg.get("content"))
        if text is None or '"memory_' not in text:
            return []
        try:
            payload = orjson.loads(text.strip())
        except orjson.JSONDecodeError:
            return []
    if not isinstance(payload, dict):
        return []
    found: list[tuple[str, str, dict[str, Any]]] = []
    _envelopes(payload.get("value"), found, 0)
    out: list[Event] = []
    made = to_epoch(msg.get("timestamp")) if is_numbered(cell) else None
    # (a cell id a provider reuses: the message's time keeps each turn's value its own)
    when = "" if made is None else f"@{round(made * 1000)}"
    for i, (name, tool, inner) in enumerate(found):
        value_id = f"{nested_prefix(cell)}{name}:value{i}{when}"
        out.append(_new(ToolCall, (value_id, tool, None, ts, None, CELL_VALUE, cell)))
        payload_i, recovered = payload_of(inner.get("content"), inner.get("details"))
        paths: tuple[ResultPath, ...] = ()
        if inner.get("isError") is not True:
            paths = paths_of(tool, payload_i)
        shape = shape_of(payload_i) if isinstance(payload_i, dict) else None
        result = (value_id, tool, paths, ts, recovered, shape, None, cell)
        out.append(_new(ToolResult, result))
    return out


_VALUE_DEPTH = 8  # how deep a returned value is searched for envelopes


def _envelopes(value: Any, found: list[tuple[str, str, dict[str, Any]]], depth: int) -> None:
    """The memory tools' envelopes in a returned value: (tool name, SEARCH or GET, its
    result), in order, to a bounded depth."""
    if depth > _VALUE_DEPTH:
        return
    if isinstance(value, list):
        for item in value:
            _envelopes(item, found, depth + 1)
        return
    if not isinstance(value, dict):
        return
    wrapped = _wrapped(value)
    if wrapped is not None:
        info, inner = wrapped
        name = info.get("name") or info.get("id") if isinstance(info, dict) else info
        tool = memory_tool(name)
        if tool is not None and isinstance(inner, dict):
            found.append(("memory_search" if tool == SEARCH else "memory_get", tool, inner))
        return
    for item in value.values():
        _envelopes(item, found, depth + 1)


def custom_events(msg: dict[str, Any], ts: float | None) -> list[Event]:
    """A custom message: a nested-tool record of a memory tool (a call and, unless its output
    was left out, its answer), or one that names a memory tool in another shape."""
    details = msg.get("details")
    if msg.get("customType") != NESTED_TOOL_TYPE or not isinstance(details, dict):
        unknown = _unrecognised(msg)
        return [] if unknown is None else [unknown]
    name = details.get("toolName")
    tool = memory_tool(name)
    nested_id = details.get("toolCallId")
    if tool is None or not isinstance(nested_id, str) or not nested_id:
        unknown = _unrecognised(details) if tool is not None or not isinstance(name, str) else None
        return [] if unknown is None else [unknown]
    parent = details.get("parentToolCallId")
    parent = parent if isinstance(parent, str) and parent else None
    scope = details.get("scopeId")
    if parent is not None and is_numbered(parent) and isinstance(scope, str):
        # the record's id holds its parent's, which a provider may reuse every turn: the run's
        # scope (a fresh id each run) and the call's place in the run keep it its own
        nested_id = f"{nested_id}@{scope}:{details.get('startOrder')}"
    made = to_epoch(msg.get("timestamp"))
    if made is None:
        made = to_epoch(details.get("startedAt"))
    args = details.get("input")
    value = args.get("query" if tool == SEARCH else "path") if isinstance(args, dict) else None
    query = value if isinstance(value, str) else None
    call = _new(ToolCall, (nested_id, tool, query, ts, made, NESTED, parent))
    if details.get("isError") is True:  # failed or timed out: answered, nothing found
        return [call, _new(ToolResult, (nested_id, tool, (), ts, False, None, None, parent))]
    inner = details.get("result")
    if not isinstance(inner, dict):
        return [call]
    payload, recovered = payload_of(inner.get("content"), inner.get("details"))
    if not isinstance(payload, dict):
        # output left out (over the record's size bound): the wrapper's own answer, if any,
        # says what was found
        return [call]
    paths = paths_of(tool, payload)
    result = (nested_id, tool, paths, ts, recovered, shape_of(payload), None, parent)
    return [call, _new(ToolResult, result)]


def _unrecognised(value: Any) -> Unrecognised | None:
    """An Unrecognised event for a call or custom message that names a memory tool, else None."""
    if not mentions(value):
        return None
    try:
        sample = orjson.dumps(value).decode("utf-8", "replace")
    except (TypeError, orjson.JSONEncodeError):
        sample = repr(value)
    if len(sample) > _SAMPLE_MAX:
        sample = sample[: _SAMPLE_MAX - 1] + "…"
    return _new(Unrecognised, (sample,))


def _call(block: dict[str, Any], ts: float | None, made: float | None) -> ToolCall | None:
    tool = memory_tool(block.get("name") or block.get("toolName"))
    if tool is None:
        return None
    call_id = _first_str(block, _ID_KEYS)
    if not call_id:
        return None
    value = _arguments(block).get("query" if tool == SEARCH else "path")
    made = made if is_numbered(call_id) else None  # (only a reused id needs it)
    query = value if isinstance(value, str) else None
    return _new(ToolCall, (call_id, tool, query, ts, made, None, None))


def _first_str(obj: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None
