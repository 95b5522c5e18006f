"""What the source readers share with the scanner, during a scan and across scans."""

from __future__ import annotations

from collections.abc import Callable

from ..config import Config
from . import sqlite_source
from .apply import Applier
from .calls import Calls
from .ledger import Ledger

_MALFORMED_LOG_MAX = 20  # malformed stored events logged one by one per scan; then a summary


class ReadContext:
    """The ledger, the applier and the bookkeeping every reader of a scan uses."""

    def __init__(
        self,
        cfg: Config,
        ledger: Ledger,
        applier: Applier,
        synthetic: Callable[[str], frozenset[str]],
    ) -> None:
        self.cfg = cfg
        self.ledger = ledger
        self.applier = applier
        self.synthetic = synthetic  # an agent's cron / heartbeat sessions from sessions.json
        # Per agent, the cron / heartbeat sessions the store's own tables name (kept from the
        # last time the store was opened, for archive files read while it is unchanged).
        self.store_synthetic: dict[str, frozenset[str]] = {}
        # Archives read whole: (agent, name) → (size, digest); loaded at the start of a scan.
        self.archives_done: dict[tuple[str, str], tuple[int, str]] = {}
        self.reported: set[str] = set()  # unknown archive columns / kinds, reported once
        self.malformed_logged = 0  # malformed stored events logged in this scan

    def new_scan(self) -> None:
        self.archives_done = self.ledger.archives_read()
        self.malformed_logged = 0

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


def is_frame_error(exc: BaseException) -> bool:
    """A compressed stream that does not decode (as opposed to a fault of our own)."""
    if isinstance(exc, EOFError):
        return True
    zstd = sqlite_source._ZSTD
    return zstd is not None and isinstance(exc, zstd.ZstdError)


def emit(event: str, **fields: object) -> None:
    """Log one event (see :func:`memoryd.log.emit`; imported when there is something to say)."""
    from ..log import emit as log_emit

    log_emit(event, **fields)


def traceback_of(exc: BaseException) -> str:
    from ..log import format_traceback

    return format_traceback(exc)
