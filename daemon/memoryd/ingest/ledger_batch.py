"""A batch: what one region of a source's lines adds to the database, and how it is written.

The readers build it (the applier, call by call) long before the ledger writes it, and need
only this; :meth:`Batch.write` inserts its rows on a connection the ledger gives it.
"""

from __future__ import annotations

import sqlite3

from .ledger_rows import insert_rows
from .tailer import Checkpoint

CELL_ROUTE = "cell"  # apply.CELL: a running code-mode cell's row (see Applier._in_cell)

# A batch's rows: what every row of a batch shares (its source, agent and session) comes
# first, bound once a statement; a row carries only its own values (a hit 8 instead of 10,
# a call 5 instead of 7), which the sqlite3 module binds one by one.
_INSERT_BATCH_HITS = (
    "INSERT OR IGNORE INTO hits(source_id, agent, session, call_id, memory_path, kind, ts, "
    "query, score, start_line, end_line, anchor) VALUES "
)
HIT_WIDTH = 9  # the values of one hit row of a batch (Batch.hits)
_INSERT_BATCH_CALLS = (
    "INSERT OR IGNORE INTO calls(agent, session, call_id, tool, query, ts, answered) VALUES "
)


class Batch:
    """What one region of lines adds to the database, written in one transaction."""

    # fmt: off
    __slots__ = (
        "answered", "answered_unseen", "call_rows", "calls", "cp", "end", "hits", "malformed",
        "non_memory", "oversized", "parent", "reread", "retract", "retract_prefixes", "routed",
        "session", "session_synthetic", "start", "synthetic", "turn", "unknown", "unknown_sample",
    )
    # fmt: on

    def __init__(
        self, cp: Checkpoint, session: str, synthetic: bool, parent: str | None = None, *,
        start: int = 0, end: int = 0,
    ) -> None:  # fmt: skip
        self.cp = cp
        self.session = session
        # Whether the batch's hits are left out (not the user's): for the whole session
        # (a cron session, by its key), or for the turn its lines are in (see in_turn).
        self.session_synthetic = self.synthetic = synthetic
        self.turn: str | None = None  # the run kind of that turn (None: the user's)
        self.parent = parent  # for a successor: the session it continues
        # An archive: a copy of events that may have been read live before (its calls are
        # looked up in the ledger, so an answer counted, or not, then is not counted again).
        self.reread = False
        self.start = start  # file offset the batch starts at
        self.end = end  # file offset after its last complete line
        self.oversized = 0
        self.malformed = 0
        self.non_memory = 0  # result paths outside memory (not counted as hits)
        # Calls reached through Tool Search (call id → route, see events.ToolCall.via): counted
        # by route as their rows are new. Direct calls, nearly all of them, are not listed.
        self.routed: dict[str, str] = {}
        self.unknown = 0  # calls or custom messages naming a memory tool in a shape not known
        # Calls whose hits are taken back (the inner calls of a code-mode cell that failed:
        # the model saw nothing they found), by id and by the prefix of their ids.
        self.retract: list[str] = []
        self.retract_prefixes: list[tuple[str, float | None]] = []  # (prefix, since when)
        self.unknown_sample: str | None = None
        # The rows of the batch's agent and session, flat (see insert_rows). calls: call id,
        # tool, query, ts, answered (5 values a call)
        self.calls: list[object] = []
        self.call_rows: dict[str, int] = {}  # call id → where its row starts in calls
        self.answered: list[tuple[str, str]] = []
        self.answered_unseen: list[tuple[object, ...]] = []
        # hits: call id, memory path, kind, ts, query, score, start line, end line, anchor
        # (HIT_WIDTH a hit; the anchor: section_map.chunk_anchor's, or None)
        self.hits: list[object] = []

    def in_turn(self, kind: str | None, left_out: frozenset[str]) -> None:
        """The lines that follow are in a turn of ``kind`` (a user message started it)."""
        self.turn = kind
        self.synthetic = self.session_synthetic or (kind is not None and kind in left_out)

    def new_call(
        self, call_id: str, tool: str, query: str | None, ts: float | None, via: str | None = None
    ) -> None:
        """A call of the batch's agent first met in this batch, in its session (``via``: the
        route it took, None for a direct call)."""
        self.call_rows[call_id] = len(self.calls)
        self.calls.extend((call_id, tool, query, ts, 0))
        if via is not None:
            self.routed[call_id] = via

    def take_back(self, ids: list[str], prefix: str | None, since: float | None) -> None:
        """Hits of calls ``ids`` (and of calls whose id starts with ``prefix``, found since
        ``since``) are taken back: those of this batch at once, those already written when
        the batch is (before its own rows, so that a later call's hits stay)."""
        self.retract.extend(ids)
        if prefix is not None:
            self.retract_prefixes.append((prefix, since))
        gone = set(ids)
        rows = self.hits
        kept: list[object] = []
        for i in range(0, len(rows), HIT_WIDTH):
            cid = rows[i]
            if cid in gone or (
                prefix is not None
                and str(cid).startswith(prefix)
                and (since is None or (rows[i + 3] or 0) >= since - 1e-3)  # type: ignore[operator]
            ):
                continue
            kept.extend(rows[i : i + HIT_WIDTH])
        if len(kept) != len(rows):
            self.hits[:] = kept

    def unrecognised(self, sample: str) -> None:
        """A call or custom message naming a memory tool in a shape not known (counted)."""
        self.unknown += 1
        if self.unknown_sample is None:
            self.unknown_sample = sample

    def answer(self, agent: str, call_id: str) -> None:
        """Record that a call is answered: in its row when it is new in this batch."""
        i = self.call_rows.get(call_id)
        if i is None:
            self.answered.append((agent, call_id))
        else:
            self.calls[i + 4] = 1

    def write(self, conn: sqlite3.Connection, source_id: int) -> tuple[int, int, dict[str, int]]:
        """Insert it all; returns how many hits and calls were new (the rest were known), and
        of the new calls how many took each Tool Search route."""
        # (An empty list is skipped: most batches have no calls without a call line and no
        # answers to earlier batches' calls, and a statement costs even with nothing to do.)
        before_calls = conn.total_changes
        agent, session = self.cp.agent, self.session
        routes: dict[str, int] = {}
        if self.calls and self.routed:
            # (each route's rows on their own, so that only the new ones are counted)
            direct: list[object] = []
            by_route: dict[str, list[object]] = {}
            for i in range(0, len(self.calls), 5):
                via = self.routed.get(self.calls[i])  # type: ignore[call-overload]
                row = self.calls[i : i + 5]
                (direct if via is None else by_route.setdefault(via, [])).extend(row)
            if direct:
                insert_rows(conn, _INSERT_BATCH_CALLS, 5, direct, (agent, session))
            for via, rows in by_route.items():
                before_route = conn.total_changes
                insert_rows(conn, _INSERT_BATCH_CALLS, 5, rows, (agent, session))
                routes[via] = conn.total_changes - before_route
        elif self.calls:
            insert_rows(conn, _INSERT_BATCH_CALLS, 5, self.calls, (agent, session))
        # (a code-mode cell's row, kept while it runs, is no memory call)
        new_calls = conn.total_changes - before_calls - routes.pop(CELL_ROUTE, 0)
        if self.answered_unseen:
            conn.executemany(
                "INSERT OR IGNORE INTO calls(agent, call_id, tool, query, ts, session, answered) "
                "VALUES (?, ?, ?, NULL, ?, ?, 1)",
                self.answered_unseen,
            )
        if self.answered:
            conn.executemany(
                "UPDATE calls SET answered = 1 WHERE agent = ? AND call_id = ?", self.answered
            )
        deleted = self._take_back(conn) if self.retract or self.retract_prefixes else 0
        # (counted by the statements' own row counts: total_changes counts the rows the
        # strength triggers of migration 10 update too)
        new_hits = 0
        if self.hits:
            new_hits = insert_rows(
                conn, _INSERT_BATCH_HITS, HIT_WIDTH, self.hits, (source_id, agent, session)
            )
        # (hits taken back count as fewer new ones: a scan's figure is what it changed)
        return new_hits - deleted, new_calls, routes

    def _take_back(self, conn: sqlite3.Connection) -> int:
        """Delete the written hits of the calls taken back (see take_back); how many. Only the
        scanner's own rows (a source named): a hit memoryd counted itself (the plugin's hooks)
        was delivered whatever the cell did afterwards."""
        agent, session = self.cp.agent, self.session
        deleted = 0  # (row counts, not total_changes: see write)
        if self.retract:
            deleted += conn.executemany(
                "DELETE FROM hits WHERE agent = ? AND call_id = ? AND source_id IS NOT NULL",
                [(agent, cid) for cid in self.retract],
            ).rowcount
        for prefix, since in self.retract_prefixes:
            if since is None:
                deleted += conn.execute(
                    "DELETE FROM hits WHERE agent = ? AND call_id >= ? AND call_id < ? "
                    "AND source_id IS NOT NULL",
                    (agent, prefix, prefix + "\U0010ffff"),
                ).rowcount
            else:
                deleted += conn.execute(
                    "DELETE FROM hits WHERE agent = ? AND call_id >= ? AND call_id < ? "
                    "AND session = ? AND ts >= ? AND source_id IS NOT NULL",
                    (agent, prefix, prefix + "\U0010ffff", session, since - 1e-3),
                ).rowcount
        return deleted
