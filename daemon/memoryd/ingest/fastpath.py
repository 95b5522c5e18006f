"""The fast path of the parser: OpenClaw's own line shapes, read by a direct walk.

Nearly every line a scan parses is one of a few shapes (openclaw-formats.md
§3–4, §6): a message (wrapped in ``{"type":"message","message":{...}}`` or
bare) whose ``content`` holds tool-call or tool-result blocks — an assistant's
``toolCall`` blocks, a Claude Code ``user`` message's ``tool_result`` blocks —
or a ``toolResult`` message naming its call id and tool, with the answer in
``details`` or in ``content[].text``. :func:`parse_fast` reads those, going
straight to the fields that matter (call id, tool, query, the results' path,
source, score and lines), and computes the line's timestamp only when the line
yields a call or a result (:func:`.parser.line_epoch`). Where a value is not the
usual one (an id given as a number, a name under another key, arguments as a
JSON string…) it takes the general parser's own step for it; a shape it does
not know (another role, a record that is not an object) returns None and the
caller uses the general :func:`.parser.parse_record` / :func:`.parser.parse_line`.

The answer is always the general parser's, value for value: what it cannot
decide by the lean walk it decides with the parser's own pieces (``_call``,
``_payload``, ``_to_float``…), and the property tests
(tests/test_fastpath.py) compare both on generated and mutated lines.
"""

from __future__ import annotations

from typing import Any

import orjson

from .parser import (
    _CALL_BLOCK_TYPES,
    _EMPTY,
    _INT_MAX,
    _NAME_KEYS,
    _RESULT_BLOCK_TYPES,
    _RESULT_ID_KEYS,
    GET,
    SEARCH,
    ParsedLine,
    ResultPath,
    ToolCall,
    ToolResult,
    _call,
    _first_str,
    _get_paths,
    _new,
    _payload,
    _recover,
    _result,
    _to_float,
    _to_int,
    block_result,
    memory_tool,
    parse_line,
    parse_record,
)
from .parser import line_epoch as _epoch

_loads = orjson.loads
_DecodeError = orjson.JSONDecodeError
_TOOLS = {"memory_search": SEARCH, "memory_get": GET}
# Block types that hold no tool call or result (skipped without a lower()).
_PLAIN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "image"})
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
    """The events of a decoded line of one of the usual shapes, else None."""
    msg = record.get("message")
    if type(msg) is not dict:
        msg = record  # a bare record: the general parser reads the record itself
    try:
        role = msg.get("role")
        if role == "toolResult":
            return _tool_result(record, msg)
        if role == "assistant" or role == "user":
            return _blocks(record, msg)
    except _WALK_ERRORS:
        return None  # the general parser says what this is (malformed, as a rule)
    return None


# --------------------------------------------------------------------------- time


def _timestamp(record: dict[str, Any], msg: dict[str, Any]) -> float | None:
    """The line's time, as the general parser takes it: the record's, else the message's."""
    ts = _epoch(record.get("timestamp"))
    return _epoch(msg.get("timestamp")) if ts is None else ts


# --------------------------------------------------------------------------- results


def _tool_result(record: dict[str, Any], msg: dict[str, Any]) -> ParsedLine:
    """The general parser's ``_events`` and ``_result`` for a ``toolResult`` message."""
    call_id = msg.get("toolCallId")
    if type(call_id) is not str or not call_id:  # the first key, usually: else all of them
        call_id = _first_str(msg, _RESULT_ID_KEYS)
        if not call_id:
            return _EMPTY
    name = msg.get("toolName")
    if type(name) is not str or not name:
        name = _first_str(msg, _NAME_KEYS)
        if name is None:  # an answer that does not name its tool: the parser's own reading
            ts = _timestamp(record, msg)
            result = _result(call_id, None, msg.get("content"), msg.get("details"), msg, ts)
            return _new(ParsedLine, ((result,), False))
    tool = _TOOLS.get(name) or memory_tool(name)
    if tool is None:
        return _EMPTY  # another tool's result: no event, no timestamp
    ts = _timestamp(record, msg)
    if msg.get("isError") is True or msg.get("is_error") is True:
        result = _new(ToolResult, (call_id, tool, (), ts, False, None))
        return _new(ParsedLine, ((result,), False))
    details = msg.get("details")
    if type(details) is dict and (
        "results" in details or "text" in details or "disabled" in details
    ):
        payload, recovered = details, False  # intact details: the text is not read
    else:
        content = msg.get("content")
        printed = _printed(content)
        payload, recovered = _payload(content, details) if printed is None else printed
    return _new(ParsedLine, ((_answer(call_id, tool, payload, recovered, ts),), False))


def _printed(content: Any) -> tuple[Any, bool] | None:
    """The parser's ``_payload`` for the usual content: one text block holding JSON text.

    None for anything else (the caller asks ``_payload`` itself): no block, several,
    a text that does not start as a JSON object. A text that starts so but is not JSON
    (cut by a cap) goes to the parser's recovery without being decoded again.
    """
    if type(content) is not list or len(content) != 1:
        return None
    block = content[0]
    if type(block) is not dict:
        return None
    text = block.get("text")
    if type(text) is not str:
        return None
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        return _loads(stripped), False
    except _DecodeError:
        return _recover(text)


def _answer(call_id: str, tool: str, payload: Any, recovered: bool, ts: float | None) -> ToolResult:
    """The parser's ``_result`` from its payload on, for a result that names a memory tool."""
    shape = None
    paths: tuple[ResultPath, ...] = ()
    if type(payload) is dict:
        results = payload.get("results")
        disabled = payload.get("disabled") is True
        if type(results) is list or disabled:
            shape = SEARCH
        elif "text" in payload and ("path" in payload or "from" in payload):
            shape = GET
        if tool == SEARCH:
            if type(results) is list and not disabled:
                paths = _search_paths(results)
        else:
            paths = _get_paths(payload)
    if recovered:
        shape = shape or SEARCH
    return _new(ToolResult, (call_id, tool, paths, ts, recovered, shape))


def _search_paths(results: list[Any]) -> tuple[ResultPath, ...]:
    """The parser's ``_search_paths`` of a ``results`` list, the usual values inline."""
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
        score = item.get("score")
        if type(score) is not float:
            score = _to_float(score)
        start = item.get("startLine")
        if start is None and "startLine" not in item:
            start = item.get("start_line")
        if type(start) is not int or not -_INT_MAX <= start <= _INT_MAX:
            start = _to_int(start)
        end = item.get("endLine")
        if end is None and "endLine" not in item:
            end = item.get("end_line")
        if type(end) is not int or not -_INT_MAX <= end <= _INT_MAX:
            end = _to_int(end)
        prev = merged.get(path)
        if prev is not None:  # another chunk of the file: the parser's ``_merge``, inline
            # (``max`` and ``min`` keep the first of equal values: ``>``/``<`` as they do)
            _, low, first, last = prev
            if low is not None and (score is None or not score > low):
                score = low
            if first is not None and (start is None or not start < first):
                start = first
            if last is not None and (end is None or not end > last):
                end = last
        merged[path] = _new(ResultPath, (path, score, start, end))
    return tuple(merged.values())


# --------------------------------------------------------------------------- content blocks


def _blocks(record: dict[str, Any], msg: dict[str, Any]) -> ParsedLine | None:
    """An assistant's tool calls, or a Claude Code user message's tool results.

    The general parser's loop over ``content``, with the line's time taken only
    once a block yields an event.
    """
    content = msg.get("content")
    if type(content) is not list:
        return None
    found: list[Any] = []
    for block in content:
        if type(block) is not dict:
            continue
        btype = block.get("type")
        if btype in _PLAIN_BLOCKS:
            continue
        if type(btype) is not str:
            continue
        if btype != "toolCall":
            btype = btype.lower()
        if btype == "toolCall" or btype in _CALL_BLOCK_TYPES:
            call = _lean_call(block)
            if call is not None:
                found.append(call)
        elif btype in _RESULT_BLOCK_TYPES:  # the general parser's own step
            result = block_result(block, None)
            if result is not None:
                found.append(result)
    if not found:
        return _EMPTY  # no memory call or result: no timestamp
    ts = _timestamp(record, msg)
    if len(found) == 1 and type(found[0]) is ToolCall:  # the usual line: one call
        call = found[0]
        return _new(ParsedLine, ((_new(ToolCall, (call[0], call[1], call[2], ts)),), False))
    events = tuple(
        _new(ToolCall, (ev[0], ev[1], ev[2], ts))
        if type(ev) is ToolCall
        else _new(ToolResult, (ev[0], ev[1], ev[2], ts, ev[4], ev[5]))
        for ev in found
    )
    return _new(ParsedLine, (events, False))


def _lean_call(block: dict[str, Any]) -> ToolCall | None:
    """The parser's ``_call`` (time left to the caller), OpenClaw's own block read inline.

    A block naming ``memory_search`` / ``memory_get`` under ``name``, its id under
    ``id`` and its arguments as an object under ``arguments``: there the parser's
    choices are these keys. Anything else is the parser's ``_call``.
    """
    name = block.get("name")
    tool = _TOOLS.get(name) if type(name) is str else None
    call_id = block.get("id")
    args = block.get("arguments")
    if tool is None or type(call_id) is not str or not call_id or type(args) is not dict:
        return _call(block, None)
    value = args.get("query" if tool == SEARCH else "path")
    return _new(ToolCall, (call_id, tool, value if type(value) is str else None, None))
