"""Lookups of the calls already recorded: what the applier asks before counting an answer.

The ledger's only reads of ``calls`` and ``hits`` during a scan, each after the write queue
is in the table, so that rows of the open transaction are found too.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..store_schema import EXPIRE_BATCH
from .calls import OCCURRENCE_MARK, Call, CallRow, Calls
from .ledger_queue import WriteQueue


class CallLookups(WriteQueue):
    """The ledger's part for looking up recorded calls (and the one look at the journal)."""

    def archived_from(self, copies: Sequence[str]) -> str | None:
        """The original path (absolute, as journaled) of the note expire archived to one of
        ``copies`` (absolute spellings of one path), or None: a hit on an archived copy (the
        archive searched as memory: inside ``memory/``, or in OpenClaw's ``extraPaths``) is
        the note's own, so its history stays one when it comes back."""
        if not copies:
            return None
        marks = ",".join("?" * len(copies))
        row = self.conn.execute(
            "SELECT src FROM moves WHERE op = 'move' AND substr(batch, 1, ?) = ? "
            f"AND dst IN ({marks}) ORDER BY id DESC LIMIT 1",
            (len(EXPIRE_BATCH), EXPIRE_BATCH, *copies),
        ).fetchone()
        return None if row is None else str(row[0])

    def fetch_call(self, agent: str, call_id: str) -> CallRow | None:
        self._write_queue_before_read()  # (the calls of this transaction are in the table first)
        return self.conn.execute(
            "SELECT tool, query, ts, answered, session FROM calls WHERE agent = ? AND call_id = ?",
            (agent, call_id),
        ).fetchone()

    def stored_call(self, agent: str, call_id: str) -> tuple[float | None, str | None] | None:
        """The time and session stored with a call row, or None (no row). The write queue is
        not written first: the one reader (``Applier._counted_bare``) asks only of rows
        written before this process."""
        return self.conn.execute(
            "SELECT ts, session FROM calls WHERE agent = ? AND call_id = ?", (agent, call_id)
        ).fetchone()

    def counted_under(self, agent: str, call_id: str, session: str) -> bool:
        """Whether ``session`` holds hits of the agent's call ``call_id`` (the reused-id
        rule's memory of a call taken for the bare one: ``Applier._counted_bare``)."""
        self._write_queue_before_read()
        row = self.conn.execute(
            "SELECT 1 FROM hits WHERE agent = ? AND call_id = ? AND session = ? LIMIT 1",
            (agent, call_id, session),
        ).fetchone()
        return row is not None

    def fetch_occurrences(self, agent: str, call_id: str) -> list[tuple[str, str | None]]:
        """``(occurrence id, session)`` of every call kept under numbered ``call_id`` (see
        :func:`.calls.occurrence_id`): a range of the primary key, ``<id>#`` to ``<id>$``."""
        self._write_queue_before_read()
        return self.conn.execute(
            "SELECT call_id, session FROM calls WHERE agent = ? AND call_id > ? AND call_id < ?",
            (agent, call_id + OCCURRENCE_MARK, call_id + chr(ord(OCCURRENCE_MARK) + 1)),
        ).fetchall()

    def waiting_calls(self, agent: str) -> Calls:
        """The agent's calls still waiting for an answer (from earlier scans)."""
        self._write_queue_before_read()
        rows = self.conn.execute(
            "SELECT call_id, tool, query, ts, session FROM calls WHERE answered = 0 AND agent = ?",
            (agent,),
        )
        calls = Calls()
        for cid, tool, query, ts, session in rows:
            calls.add(cid, Call(tool, query, ts, False, session or ""))
        return calls
