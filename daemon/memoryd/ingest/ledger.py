"""The ledger: every write of the ingest layer to the state database, and the reads it needs.

The readers decide what a source holds; the ledger records it. No other ingest module writes
SQL, and nothing here reads a transcript, so it can be exercised without files. This module
only puts the parts together (``ledger_*``, one module per job), all writing through the one
transaction and queue of :class:`.ledger_queue.WriteQueue`.
"""

from __future__ import annotations

from .ledger_archives import ArchiveWrites
from .ledger_bulk import BulkLoad
from .ledger_calls import CallLookups
from .ledger_checkpoints import CheckpointWrites
from .ledger_cursors import StoreCursorWrites
from .ledger_sessions import StoreSessionWrites
from .ledger_sources import SourceStateWrites


class Ledger(
    CheckpointWrites, StoreCursorWrites, StoreSessionWrites, CallLookups, ArchiveWrites,
    SourceStateWrites, BulkLoad,
):  # fmt: skip
    """The scan's writer: group commit over one connection (:class:`.ledger_queue.WriteQueue`),
    and the ingest tables, a part each."""
