"""The ledger: every write of the ingest layer to the state database, and the reads it needs.

The readers (files, the SQLite store, archives) decide what a source holds; the ledger
records it: a source's identity and checkpoint, the calls and hits of a batch together with
the read position after it, the store's per-session cursors, archives read whole, sources
that failed, sources that vanished. No other ingest module writes SQL, and nothing here
reads a transcript, so it can be exercised without files.

This module only puts the parts together, one module per job, all writing through the one
transaction and queue of :class:`.ledger_queue.WriteQueue`:

- :mod:`.ledger_queue`: group commit, the write queue, the counts of what committed;
- :mod:`.ledger_rows`, :mod:`.ledger_batch`: rows several a statement; a batch's rows;
- :mod:`.ledger_checkpoints`: a transcript file's identity and offset;
- :mod:`.ledger_cursors`: the transcript store's cursors;
- :mod:`.ledger_sessions`: the store's sessions that left it;
- :mod:`.ledger_calls`: lookups of recorded calls;
- :mod:`.ledger_archives`: archives read whole;
- :mod:`.ledger_sources`: sources that failed or vanished;
- :mod:`.ledger_bulk`: bulk mode, for a first scan of a large backlog.
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
    CheckpointWrites,
    StoreCursorWrites,
    StoreSessionWrites,
    CallLookups,
    ArchiveWrites,
    SourceStateWrites,
    BulkLoad,
):
    """The scan's writer: group commit over one connection (:class:`.ledger_queue.WriteQueue`),
    and the ingest tables, a part each."""
