"""Call bookkeeping, pure: which memory calls are known, which still wait, what answers them.

The scanner and the prescan helper (a forked child) share :func:`answers`, the one rule of
what answers a call, so the counts are the same whoever read the line. Nothing here touches
the database: :meth:`Calls.lookup` takes the ledger's fetch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from .events import RESULT_SHAPE, RESULT_TOOL

# A call as the ledger stores it: tool, query, ts, answered, session.
CallRow = tuple[str, "str | None", "float | None", int, "str | None"]


def answers(result: Sequence[object], call_tool: str) -> bool:
    """Whether a tool result answers a memory call of ``call_tool``.

    ``result`` has the fields of :class:`.events.ToolResult` (a named tuple, or the helper's
    plain tuple), read by index. A result that names its tool answers its call id; one that
    does not (Claude Code's ``tool_result``) answers unless its payload has the shape of the
    other memory tool's answer.
    """
    named, shape = result[RESULT_TOOL], result[RESULT_SHAPE]
    return named is not None or shape is None or shape == call_tool


# Ids a provider numbers per turn, so that they come back in later turns and sessions:
# ``memory_search_0`` (Kimi for coding), ``functions.memory_search:0`` (Kimi through an
# OpenAI-compatible API), ``functions_memory_search_0`` (the same as OpenClaw's persistence
# guard rewrites it), ``exec:22``. A tool name, a separator, a small index, nothing random.
_NUMBERED_ID = re.compile(r"(?:functions[._])?[A-Za-z][A-Za-z0-9_-]{0,63}[:_.][0-9]{1,4}")
# An id that holds a clock reading is unique, never reused: pi-ai names a Gemini or Ollama call
# ``<tool>_<Date.now()>_<counter>`` (``memory_search_1772010842140_1``).
_CLOCK_IN_ID = re.compile(r"[0-9]{10}")
_SEPARATORS = (":", "_", ".")  # what stands before a numbered id's number (_NUMBERED_ID)
OCCURRENCE_MARK = "#"  # between a numbered id and the time of its call, in an occurrence's id


def occurrence_id(call_id: str, made: float | None) -> str:
    """The id a call is kept under: a numbered id gets the time its message was made.

    A numbered id is reused by a later, different call (the next turn asks ``memory_search_0``
    again), so the id alone would take that call for a copy of the first and drop its hits.
    Every copy of a message keeps the message's own timestamp, so a copy gets the same
    occurrence id and a call of another turn does not. Any other id is kept as it is.
    """
    if made is None or not is_numbered(call_id):
        return call_id
    return f"{call_id}{OCCURRENCE_MARK}{round(made * 1000)}"


def is_numbered(call_id: str) -> bool:
    """Whether ``call_id`` is an id a provider reuses (see :func:`occurrence_id`)."""
    # (most ids are random, and fail this cheap test before any pattern is run)
    stem = call_id.rstrip("0123456789")
    if not 1 <= len(call_id) - len(stem) <= 4 or stem[-1:] not in _SEPARATORS:
        return False
    numbered = _NUMBERED.get(call_id)
    if numbered is None:
        numbered = (
            _NUMBERED_ID.fullmatch(call_id) is not None and _CLOCK_IN_ID.search(call_id) is None
        )
        if len(_NUMBERED) < _NUMBERED_MAX and len(call_id) <= 128:
            _NUMBERED[call_id] = numbered
    return numbered


# The answers already given (a reused id comes back with every call and result of it). Bounded:
# random ids that end in a digit would grow it for the daemon's life.
_NUMBERED: dict[str, bool] = {}
_NUMBERED_MAX = 4096


def written_id(call_id: str) -> str:
    """The id as the transcript writes it: an occurrence id (:func:`occurrence_id`) without
    its time. What a byte search for a waiting call's answer must look for."""
    if OCCURRENCE_MARK not in call_id:
        return call_id
    head, _, made = call_id.rpartition(OCCURRENCE_MARK)
    return head if _is_ms(made) and is_numbered(head) else call_id


def stored_occurrence(
    rows: Sequence[tuple[str, str | None]], session: str, parent: str | None,
    made: float | None = None,
) -> str | None:  # fmt: skip
    """The occurrence a result of a numbered id answers when no call of that id was met in
    this scan: ``rows`` are the stored ones (``(occurrence id, session)``, see
    :meth:`.ledger_calls.CallLookups.fetch_occurrences`).

    Such a result is, as a rule, a copy (a truncation re-branch, a successor's kept tail) of an
    answer taken in an earlier scan: the latest occurrence of its session (or the one it
    continues), else of any session, is taken, and the copy counts nothing more. None when
    there is none. With the result's time ``made``, only calls made before it are looked at.
    """
    limit = None if made is None else round(made * 1000)
    own = [cid for cid, s in rows if s == session or (parent is not None and s == parent)]
    return _latest(own, limit) or _latest((cid for cid, _ in rows), limit)


def _latest(occurrences: Iterable[str], limit: int | None = None) -> str | None:
    """The occurrence made last (no later than ``limit`` ms, if given), or None; an id
    without a valid time after the mark (a transcript's own id) is never taken."""
    best, best_ms = None, -1
    for occurrence in occurrences:
        ms = _made_ms(occurrence)
        if ms > best_ms and (limit is None or ms <= limit):
            best, best_ms = occurrence, ms
    return best


def _occurrences_of(call_id: str, ids: set[str]) -> list[str]:
    """The occurrence ids of numbered ``call_id`` among ``ids``: the id, the mark, a time
    (strict: a transcript's own ``memory_get_0#1x2`` is no occurrence of ``memory_get_0``)."""
    prefix = call_id + OCCURRENCE_MARK
    return [c for c in ids if c.startswith(prefix) and _is_ms(c[len(prefix) :])]


def _made_ms(occurrence: str) -> int:
    tail = occurrence.rpartition(OCCURRENCE_MARK)[2]
    return int(tail) if _is_ms(tail) else -1


def _is_ms(text: str) -> bool:
    # ASCII only: `str.isdigit` also takes `²`, which `int` refuses
    return text.isascii() and text.isdigit()


class Call:
    """A memory call: its tool and query, when, and in which session its answer is awaited."""

    __slots__ = ("answered", "query", "session", "tool", "ts")

    def __init__(
        self, tool: str, query: str | None, ts: float | None, answered: bool, session: str = ""
    ) -> None:
        self.tool = tool
        self.query = query
        self.ts = ts
        self.answered = answered
        self.session = session  # the session that made the call (answers are looked for there)


class Calls:
    """One agent's memory calls met so far, and per session the ids still waiting.

    An answer that does not name its tool is only looked for in the session that made the
    call (and a successor continuing it): calls never answered pile up over months and must
    not make every other transcript slower to read.
    """

    __slots__ = ("known", "latest", "met", "waiting")

    def __init__(self) -> None:
        self.known: dict[str, Call] = {}
        self.waiting: dict[str, set[str]] = {}  # session → call ids
        # (session, numbered id as written) → the occurrence id of its latest call there
        self.latest: dict[tuple[str, str], str] = {}
        # (session, numbered id as written) → the occurrences of it met there in this scan
        self.met: dict[tuple[str, str], set[str]] = {}

    def add(self, call_id: str, call: Call) -> None:
        self.known[call_id] = call
        if not call.answered:
            self.waiting.setdefault(call.session, set()).add(call_id)

    def answer(self, call_id: str, call: Call) -> None:
        call.answered = True
        ids = self.waiting.get(call.session)
        if ids is not None:
            ids.discard(call_id)

    def waiting_in(self, session: str, parent: str | None = None) -> set[str]:
        """Calls still waiting in ``session`` and, for a successor, in the session it continues
        (a call made at the end of the parent may be answered at the start of the successor)."""
        own = self.waiting.get(session) or set()
        if parent is None or parent == session or not self.waiting.get(parent):
            return own
        return own | self.waiting[parent]

    def carry(self, call_id: str, call: Call, session: str) -> None:
        """A copy of a waiting call in a later session: its answer is looked for there now."""
        if call.answered or call.session == session:
            return
        ids = self.waiting.get(call.session)
        if ids is not None:
            ids.discard(call_id)
        call.session = session
        self.waiting.setdefault(session, set()).add(call_id)

    def made_again(self, session: str, written: str, occurrence: str) -> None:
        """A call of numbered id ``written`` met in ``session``, kept as ``occurrence``. The
        latest is the one made last, not read last: a re-appended copy of an earlier turn's
        call must not take the answer of the call that follows it."""
        key = (session, written)
        self.met.setdefault(key, set()).add(occurrence)
        latest = self.latest.get(key)
        if latest is None or _made_ms(occurrence) >= _made_ms(latest):
            self.latest[key] = occurrence

    def occurrence_answered(
        self, call_id: str, session: str, parent: str | None, made: float | None = None
    ) -> str:
        """The occurrence of numbered ``call_id`` that a result in ``session`` answers.

        With the result's own time ``made``: the call of that id made last before it, in this
        session (or the one it continues), met in this scan or still waiting, answered or not,
        else the id itself. Without it: the latest call of that id there, if it still waits;
        else the latest still waiting; else the latest met (the result is a copy); else the id.
        """
        if made is not None:
            limit = round(made * 1000)
            mine = set(self.met.get((session, call_id), ()))
            if parent is not None:
                mine |= self.met.get((parent, call_id), set())
            mine.update(_occurrences_of(call_id, self.waiting_in(session, parent)))
            # (none: the call was made in an earlier scan, or never seen; not a later one)
            return _latest(mine, limit) or call_id
        latest = self.latest.get((session, call_id))
        if latest is None and parent is not None:
            latest = self.latest.get((parent, call_id))
        if latest is not None and not self.is_answered(latest):
            return latest
        waiting = _latest(_occurrences_of(call_id, self.waiting_in(session, parent)))
        return waiting or latest or call_id

    def lookup(self, call_id: str, fetch: Callable[[str], CallRow | None]) -> Call | None:
        """The call, met in this scan or fetched (``fetch``: from the ledger) and kept."""
        call = self.known.get(call_id)
        if call is None:
            row = fetch(call_id)
            if row is not None:
                call = Call(row[0], row[1], row[2], bool(row[3]), row[4] or "")
                self.add(call_id, call)
        return call

    def is_answered(self, call_id: str) -> bool:
        """Answered, or not a call at all: nothing more to look for."""
        call = self.known.get(call_id)
        return call is None or call.answered
