"""The events a transcript line holds, as named types: what the parser makes and the scan reads.

Pure values, no behaviour: :mod:`.parser` builds them from a line, :mod:`.apply` turns them
into calls and hits, :mod:`.prescan`'s helper sends them to the scanner.

Named tuples: a scan builds thousands, and a large backlog's travel from the helper process
as ``marshal`` bytes, which take plain tuples only. So an event may be a plain tuple: its kind
is told by its number of fields and a field by its index, both named below from the types
themselves, so reordering a type's fields cannot leave a reader behind.
"""

from __future__ import annotations

from typing import Any, NamedTuple

SEARCH, GET = "search", "get"
# How a memory call was reached (ToolCall.via; docs/openclaw-formats.md §5). CELL_VALUE: an
# envelope found in a code-mode cell's returned value (counted only for a cell that wrote no
# nested-tool records: 2026.7's code mode).
TOOL_CALL, NESTED, CODE, CELL_VALUE = "tool_call", "nested", "code", "cell_value"


class ResultPath(NamedTuple):
    """One memory file in a result, as the transcript wrote it (untrusted)."""

    path: str
    score: float | None = None
    start_line: int | None = None
    end_line: int | None = None
    # The text the hit returned, each chunk as (start, end, text), or WHOLE_FILE for a
    # memory_get of the whole file; None without any. The applier turns a new hit's into
    # fingerprints (section_map.anchor_text), so copies of an answer never pay for it.
    anchor: Any = None


class ToolCall(NamedTuple):
    """An agent asked a memory tool something."""

    call_id: str
    tool: str  # SEARCH or GET
    query: str | None  # the search query, or the path asked for by memory_get
    ts: float | None
    # For an id a provider reuses (.calls.is_numbered): the message's own time, which every
    # copy keeps, so a call that reuses the id is told from a copy of an earlier one; None for
    # any other id. For a nested-tool record: that record's own time, always.
    made: float | None = None
    # How the agent reached the tool: None directly, TOOL_CALL through Tool Search's wrapper,
    # NESTED as told by an ``openclaw.nested-tool.v1`` record (the applier tells which call).
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
    """A tool call or custom message that names a memory tool in a shape not known here:
    counted and shown, never guessed at, so a future shape shows as a number, not silence."""

    sample: str  # what it looked like, cut short (for "unrecognised: N, e.g. …")


class CellEnded(NamedTuple):
    """A ``tool_search_code`` cell (or a ``tool_call`` wrapper) answered. One that failed
    returned nothing to the model: its inner calls' hits are taken back."""

    call_id: str
    made: float | None  # the message's time, for an id a provider reuses
    failed: bool
    wrapper: bool  # a ``tool_call`` wrapper's result (else a cell's)


class TurnStarted(NamedTuple):
    """A user message: the turn it starts is the user's (``kind`` None) or a run's that
    OpenClaw makes itself (:func:`.turn_kinds.run_kind`: a heartbeat, a cron job), whose
    lookups are not the user's and are left out as configured (``[openclaw] count_*``)."""

    kind: str | None
    ts: float | None


Event = ToolCall | ToolResult | Unrecognised | CellEnded | TurnStarted


class ParsedLine(NamedTuple):
    events: tuple[Event, ...] = ()
    malformed: bool = False


# The wire form (see the module's docstring): a plain tuple's kind, by its length.
CALL_FIELDS = len(ToolCall._fields)
RESULT_FIELDS = len(ToolResult._fields)
UNRECOGNISED_FIELDS = len(Unrecognised._fields)
CELL_FIELDS = len(CellEnded._fields)
TURN_FIELDS = len(TurnStarted._fields)
assert len({CALL_FIELDS, RESULT_FIELDS, UNRECOGNISED_FIELDS, CELL_FIELDS, TURN_FIELDS}) == 5
# A result's field's index, the same in a named event and in its plain tuple.
RESULT_ID = ToolResult._fields.index("call_id")
RESULT_TOOL = ToolResult._fields.index("tool")
RESULT_SHAPE = ToolResult._fields.index("shape")
RESULT_PARENT = ToolResult._fields.index("parent")
