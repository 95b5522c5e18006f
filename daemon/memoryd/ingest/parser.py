"""Transcript lines → memory tool calls and results. Pure: bytes in, events out.

OpenClaw's readers accept many shapes of the same thing (pi-agent session
format v1–4, Claude Code transcripts, MCP-prefixed tool names), and so does
this parser. It never raises on bad input: a line that is not a JSON object is
reported as malformed and the caller counts it.

What counts as a hit is decided here, from the payload alone:

- ``memory_search``: every ``results[]`` entry with a ``path``, except
  ``source: "sessions"`` (indexed transcripts, not memory files) and a ``corpus``
  other than ``memory`` (a wiki or plugin corpus, whose paths are its own). Several
  chunks of one file are one hit (best score, widest line range). A disabled
  or failed search is an answer with no hits.
- ``memory_get``: a hit on its ``path`` when the returned ``text`` is non-empty (and
  it was not read from another ``corpus``).
- The payload is read from ``details`` when that still has the data, else from
  ``content[].text`` (``details`` over 8 KiB is replaced by a truncation
  marker). When the text itself was cut and is no longer JSON, the
  ``"path": "..."`` entries are recovered from it rather than dropping the call,
  each with the ``corpus`` its result names before the cut.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, NamedTuple

import orjson

from ..section_map import WHOLE_FILE
from .calls import is_numbered

_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError

SEARCH, GET = "search", "get"
# How a memory call was reached (ToolCall.via; docs/openclaw-formats.md §5). CELL_VALUE: an
# envelope found in a code-mode cell's returned value (counted only for a cell that wrote no
# nested-tool records: 2026.7's code mode).
TOOL_CALL, NESTED, CODE, CELL_VALUE = "tool_call", "nested", "code", "cell_value"
NESTED_TOOL_TYPE = "openclaw.nested-tool.v1"
# Tool Search's own tools: the wrapper that calls a tool by id, the code-mode runner whose inner
# calls are told by nested-tool records, and the two that only look tools up (their arguments
# and answers name memory tools without calling them).
_WRAPPER = "tool_call"
_CODE_RUNNER = "tool_search_code"
_LOOKUPS = frozenset({"tool_search", "tool_describe"})
# What a call or custom message must hold to be looked at as a memory call in a shape not known.
_MENTIONS = (b"memory_search", b"memory_get")
_SAMPLE_MAX = 160

_CALL_BLOCK_TYPES = frozenset({"toolcall", "tooluse", "functioncall", "tool_use", "tool_call"})
_RESULT_BLOCK_TYPES = frozenset({"toolresult", "tool_result", "functionresult", "function_result"})
_RESULT_ROLES = frozenset({"toolresult", "tool_result", "tool", "function"})
_ID_KEYS = ("id", "toolCallId", "toolUseId", "tool_call_id", "tool_use_id", "call_id", "callId")
_RESULT_ID_KEYS = (
    "toolCallId",
    "toolUseId",
    "tool_call_id",
    "tool_use_id",
    "call_id",
    "callId",
    "id",
)
_NAME_KEYS = ("toolName", "tool_name", "name")

# "path": "..." inside (possibly cut) JSON text; the value is a JSON string body.
_PATH_IN_TEXT = re.compile(r'"path"\s*:\s*"((?:[^"\\]|\\.)*)"')
_TEXT_IN_TEXT = re.compile(r'"text"\s*:\s*"((?:[^"\\]|\\.)?)')
# A JSON string (a key when a colon follows), or a brace or bracket outside strings: to tell
# which object of a cut text a recovered path belongs to.
_TOKEN_IN_TEXT = re.compile(r'"((?:[^"\\]|\\.)*)"(\s*:)?|[{}\[\]]')


# The events are named tuples rather than dataclasses: a scan builds thousands of them,
# and a large backlog's are sent back from a helper process (pickled), where tuples
# cost a tenth of what frozen dataclasses do.


class ResultPath(NamedTuple):
    """One memory file in a result, as the transcript wrote it (untrusted)."""

    path: str
    score: float | None = None
    start_line: int | None = None
    end_line: int | None = None
    # The text the hit returned, each chunk as (start, end, text), or WHOLE_FILE for a
    # memory_get of the whole file; None without any. The applier turns a new hit's into
    # fingerprints (section_map.anchor_text): where in the file it lies, after edits too.
    # (Kept as the parsed string, no work here: copies of an answer never pay for it.)
    anchor: Any = None


class ToolCall(NamedTuple):
    """An agent asked a memory tool something."""

    call_id: str
    tool: str  # SEARCH or GET
    query: str | None  # the search query, or the path asked for by memory_get
    ts: float | None
    # For an id a provider reuses (providers that number calls per turn: ``memory_search_0``;
    # see .calls.is_numbered): the message's own time (pi-ai's ``message.timestamp``; the
    # record's for a bare record), which every copy of the message keeps, so a call that
    # reuses the id is told from a copy of an earlier one. None for any other id. For a
    # nested-tool record (``via`` NESTED): that record's own time, always (its parent's id
    # may be one a provider reuses).
    made: float | None = None
    # How the agent reached the tool: None directly, TOOL_CALL through Tool Search's
    # ``tool_call`` wrapper, NESTED as told by an ``openclaw.nested-tool.v1`` record (an inner
    # call of ``tool_search_code``, or the same call as a ``tool_call`` wrapper: the applier
    # tells which by the parent).
    via: str | None = None
    # For a nested-tool record: the id of the outer call it ran inside (``parentToolCallId``).
    parent: str | None = None


class ToolResult(NamedTuple):
    """A tool answered. ``tool`` is None when the line does not name it (Claude Code)."""

    call_id: str
    tool: str | None
    paths: tuple[ResultPath, ...]
    ts: float | None
    recovered: bool = False  # payload text was cut; paths recovered by pattern
    # For an unnamed result: the shape of the payload, so the caller can tell a
    # memory answer from another tool's answer once it knows the call.
    shape: str | None = None  # SEARCH, GET or None
    # For an id a provider reuses (see .calls.is_numbered): the message's own time, which
    # every copy keeps, so a copy of an earlier turn's answer is told from the next turn's.
    made: float | None = None
    # For the answer held by a nested-tool record: the outer call's id (see ToolCall.parent).
    parent: str | None = None


class Unrecognised(NamedTuple):
    """A tool call or custom message that names a memory tool in a shape not known here.

    Counted and shown (``scan --json``, ``status``), never guessed at: a future OpenClaw
    shape shows up as a number rather than as silence.
    """

    sample: str  # what it looked like, cut short (for "unrecognised: N, e.g. …")


class CellEnded(NamedTuple):
    """A ``tool_search_code`` cell (or a ``tool_call`` wrapper) answered: its result line.

    A cell that failed (``isError``: it timed out, or its code threw) returned nothing to
    the model, not even what its inner calls found before: their hits are taken back. The
    same for a wrapper whose own result is an error.
    """

    call_id: str
    made: float | None  # the message's time, for an id a provider reuses
    failed: bool
    wrapper: bool  # a ``tool_call`` wrapper's result (else a cell's)


Event = ToolCall | ToolResult | Unrecognised | CellEnded


def nested_prefix(parent: str) -> str:
    """How the ids of the nested-tool records of outer call ``parent`` begin (Tool Search
    names them ``tool_search_code:<parent, sanitized>:<tool>:<n>``)."""
    return f"{_CODE_RUNNER}:{_UNSAFE_IN_ID.sub('_', parent.strip())[:120] or 'call'}:"


_UNSAFE_IN_ID = re.compile(r"[^A-Za-z0-9_.:-]+")


class ParsedLine(NamedTuple):
    events: tuple[Event, ...] = ()
    malformed: bool = False


_EMPTY = ParsedLine()
_MALFORMED = ParsedLine(malformed=True)

# ``tuple.__new__(ResultPath, fields)`` builds the same named tuple as ``ResultPath(*fields)``
# in one C call; the generated ``__new__`` is a Python function, and a scan builds one per
# result of every search in the backlog.
_new = tuple.__new__


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


# The names already read: every call and result line names its tool, and the tool names
# are a handful (a bound keeps a transcript of made-up names from growing it). Only names of
# a tool name's usual length are kept: a name is as long as its line allows (up to
# ingest.max_line_bytes), and 4,096 of those would hold gigabytes for the daemon's life.
_TOOL_OF: dict[str, str | None] = {"memory_search": SEARCH, "memory_get": GET}
_TOOL_OF_MAX = 4096
_TOOL_NAME_MAX = 128


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
# Nearly every line a scan parses is an assistant message of tool calls or a tool result
# (openclaw-formats.md §3–4), and nearly all of those name another tool: the walk goes
# straight to the fields that matter, skips the usual block types without a ``lower()``,
# and computes the line's time only once it has an event to stamp (a line naming no memory
# tool costs no timestamp).

_NO_EVENTS: tuple[Event, ...] = ()
# What a walk over a record of unexpected values may raise: the line is malformed.
_WALK_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)
# Block types that hold no tool call or result (skipped without a lower()).
_PLAIN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "image"})


def _timestamp(record: dict[str, Any], msg: dict[str, Any]) -> float | None:
    """The line's time: the record's, else the message's."""
    ts = line_epoch(record.get("timestamp"))
    return line_epoch(msg.get("timestamp")) if ts is None else ts


def _events(record: dict[str, Any]) -> tuple[Event, ...]:
    msg = record.get("message")
    if type(msg) is not dict and not isinstance(msg, dict):
        msg = record  # bare {"role": "toolResult", ...} records
    role = msg.get("role")
    if role == "assistant" or role == "user":
        content = msg.get("content")
        if type(content) is list:
            # (read as such even in a record typed ``custom``)
            return _blocks(record, msg, content)
    elif role == "toolResult" or (isinstance(role, str) and role.lower() in _RESULT_ROLES):
        return _result_message(record, msg)
    if role == "custom" or record.get("type") in ("custom", "custom_message"):
        events = custom_events(msg if role == "custom" else record, _timestamp(record, msg))
        return tuple(events)
    content = msg.get("content")
    if isinstance(content, list):
        return _blocks(record, msg, content)
    return _NO_EVENTS


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
            if outer in (_WRAPPER, _CODE_RUNNER):
                return _tool_search_result(call_id, outer, record, msg)
            return _NO_EVENTS  # another tool's result: no event, no timestamp
    made = line_epoch(msg.get("timestamp")) if is_numbered(call_id) else None
    ts = _timestamp(record, msg)
    return (_answer(call_id, tool, msg, ts, made),)


def _tool_search_result(
    call_id: str, outer: str, record: dict[str, Any], msg: dict[str, Any]
) -> tuple[Event, ...]:
    """The result of a ``tool_call`` wrapper or of a ``tool_search_code`` cell."""
    ts = _timestamp(record, msg)
    made = to_epoch(msg.get("timestamp")) if is_numbered(call_id) else None
    out: list[Event] = []
    if outer == _WRAPPER:
        result = wrapped_result(call_id, msg, ts, made)
        if result is not None:
            out.append(result)
    elif msg.get("isError") is not True:
        out.extend(cell_value_events(call_id, msg, ts))
    # (a wrapper's answer that went well is said by its result; a cell's end is said either
    # way: its inner calls are remembered until then)
    failed = msg.get("isError") is True or msg.get("is_error") is True
    if failed or outer == _CODE_RUNNER:
        out.append(_new(CellEnded, (call_id, made, failed, outer == _WRAPPER)))
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
                    ts, timed = _timestamp(record, msg), True
                made = line_epoch(msg.get("timestamp")) if is_numbered(call_id) else None
                events.append(_answer(call_id, tool, block, ts, made))
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
                ts, timed = _timestamp(record, msg), True
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
            ts, timed = _timestamp(record, msg), True
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
    if lowered == _WRAPPER:
        return _wrapper_call(block, ts, made)
    if lowered == _CODE_RUNNER or lowered in _LOOKUPS:
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
        return _unrecognised(block) if selector is None or _mentions(selector) else None
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
        text = _text_of(msg.get("content"))
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
                return _answer(call_id, None, cut, ts, made)
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
    return _answer(call_id, tool, inner, ts, made)


def _wrapped(value: Any) -> tuple[Any, Any] | None:
    """(tool, result) of a wrapper's answer, or None when ``value`` is not one."""
    if isinstance(value, dict) and "tool" in value and "result" in value:
        return value["tool"], value["result"]
    return None


def cell_value_events(cell: str, msg: dict[str, Any], ts: float | None) -> list[Event]:
    """The memory calls a code-mode cell's value returned (``{"ok": true, "value": …}``): each
    envelope ``{"tool", "result"}`` of a memory tool in it, in order, as a call and its answer
    (``via`` CELL_VALUE, ``parent`` the cell; their ids from the cell's and the place).

    The value is whatever the code returned: one envelope, a list, an object holding some, or
    none. What it holds counts only for a cell that wrote no nested-tool record of its own
    (the applier decides): 2026.8 and later write one per inner call, and those count.
    """
    payload = msg.get("details")
    if not isinstance(payload, dict) or "value" not in payload:
        text = _text_of(msg.get("content"))
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
        payload_i, recovered = _payload(inner.get("content"), inner.get("details"))
        paths: tuple[ResultPath, ...] = ()
        if inner.get("isError") is not True:
            paths = _paths(tool, payload_i)
        shape = _shape(payload_i) if isinstance(payload_i, dict) else None
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
    payload, recovered = _payload(inner.get("content"), inner.get("details"))
    if not isinstance(payload, dict):
        # output left out (over the record's size bound): the wrapper's own answer, if any,
        # says what was found
        return [call]
    paths = _paths(tool, payload)
    result = (nested_id, tool, paths, ts, recovered, _shape(payload), None, parent)
    return [call, _new(ToolResult, result)]


def _mentions(value: Any) -> bool:
    """Whether a value names a memory tool anywhere (a string, or an object's JSON)."""
    if isinstance(value, str):
        raw = value.encode("utf-8", "replace")
    else:
        try:
            raw = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return False
    return any(m in raw for m in _MENTIONS)


def _unrecognised(value: Any) -> Unrecognised | None:
    """An Unrecognised event for a call or custom message that names a memory tool, else None."""
    if not _mentions(value):
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
    args = block.get("arguments")
    if args is None:
        args = block.get("input")
    if args is None:
        args = block.get("args")
    if isinstance(args, str):  # some providers keep arguments as a JSON string
        try:
            args = orjson.loads(args)
        except orjson.JSONDecodeError:
            args = {}
    if not isinstance(args, dict):
        args = {}
    key = "query" if tool == SEARCH else "path"
    value = args.get(key)
    made = made if is_numbered(call_id) else None  # (only a reused id needs it)
    query = value if isinstance(value, str) else None
    return _new(ToolCall, (call_id, tool, query, ts, made, None, None))


def _answer(
    call_id: str, tool: str | None, holder: dict[str, Any], ts: float | None, made: float | None
) -> ToolResult:
    """A memory tool's answer (``tool`` None: a result naming no tool, known by its payload's
    shape), its ``content`` and ``details`` held in a message, a content block or a wrapper.

    The payload is ``details`` when intact; else the content's text, decoded here when it
    is the usual one text block (or string) holding a JSON object, recovered at once when
    it was cut (no decode that must fail), else taken by :func:`_payload`.
    """
    if holder.get("isError") is True or holder.get("is_error") is True:
        return _new(ToolResult, (call_id, tool, (), ts, False, None, made, None))
    recovered = False
    payload: object
    details = holder.get("details")
    if type(details) is dict and (
        "results" in details or "text" in details or "disabled" in details
    ):
        payload = details  # intact details: the text is not read
    else:
        payload = _NOT_READ
        content = holder.get("content")
        if type(content) is list and len(content) == 1:
            block = content[0]
            text = block.get("text") if type(block) is dict else None
        else:
            text = content  # a string, or nothing the lean reading takes
        if type(text) is str and text[:1] == "{":
            if text[-1:] == "}":
                try:  # (JSON allows only whitespace around: ``strip`` gives the same)
                    payload = _loads(text)
                except _DecodeError:
                    payload = _NOT_READ
            elif not text.rstrip().endswith("}"):  # cut: no JSON object, no decode
                payload, recovered = _recover(text)
        if payload is _NOT_READ:
            payload, recovered = _payload(content, details)
    shape = _shape(payload) if type(payload) is dict else None
    if recovered:
        shape = shape or SEARCH
    kind = tool or shape
    if kind is None:
        return _new(ToolResult, (call_id, None, (), ts, False, None, made, None))
    paths: tuple[ResultPath, ...] = ()
    if type(payload) is dict and payload.get("disabled") is not True:  # (_paths, inline)
        if kind is not SEARCH:
            paths = _get_paths(payload)
        else:
            results = payload.get("results")
            if type(results) is list:
                paths = _search_paths(results)
    return _new(ToolResult, (call_id, tool, paths, ts, recovered, shape, made, None))


_NOT_READ = object()  # a result's payload not taken yet


def _payload(content: Any, details: Any) -> tuple[Any, bool]:
    """The result object, from details if intact, else from the content text."""
    if isinstance(details, dict) and (
        "results" in details or "text" in details or "disabled" in details
    ):
        return details, False
    text = _text_of(content)
    if text is None:
        return (details if isinstance(details, dict) else None), False
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            return orjson.loads(stripped), False
        except orjson.JSONDecodeError:
            pass
    return _recover(text)


def _recover(text: str) -> tuple[Any, bool]:
    """The payload of a text that is not JSON: ``"path"`` entries recovered from it, if any,
    each with the ``corpus`` its result names (so another corpus's stays out, as it does from
    whole JSON)."""
    found = list(_PATH_IN_TEXT.finditer(text))
    if found:
        corpora = _corpus_at(text) if '"corpus"' in text else {}
        recovered = [(_json_unescape(m.group(1)), corpora.get(m.start())) for m in found]
        if '"results"' in text:
            return {"results": [_recovered(p, c) for p, c in recovered if p is not None]}, True
        m = _TEXT_IN_TEXT.search(text)
        if m is not None:  # a cut memory_get answer: non-empty text means it was read
            first, corpus = recovered[0]
            return _recovered(first, corpus, text="x" if m.group(1) else ""), True
        return {"results": [_recovered(p, c) for p, c in recovered if p is not None]}, True
    return None, False


def _recovered(path: str | None, corpus: str | None, **more: str) -> dict[str, Any]:
    return {"path": path, **more} if corpus is None else {"path": path, **more, "corpus": corpus}


def _corpus_at(text: str) -> dict[int, str]:
    """Where each ``"path"`` key of a (cut) JSON text starts → the ``corpus`` named by the
    object holding it, before or after it (before the cut), for the objects that name one.

    ``memory_search corpus=all`` puts ``corpus`` last in a memory result and first in a wiki
    page's; a nested object's ``corpus`` (``corpora: [{corpus, outcome}]``) is its own.
    """
    out: dict[int, str] = {}
    # The open objects: where their "path" keys start, their corpus values (None: not a string).
    objects: list[tuple[list[int], list[str | None]]] = []
    key = None  # the key whose value comes next
    for m in _TOKEN_IN_TEXT.finditer(text):
        value = m.group(1) is not None and m.group(2) is None
        if key == "corpus" and objects:
            # (a value that is no string shows as the next token, whatever it is)
            objects[-1][1].append(_json_unescape(m.group(1)) if value else None)
        key = None
        if m.group(1) is None:  # a brace or a bracket
            bracket = m.group(0)
            if bracket == "{":
                objects.append(([], []))
            elif bracket == "}" and objects:
                _name_corpus(out, *objects.pop())
        elif not value:
            key = m.group(1)
            if key == "path" and objects:
                objects[-1][0].append(m.start())
    for paths, corpus in objects:  # cut open
        _name_corpus(out, paths, corpus)
    return out


def _name_corpus(out: dict[int, str], paths: list[int], corpus: list[str | None]) -> None:
    # (a key given twice: the last one, as the JSON reader takes it)
    if corpus and corpus[-1] is not None:
        for at in paths:
            out[at] = corpus[-1]


def _shape(payload: dict[str, Any]) -> str | None:
    if type(payload.get("results")) is list or payload.get("disabled") is True:
        return SEARCH
    if "text" in payload and ("path" in payload or "from" in payload):
        return GET
    return None


def _paths(kind: str, payload: Any) -> tuple[ResultPath, ...]:
    """The memory files an answer of ``kind`` (SEARCH or GET) found: none when it was
    disabled or holds no object."""
    if type(payload) is not dict or payload.get("disabled") is True:
        return ()
    if kind is not SEARCH:
        return _get_paths(payload)
    results = payload.get("results")
    return _search_paths(results) if type(results) is list else ()


def _search_paths(results: list[Any]) -> tuple[ResultPath, ...]:
    """The files of a search's ``results``: one per path (several chunks of a file merge: best
    score, widest lines), the usual values read inline (this loop runs for every result of
    every search in the backlog)."""
    merged: dict[str, ResultPath] = {}
    for item in results:
        if type(item) is not dict:
            continue
        path = item.get("path")
        if type(path) is not str or not path:
            continue
        source = item.get("source")
        if source != "memory" and type(source) is str and source.lower() == "sessions":
            continue
        corpus = item.get("corpus")
        if corpus is not None and corpus != "memory" and not _memory_corpus(corpus):
            continue
        score = item.get("score")
        if type(score) is not float:
            score = _to_float(score)
        start = item.get("startLine")
        if start is None and "startLine" not in item:
            start = item.get("start_line")
        end = item.get("endLine")
        if end is None and "endLine" not in item:
            end = item.get("end_line")
        if type(start) is not int or not _INT_MIN <= start <= _INT_MAX:
            start = None if start is None else _to_int(start)
        if type(end) is not int or not _INT_MIN <= end <= _INT_MAX:
            end = None if end is None else _to_int(end)
        snippet = item.get("snippet")
        anchor = ((start, end, snippet),) if type(snippet) is str else None
        prev = merged.get(path)
        if prev is not None:  # another chunk of the file: the best score, the widest lines
            # (of equal values the first is kept, as ``max`` and ``min`` keep it)
            _, low, first, last, before = prev
            if low is not None and (score is None or not score > low):
                score = low
            if first is not None and (start is None or not start < first):
                start = first
            if last is not None and (end is None or not end > last):
                end = last
            if before is not None:  # each chunk's text kept: each covered its own section
                anchor = before if anchor is None else before + anchor
        merged[path] = _new(ResultPath, (path, score, start, end, anchor))
    return tuple(merged.values())


def _memory_corpus(corpus: Any) -> bool:
    """Whether a result's ``corpus`` is the workspace's memory (or not given).

    ``memory_search corpus=all|wiki`` mixes in results of other corpora (the memory-wiki
    vault, other plugins' supplements), and ``memory_get corpus=wiki`` reads them: their
    ``path`` is relative to that corpus, not to the workspace, so ``memory/x.md`` there is
    not the workspace's note.
    """
    return not isinstance(corpus, str) or corpus.lower() == "memory"


def _get_paths(payload: dict[str, Any]) -> tuple[ResultPath, ...]:
    """The file a ``memory_get`` answer (not disabled) read: its path when its text is not
    empty (the path may be missing in some builds: the caller fills it from the call's
    arguments)."""
    text = payload.get("text")
    if type(text) is not str or not text:
        return ()
    if "corpus" in payload and not _memory_corpus(payload["corpus"]):
        return ()
    path = payload.get("path")
    first = payload.get("from")
    if type(first) is not int or not _INT_MIN <= first <= _INT_MAX:
        first = None if first is None else _to_int(first)
    lines = payload.get("lines")
    if type(lines) is not int or not _INT_MIN <= lines <= _INT_MAX:
        lines = None if lines is None else _to_int(lines)
    end = first + lines - 1 if first is not None and lines else None
    # (no ``from``: the whole file was read, which says nothing of one section)
    anchor = WHOLE_FILE if first is None else ((first, end, text),)
    return (_new(ResultPath, (path if type(path) is str else "", None, first, end, anchor)),)


# --------------------------------------------------------------------------- values


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        return "".join(parts) if parts else None
    text = content.get("text") if isinstance(content, dict) else None
    return text if isinstance(text, str) else None


def _first_str(obj: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return None


def _json_unescape(body: str) -> str | None:
    try:
        value = orjson.loads(f'"{body}"')
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


def _to_float(value: Any) -> float | None:
    kind = type(value)  # JSON's own number types first, by identity
    if kind is float:
        return value  # type: ignore[no-any-return]  # (a float: its type is float)
    if kind is int:
        return float(value)
    if isinstance(value, str):  # (a number written as a string is common)
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


_INT_MAX = 10**12
# Its negation, once: ``-_INT_MAX`` in a test builds a new int object every time it runs.
_INT_MIN = -_INT_MAX


def _to_int(value: Any) -> int | None:
    f = _to_float(value)
    if f is None or f != f or abs(f) > _INT_MAX:
        return None
    return int(f)


def to_epoch(value: Any) -> float | None:
    """Epoch seconds from an ISO string, epoch seconds or epoch milliseconds."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        v = float(value)
    elif isinstance(value, str):
        s = value.strip()
        if len(s) < 10 or s[4:5] != "-":  # not an extended ISO date: a number?
            try:
                v = float(s)
            except ValueError:
                return _iso_epoch(s)
        else:  # the usual case
            return _iso_epoch(s)
    else:
        return None
    if v != v or v <= 0:
        return None
    if v > 1e11:  # milliseconds
        v /= 1000.0
    return v if v < 1e10 else None


def _iso_epoch(s: str) -> float | None:
    try:
        dt = datetime.fromisoformat(s)
        return dt.timestamp() if dt.tzinfo is not None else None
    except (ValueError, OverflowError):  # not a date; a date beyond what an epoch holds
        return None


_fromisoformat = datetime.fromisoformat


def line_epoch(value: Any) -> float | None:
    """:func:`to_epoch`, OpenClaw's ``2026-02-25T09:14:02.123Z`` without its detours.

    For a string of that length ending in ``Z``, not starting with a space, whose
    fifth character is ``-``, ``to_epoch`` strips nothing and hands it to
    ``datetime.fromisoformat`` (which gives a UTC time for the ``Z``): the same
    call here, minus the checks that cannot apply.
    """
    if (
        type(value) is str
        and len(value) == 24
        and value[23] == "Z"
        and value[4] == "-"
        and not value[0].isspace()
    ):
        try:
            return _fromisoformat(value).timestamp()
        except (ValueError, OverflowError):
            return None
    return to_epoch(value)
