"""Archives as a source: each read whole, once (see :mod:`.archives` for what they are).

Tables of the store (read while it is open) and ``.zst`` files (a stat tells whether one was
read). Lines go through the same byte prefilter and parser as a transcript's; a cold record's
header switches the session the following events belong to.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable
from typing import Any

from . import archives, sqlite_source
from . import sources as src
from .calls import Calls, written_id
from .context import ReadContext, emit
from .ledger_batch import Batch
from .prescan import NEEDLE, USER_NEEDLE
from .stats import ScanStats
from .store_frames import is_frame_error
from .tailer import Checkpoint

# USER_NEEDLE inside a JSON string: how a cold record's event holds a user message's role.
_QUOTED_USER = b'\\"user\\"'


class ArchiveReader:
    """Reads the archives memoryd has not read yet, and remembers them read."""

    def __init__(self, ctx: ReadContext) -> None:
        self.ctx = ctx

    def read_table(
        self, conn: sqlite3.Connection, shape: archives.TableShape, sf: src.SourceFile,
        cp: Checkpoint, pending: dict[str, Calls], stats: ScanStats,
    ) -> None:  # fmt: skip
        """Read the archives of a table not read before (listing them reads no blob)."""
        if shape.unknown and shape.table not in self.ctx.reported:  # (nothing to act on)
            self.ctx.reported.add(shape.table)
            emit("ingest.archive_columns", debug=True, store=str(sf.path), table=shape.table,
                 unknown=list(shape.unknown))  # fmt: skip
        if not shape.readable:
            if shape.table + "!" not in self.ctx.reported:
                self.ctx.reported.add(shape.table + "!")
                emit("ingest.archive_unreadable", store=str(sf.path), table=shape.table,
                     reason="no name or blob column")  # fmt: skip
            return
        for name, size, digest in archives.list_archives(conn, shape):
            record = f"{sf.path}#{shape.table}/{name}"
            if self.ctx.archives_done.get((cp.agent, record)) == (size, digest):
                continue
            found = archives.fetch_archive(conn, shape, name)
            if found is None:
                continue
            stats.files_read += 1
            open_stream = functools.partial(archives.open_blob, found.blob, found.encoding)
            self._read(cp.agent, open_stream, found.session_id or "", found.session_key,
                       (record, size, digest), cp.id, pending, stats)  # fmt: skip

    def read_file(
        self, sf: src.SourceFile, st: os.stat_result, pending: dict[str, Calls], stats: ScanStats
    ) -> None:
        """A ``.zst`` archive file (derived from a deleted or reset session, or cold storage);
        one that is not a zstd frame is no archive of OpenClaw's: remembered as seen, not read.
        """
        record = (str(sf.path), st.st_size, str(st.st_mtime_ns))
        with open(sf.path, "rb") as fh:
            if not archives.is_zstd_file(fh.read(4)):
                self.ctx.ledger.archive_skipped(sf.agent, record)
                self.ctx.archives_done[(sf.agent, record[0])] = record[1:]
                return
            fh.seek(0)
            stats.files_read += 1
            zstd = sqlite_source.zstd_module()
            self._read(sf.agent, lambda: zstd.ZstdFile(fh, "rb"), src.session_id_of(sf.path.name),
                       None, record, 0, pending, stats)  # fmt: skip

    def _read(
        self, agent: str, open_stream: Callable[[], Any], session: str, key: str | None,
        record: tuple[str, int, str], source_id: int, pending: dict[str, Calls], stats: ScanStats,
    ) -> None:  # fmt: skip
        """Every line of one archive, committed in batches; the last commit records it read.

        A frame that breaks off is one malformed line: what came before it is counted, and the
        archive is remembered as read (it will not mend). Its malformed and oversized lines are
        recorded with its last commit only: an archive left unfinished is read whole again, and
        they would be counted twice (its hits and calls are unique rows, recorded as they come).
        """
        calls = self.ctx.calls(pending, agent)
        cp = Checkpoint(source_id, agent, record[0], 0, 0, 0, "", 0, 0, 0)
        commit_every = self.ctx.ledger.commit_bytes
        held = Batch(cp, session, False)  # the bad lines of the batches committed so far
        batch = self._archive_batch(cp, session, key)
        size = 0  # bytes since the last commit
        total = 0
        try:
            for line in archives.iter_lines(open_stream(), self.ctx.cfg.ingest.max_line_bytes):
                if line is None:
                    batch.oversized += 1
                    continue
                size += len(line) + 1
                waiting = calls.waiting_in(batch.session)
                if not (
                    NEEDLE in line
                    or USER_NEEDLE in line  # (whose turn the next lines are in)
                    or _QUOTED_USER in line  # (a cold record holds its event as a string)
                    or b'"header"' in line
                    or (waiting and any(written_id(c).encode() in line for c in waiting))
                ):
                    continue
                rec = archives.read_record(line)
                if rec.kind == "header":
                    self._commit_archive(batch, size, None, held)
                    total, size = total + size, 0
                    batch = self._archive_batch(cp, rec.session_id or session, rec.session_key)
                    continue
                if rec.kind == "ignored":
                    if rec.session_key is not None and rec.session_key not in self.ctx.reported:
                        self.ctx.reported.add(rec.session_key)
                        emit("ingest.archive_record", archive=record[0], kind=rec.session_key)
                    continue
                if not rec.line:
                    batch.malformed += 1
                    continue
                if (
                    rec.kind == "line"
                    or NEEDLE in rec.line
                    or USER_NEEDLE in rec.line
                    or any(written_id(c).encode() in rec.line for c in waiting)
                ):
                    self.ctx.applier.line(rec.line, batch, calls, stats)
                if size >= commit_every:
                    self._commit_archive(batch, size, None, held)
                    total, size = total + size, 0
                    turn = batch.turn
                    batch = self._archive_batch(cp, batch.session, None, batch.session_synthetic)
                    batch.in_turn(turn, self.ctx.applier.left_out_turns)
        except Exception as exc:
            if not is_frame_error(exc):
                raise
            batch.malformed += 1
            emit("ingest.malformed_archive", archive=record[0], reason=str(exc))
        stats.bytes_read += total + size
        self._commit_archive(batch, size, record, held)

    def _archive_batch(
        self, cp: Checkpoint, session: str, key: str | None, synthetic: bool | None = None
    ) -> Batch:
        if synthetic is None:
            ctx = self.ctx
            synthetic = (
                session in ctx.synthetic(cp.agent)
                or session in ctx.store_synthetic_of(cp.agent)
                or (key is not None and src.is_synthetic_key(
                    key, active_memory=ctx.helper_excluded, synthetic=ctx.synthetic_excluded
                ))
            )  # fmt: skip
        batch = Batch(cp, session, synthetic)
        batch.reread = True
        return batch

    def _commit_archive(
        self, batch: Batch, nbytes: int, record: tuple[str, int, str] | None, held: Batch
    ) -> None:
        """Commit a batch of an archive; its bad lines are moved to ``held`` until the last
        (``record``), which takes them all (see :meth:`_read`)."""
        if record is None:
            held.malformed += batch.malformed
            held.oversized += batch.oversized
            held.non_memory += batch.non_memory
            batch.malformed = batch.oversized = batch.non_memory = 0
        else:
            batch.malformed += held.malformed
            batch.oversized += held.oversized
            batch.non_memory += held.non_memory
        self.ctx.ledger.commit_archive(batch, nbytes, record)  # (counted at the commit)
        if record is not None:
            self.ctx.archives_done[(batch.cp.agent, record[0])] = record[1:]
