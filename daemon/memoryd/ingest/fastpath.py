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

from .calls import is_numbered
from .parser import (
    _CALL_BLOCK_TYPES,
    _EMPTY,
    _ID_KEYS,
    _INT_MAX,
    _INT_MIN,
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
    _memory_corpus,
    _new,
    _payload,
    _recover,
    _to_float,
    _to_int,
    call_event,
    memory_tool,
    parse_line,
    parse_record,
)
from .parser import line_epoch as _epoch

_loads = orjson.loads
_NOT_READ = object()  # a result's payload not taken yet
_DecodeError = orjson.JSONDecodeError
# Block types that hold no tool call or result (skipped without a lower()).
_PLAIN_BLOCKS = frozenset({"text", "thinking", "redacted_thinking", "image"})
# What the general parser turns into a malformed line (caught there around the same walk).
_WALK_ERRORS = (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError)


def parse(line: bytes | memoryview) -> ParsedLine:
    """What :func:`.parser.parse_line` says of ``line``, by the fast path where it can.

    The line is decoded once: a shape the fast path does not take goes to the
    general walk with the record already decoded; a line that is not JSON goes to
    the general parser whole (it keeps what invalid UTF-8 leaves readable). The
    line may be a view into a region's bytes (the prescan slices no copy).
    """
    try:
        record = _loads(line)
    except _DecodeError:
        return parse_line(bytes(line))
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
    tool = None
    if name is not None:
        tool = memory_tool(name)
        if tool is None:
            if name.strip().lower() in ("tool_call", "tool_search_code"):
                return None  # Tool Search's own: the general parser reads what they hold
            return _EMPTY  # another tool's result: no event, no timestamp
    made = _epoch(msg.get("timestamp")) if is_numbered(call_id) else None
    result = _answer(call_id, tool, msg, _timestamp(record, msg), made)
    return _new(ParsedLine, ((result,), False))


def _answer(
    call_id: str, tool: str | None, holder: dict[str, Any], ts: float | None, made: float | None
) -> ToolResult:
    """The parser's ``_result`` for a result naming a memory tool, or naming none (``tool``
    None: an answer known by its payload's shape), held in a message or a content block.

    The payload is ``details`` when intact; else the content's text, decoded here when it
    is the usual one text block (or string) holding a JSON object, recovered at once when
    it was cut (no decode that must fail), else taken by the parser's ``_payload``.
    """
    if holder.get("isError") is True or holder.get("is_error") is True:
        return _new(ToolResult, (call_id, tool, (), ts, False, None, made, None))
    details = holder.get("details")
    recovered = False
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
    shape = None
    disabled = False
    if type(payload) is dict:
        results = payload.get("results")
        disabled = payload.get("disabled") is True
        if type(results) is list or disabled:
            shape = SEARCH
        elif "text" in payload and ("path" in payload or "from" in payload):
            shape = GET
    if recovered:
        shape = shape or SEARCH
    kind = tool or shape
    if kind is None:
        return _new(ToolResult, (call_id, None, (), ts, False, None, made, None))
    paths: tuple[ResultPath, ...] = ()
    if type(payload) is dict and not disabled:
        if kind is not SEARCH:
            paths = _got(payload)
        elif type(results) is list:
            paths = _search_paths(results)
    return _new(ToolResult, (call_id, tool, paths, ts, recovered, shape, made, None))


def _got(payload: dict[str, Any]) -> tuple[ResultPath, ...]:
    """The parser's ``_get_paths`` (of a payload not disabled), whole numbers read inline."""
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
    return (_new(ResultPath, (path if type(path) is str else "", None, first, end)),)


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
    once a block yields an event. A call block's usual keys (its name under
    ``name``, its id under ``id``, its arguments as an object) are read inline;
    anything else takes the parser's ``_call``.
    """
    content = msg.get("content")
    if type(content) is not list:
        return None
    events: list[Any] = []
    ts: float | None = None
    timed = False
    for block in content:
        if type(block) is not dict:
            continue
        btype = block.get("type")
        if btype != "toolCall":
            if type(btype) is not str or btype in _PLAIN_BLOCKS:
                continue
            btype = btype.lower()
            if btype in _RESULT_BLOCK_TYPES:  # the parser's ``block_result``
                call_id = _first_str(block, _RESULT_ID_KEYS)
                if not call_id:
                    continue
                name = _first_str(block, _NAME_KEYS)
                tool = None if name is None else memory_tool(name)
                if tool is None and name is not None:
                    continue  # another tool's result
                if not timed:
                    ts, timed = _timestamp(record, msg), True
                made_r = _epoch(msg.get("timestamp")) if is_numbered(call_id) else None
                events.append(_answer(call_id, tool, block, ts, made_r))
                continue
            if btype not in _CALL_BLOCK_TYPES:
                continue
        tool = memory_tool(block.get("name") or block.get("toolName"))
        if tool is None:
            # another tool, Tool Search's wrapper or a memory tool named in a shape not known:
            # the parser's step tells which (its time taken only when it is an event)
            if call_event(block, None, None) is None:
                continue
            if not timed:
                ts, timed = _timestamp(record, msg), True
            event = call_event(block, ts, _epoch(msg.get("timestamp")))
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
            made = _epoch(msg.get("timestamp")) if is_numbered(call_id) else None
            events.append(_new(ToolCall, (call_id, tool, query, ts, made, None, None)))
        else:  # arguments elsewhere, or as a JSON string
            events.append(_call(block, ts, _epoch(msg.get("timestamp"))))
    if not events:
        return _EMPTY  # no memory call or result: no timestamp
    return _new(ParsedLine, (tuple(events), False))
