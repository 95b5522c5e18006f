"""Call bookkeeping, pure: which memory calls are known, which still wait, what answers them.

The scanner (in the parent process) and the prescan helper (a forked child) both
decide whether a result line answers a call; :func:`answers` is the one rule they
share, so the counts are the same whoever read the line. Nothing here touches the
database: :meth:`Calls.lookup` takes the function that fetches a call the
scanner has not met in this scan (the ledger's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

# A call as the ledger stores it: tool, query, ts, answered, session.
CallRow = tuple[str, "str | None", "float | None", int, "str | None"]


def answers(result: Sequence[object], call_tool: str) -> bool:
    """Whether a tool result answers a memory call of ``call_tool``.

    ``result`` has the fields of :class:`.parser.ToolResult` (a named tuple, or the
    plain tuple the helper sends): ``result[1]`` the tool it names, ``result[5]``
    the shape of its payload. A result that names its tool answers its call id; one
    that does not (Claude Code's ``tool_result``) answers unless its payload has
    the shape of the other memory tool's answer.
    """
    named, shape = result[1], result[5]
    return named is not None or shape is None or shape == call_tool


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

    An answer that does not name its tool (Claude Code's ``tool_result``) is only
    looked for in the session that made the call (and in a compaction successor
    that continues it): calls that were never answered (an aborted turn) pile up
    over months and must not make every other transcript slower to read.
    """

    __slots__ = ("known", "waiting")

    def __init__(self) -> None:
        self.known: dict[str, Call] = {}
        self.waiting: dict[str, set[str]] = {}  # session → call ids

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
        """Calls still waiting in ``session`` and, for a successor, in the session it continues.

        A compaction successor goes on with its parent's conversation: a call made at
        the end of the parent may be answered at the start of the successor.
        """
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
