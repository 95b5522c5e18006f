"""What the source readers share with the scanner, during a scan and across scans."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .. import clock
from ..config import Config, runs_left_out
from . import sqlite_source
from .apply import Applier
from .calls import Calls
from .ledger import Ledger
from .sources import synthetic_from_keys

_T = TypeVar("_T")

_MALFORMED_LOG_MAX = 20  # malformed stored events logged one by one per scan; then a summary


class ReadContext:
    """The ledger, the applier and the bookkeeping every reader of a scan uses."""

    def __init__(
        self, cfg: Config, ledger: Ledger, applier: Applier,
        synthetic: Callable[[str], frozenset[str]],
        store_path: Callable[[str], Path | None] = lambda _agent: None,
    ) -> None:  # fmt: skip
        self.cfg = cfg
        # The Active Memory helper's sessions are left out like cron's unless included.
        self.helper_excluded = not cfg.openclaw.include_active_memory
        # The kinds of run left out (`openclaw.count_<kind>`); falsy when every kind counts.
        self.synthetic_excluded = runs_left_out(cfg.openclaw)
        # Per (agent, session) of the store: the run kind of its current turn (None: the
        # user's), from its last user message read (see StoreReader._read_session).
        self.turns: dict[tuple[str, str], str | None] = {}
        self.ledger = ledger
        self.applier = applier
        self.synthetic = synthetic  # an agent's cron / heartbeat sessions from sessions.json
        self.store_path = store_path  # an agent's transcript store (it may not exist)
        # Per agent, the cron / heartbeat sessions the store's own tables name (kept from the
        # last time the store was opened, for archive files read while it is unchanged).
        self.store_synthetic: dict[str, frozenset[str]] = {}
        # Archives read whole: (agent, name) → (size, digest); loaded at the start of a scan.
        self.archives_done: dict[tuple[str, str], tuple[int, str]] = {}
        # Per agent, its store's session lineage, read when the reused-id rule first asks
        # after the store changed (see lineage)
        self._lineages: dict[str, dict[str, str | None]] = {}
        self.reported: set[str] = set()  # unknown archive columns / kinds, reported once
        self.malformed_logged = 0  # malformed stored events logged in this scan
        self.now = clock.now()  # (set again at each scan's start: see new_scan)

    def new_scan(self, now: float | None = None) -> None:
        # The scan's time, for the grace period of store sessions gone: read once, at its start
        # (or given by the daemon), so a clock set while the scan runs is the next one's to see.
        self.now = clock.now() if now is None else now
        self.archives_done = self.ledger.archives_read()
        self.malformed_logged = 0
        self._lineages.clear()

    def store_changed(self, agent: str) -> None:
        """The agent's store is being read (it changed): its lineage is read again if asked."""
        self._lineages.pop(agent, None)

    def lineage(self, agent: str) -> dict[str, str | None]:
        """The agent's store session lineage (:func:`.sqlite_source.session_lineage`; empty:
        not known), read once a scan and store change, only when the reused-id rule asks
        (docs/benchmarks.md, "The scanner's constants")."""
        known = self._lineages.get(agent)
        if known is not None:
            return known
        none: dict[str, str | None] = {}
        known = self._from_store(agent, sqlite_source.session_lineage, none)
        self._lineages[agent] = known
        return known

    def store_synthetic_of(self, agent: str) -> frozenset[str]:
        """The cron / heartbeat sessions the agent's store names (its tables opened once when
        the store was not read in this process: an archive file read on its own needs them)."""
        known = self.store_synthetic.get(agent)
        if known is not None:
            return known
        found: frozenset[str] = frozenset()
        if self.synthetic_excluded or self.helper_excluded:
            found = self._from_store(agent, self._synthetic_of_store, found)
        self.store_synthetic[agent] = found
        return found

    def _synthetic_of_store(
        self, conn: sqlite3.Connection, tables: dict[str, tuple[str, ...]]
    ) -> frozenset[str]:
        keys = sqlite_source.session_keys(conn, tables).items()
        return synthetic_from_keys(
            keys, active_memory=self.helper_excluded, synthetic=self.synthetic_excluded
        )

    def _from_store(
        self, agent: str, read: Callable[[sqlite3.Connection, dict[str, tuple[str, ...]]], _T],
        default: _T,
    ) -> _T:  # fmt: skip
        """``read`` of the agent's transcript store (opened read-only, with its tables), or
        ``default`` when it has none or it is not readable now (the store's own read
        reports why)."""
        path = self.store_path(agent)
        if path is None or not path.is_file():
            return default
        try:
            conn = sqlite_source.open_readonly(path)
            try:
                return read(conn, sqlite_source.table_columns(conn))
            finally:
                conn.close()
        except sqlite3.Error:
            return default

    def calls(self, pending: dict[str, Calls], agent: str) -> Calls:
        """The agent's calls of this scan (those waiting since earlier scans, loaded once)."""
        calls = pending.get(agent)
        if calls is None:
            calls = pending[agent] = self.ledger.waiting_calls(agent)
        return calls

    def malformed_event(self, store: str, session_id: str, seq: int, why: str) -> None:
        """Log a stored event that cannot be read: once (it is behind the cursor next time)."""
        self.malformed_logged += 1
        if self.malformed_logged <= _MALFORMED_LOG_MAX:
            emit("ingest.malformed_event", store=store, session=session_id, seq=seq, reason=why)
        elif self.malformed_logged == _MALFORMED_LOG_MAX + 1:
            emit("ingest.malformed_event", store=store, more="further ones not logged")


def emit(event: str, *, debug: bool = False, **fields: object) -> None:
    """Log one event (see :func:`memoryd.log.emit`; imported when there is something to say)."""
    from ..log import emit as log_emit

    log_emit(event, "memoryd.ingest", debug=debug, **fields)


def traceback_of(exc: BaseException) -> str:
    from ..log import format_traceback

    return format_traceback(exc)
