"""The transcript store as a source: new rows of each session, then its archive tables.

The shell around :mod:`.sqlite_source`: open the store read-only when its signature changed,
read each session's rows after its cursor (a session before the ones that continue it), and
commit each batch with the session's new cursor through the ledger. Sessions rewritten in place
(a new ``transcript_rewrite_watermarks`` row, or rows ending below the cursor) are read again
from their start.
"""

from __future__ import annotations

import os
import sqlite3
import time

from . import archives, sqlite_source
from . import sources as src
from .archive_reader import ArchiveReader
from .calls import Calls, written_id
from .context import ReadContext, emit
from .ledger_batch import Batch
from .parser import parse
from .prescan import NEEDLE
from .stats import ScanStats, SourceFailed
from .tailer import Checkpoint
from .turn_kinds import TURN_RUNS

_LOOKS = 3  # reads of the new rows per scan of a store (see ``read``)
_TURN_KINDS = TURN_RUNS
_UNKNOWN = object()  # a session's turn not known yet in this process
USER_ROLE = src.USER_ROLE


class StoreReader:
    """Reads an agent's ``openclaw-agent.sqlite`` (and, through ``archives``, its archives)."""

    def __init__(self, ctx: ReadContext, archives: ArchiveReader) -> None:
        self.ctx = ctx
        self.archive_reader = archives

    def read(
        self, sf: src.SourceFile, st: os.stat_result, cp: Checkpoint | None,
        pending: dict[str, Calls], stats: ScanStats,
    ) -> None:  # fmt: skip
        """Read new rows of OpenClaw's SQLite transcript store (not opened when its database
        and WAL are as they were)."""
        sig = sqlite_source.signature(sf.path)
        taken = time.time_ns()
        if sig is None or (cp is not None and (cp.size, cp.mtime_ns) == sig):
            return  # no new rows: the database and its WAL are as they were
        # Counted as read when it had something to read (or failed): a second look at a store
        # that was provisionally read and has nothing new is no read.
        read_before, rows_before = stats.files_read, stats.bytes_read
        stats.files_read += 1
        conn = sqlite_source.open_readonly(sf.path)
        try:
            tables = self._tables(conn)
            layout = sqlite_source.pick_layout(tables)
            if layout is None:
                version = sqlite_source.user_version(conn)
                if sqlite_source.holds_no_transcripts(tables, version):
                    stats.files_read = read_before  # not a transcript store: nothing read
                    return
                if sqlite_source.still_being_created(tables, version, taken / 1e9 - st.st_mtime):
                    stats.files_read = read_before  # not ready yet: looked at again soon
                    stats.retry_in = max(stats.retry_in, sqlite_source.SETTLE_S)
                    emit("ingest.store_not_ready", debug=True, store=str(sf.path))
                    return
                raise SourceFailed(sqlite_source.UNSUPPORTED)
            layout = sqlite_source.with_ties(conn, layout)
            keys = sqlite_source.session_keys(conn, tables)
            parents = sqlite_source.previous_sessions(conn, tables)
            if cp is None:
                cp = self.ctx.ledger.new_store_source(sf, st)
            self.ctx.store_changed(cp.agent)
            calls = self.ctx.calls(pending, cp.agent)
            cursors = self.ctx.ledger.cursors(cp.id)
            self.ctx.store_synthetic[cp.agent] = src.synthetic_from_keys(
                keys.items(), active_memory=self.ctx.helper_excluded,
                synthetic=self.ctx.synthetic_excluded,
            )  # fmt: skip
            synthetic_ids = self.ctx.synthetic(cp.agent) | self.ctx.store_synthetic[cp.agent]
            # Sessions rewritten in place since the last read (a new watermark): from the start.
            marks = sqlite_source.rewrite_marks(conn, tables)
            mark_name = f"{sf.path}#{sqlite_source.REWRITE_TABLE}/"
            changed_marks = {
                sid: digest
                for sid, digest in marks.items()
                if self.ctx.archives_done.get((cp.agent, mark_name + sid), (0, ""))[1] != digest
            }
            for sid in changed_marks:
                if sid in cursors:
                    cursors[sid] = sqlite_source.START
            # Read, then look once more: a writer's rows can become visible a moment after its
            # last WAL write, so the signature may already count rows the first look missed.
            live: set[str] = set()  # every session of the live table (the first look's walk)
            todo = sqlite_source.sessions_with_new_rows(conn, layout, cursors, live)
            if self._back(cp, todo, cursors, changed_marks):  # sessions gone, there again
                todo = sqlite_source.sessions_with_new_rows(conn, layout, cursors)
            had_cursor = set(cursors)
            for look in range(_LOOKS):
                if look:
                    todo = sqlite_source.sessions_with_new_rows(conn, layout, cursors)
                if not todo:
                    break
                self._header_parents(conn, layout, todo, parents)
                for session_id, after, top in sqlite_source.parents_first(todo, parents):
                    digest = changed_marks.pop(session_id, None) if after[0] < 0 else None
                    marks_read = None if digest is None else {mark_name + session_id: digest}
                    cursors[session_id] = self._read_session(
                        conn, layout, cp, session_id, after, top, session_id in synthetic_ids,
                        parents.get(session_id), calls, stats, marks_read,
                    )  # fmt: skip
            for shape in archives.archive_shapes(tables):
                self.archive_reader.read_table(conn, shape, sf, cp, pending, stats)
            self._upkeep(
                conn, layout, cp, cursors, had_cursor, live, set(marks), parents, mark_name
            )
        finally:
            conn.close()
        if stats.bytes_read == rows_before and stats.files_read == read_before + 1:
            stats.files_read = read_before  # opened, nothing new (the archives count their own)
        marks_seen = {mark_name + sid: d for sid, d in changed_marks.items()}
        if not sqlite_source.settled(sig, taken):  # written just now: look again soon
            stats.retry_in = max(stats.retry_in, sqlite_source.SETTLE_S)
            sig = (sig[0], -1)
        self.ctx.ledger.store_read(cp.id, cp.agent, sig, marks_seen)

    def _back(
        self, cp: Checkpoint, todo: list[tuple[str, sqlite_source.Cursor, int]],
        cursors: dict[str, sqlite_source.Cursor], changed_marks: dict[str, str],
    ) -> bool:  # fmt: skip
        """Give back their cursors to sessions seen gone before that the store holds again
        (read on from it, not from their start); whether any was. Only sessions without a
        cursor are looked up."""
        unknown = [sid for sid, _after, _top in todo if sid not in cursors]
        back = self.ctx.ledger.gone_cursors(cp.id, unknown) if unknown else {}
        if not back:
            return False
        self.ctx.ledger.store_sessions_moved(cp.id, self.ctx.now, {}, back)
        cursors.update(back)
        for sid in back.keys() & changed_marks.keys():  # rewritten meanwhile: from the start
            cursors[sid] = sqlite_source.START
        return True

    def _upkeep(
        self, conn: sqlite3.Connection, layout: sqlite_source.Layout, cp: Checkpoint,
        cursors: dict[str, sqlite_source.Cursor], had_cursor: set[str], live: set[str],
        marked: set[str], parents: dict[str, str], mark_name: str,
    ) -> None:  # fmt: skip
        """Set aside the cursors of sessions gone from the live table (given back by
        :meth:`_back` if they return); forget those gone for the grace period, with their
        rewrite watermark and their calls still waiting unless a session continues them. Calls
        answered and hits stay, so a later copy counts nothing twice (docs/ingest-sources.md).
        """
        now = self.ctx.now  # (the scan's start: see ReadContext.new_scan)
        left = sqlite_source.sessions_left(had_cursor, live)
        if left:
            gone = {sid: cursors[sid] for sid in left}
            self.ctx.ledger.store_sessions_moved(cp.id, now, gone, {})
        grace_s = self.ctx.cfg.ingest.vanished_grace_days * 86400.0
        forget = self.ctx.ledger.store_sessions_expired(cp.id, now - grace_s)
        if not forget:
            return
        done = self.ctx.archives_done
        marks = [
            mark_name + sid
            for sid in forget
            if sid not in marked and (cp.agent, mark_name + sid) in done
        ]
        calls = sqlite_source.not_continued(forget, parents)
        if calls:  # the links only a header tells, of the sessions not read from their start
            headers = self._header_links(conn, layout, live - parents.keys())
            calls = sqlite_source.not_continued(calls, headers)
        self.ctx.ledger.forget_store_sessions(cp, forget, marks, calls, now - grace_s)
        for name in marks:
            done.pop((cp.agent, name), None)
        from .. import log  # (logging itself: a light module)

        if not log.CONFIGURED:
            return  # a one-shot scan: nothing went wrong, nothing for stderr
        grace_days = self.ctx.cfg.ingest.vanished_grace_days
        emit("ingest.store_sessions_forgotten", store=cp.path, sessions=len(forget),
             waiting_calls_of=len(calls), grace_days=grace_days)  # fmt: skip

    @staticmethod
    def _header_links(
        conn: sqlite3.Connection, layout: sqlite_source.Layout, sessions: set[str]
    ) -> dict[str, str]:
        """Session → the one its header names as continued (``parentSession``), of
        ``sessions``: a first row each, by the table's key (asked only when forgetting the
        waiting calls of sessions that no window links)."""
        out: dict[str, str] = {}
        for session_id in sessions:
            header = sqlite_source.header_row(conn, layout, session_id)
            parent = src.header_parent(header) if header else None
            if parent and parent != session_id:
                out[session_id] = parent
        return out

    @staticmethod
    def _header_parents(
        conn: sqlite3.Connection, layout: sqlite_source.Layout,
        todo: list[tuple[str, sqlite_source.Cursor, int]], parents: dict[str, str],
    ) -> None:  # fmt: skip
        """Add the lineage only a header tells: ``parentSession`` of sessions read from the start
        (no ``session_windows`` before schema 14, or a window without its previous session),
        known before the order is settled, so the continued session is read first."""
        fresh = {sid for sid, after, _top in todo if after[0] < 0 and sid not in parents}
        if fresh:
            parents.update(StoreReader._header_links(conn, layout, fresh))

    @staticmethod
    def _tables(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
        """The store's tables, the first thing read: where a store held locked shows. A lock
        held past the busy timeout fails the store for this scan only, with that reason."""
        try:
            return sqlite_source.table_columns(conn)
        except sqlite3.OperationalError as exc:
            if not sqlite_source.is_busy(exc):
                raise
            raise SourceFailed(
                f"{exc} (still locked after {sqlite_source.BUSY_TIMEOUT_S:g} s; "
                "read at the next scan)"
            ) from None

    def _read_session(
        self, conn: sqlite3.Connection, layout: sqlite_source.Layout, cp: Checkpoint,
        session_id: str, after: sqlite_source.Cursor, top: int, synthetic: bool,
        parent: str | None, calls: Calls, stats: ScanStats, marks: dict[str, str] | None = None,
    ) -> sqlite_source.Cursor:  # fmt: skip
        """One session's rows after ``after`` up to seq ``top``, a batch per transaction with
        the new cursor; returns the last. ``marks``: the rewrite watermark that made it read
        from the start, recorded with the first batch.

        Every row is looked at in seq order (a compressed one decoded first), and the same
        byte prefilter as for files picks the rows to parse: ``memory_``, or the id of a call
        still waiting, the ids taken again after each parsed row.
        """
        max_bytes = self.ctx.cfg.ingest.max_line_bytes
        decode = sqlite_source.decode_event
        apply = self.ctx.applier.parsed
        # The turns of runs left out are told by the user message each turn begins with.
        left_out = self.ctx.synthetic_excluded & _TURN_KINDS
        turn = None
        if left_out:
            turn = self._turn_at(conn, layout, cp.agent, session_id, after)
        more = True
        while more:
            rows, upto, more = sqlite_source.every_row(conn, layout, session_id, after, top)
            ids = [written_id(c).encode() for c in calls.waiting_in(session_id, parent)]
            batch = Batch(cp, session_id, synthetic, parent)
            batch.in_turn(turn, left_out)
            for seq, json_type, text, frame, size in rows:
                if json_type == "text" and text[:1] == b"{" and len(text) <= max_bytes:
                    event = text  # a plain row, the usual case: no call needed
                else:
                    event, why = decode(json_type, text, frame, size, max_bytes)
                    if event is None:
                        batch.malformed += 1
                        self.ctx.malformed_event(cp.path, session_id, seq, why or "")
                        continue
                if left_out and USER_ROLE in event:
                    is_user, kind = src.turn_kind(event)
                    if is_user:
                        turn = kind
                        batch.in_turn(turn, left_out)
                if NEEDLE in event or (ids and any(c in event for c in ids)):
                    apply(parse(event), batch, calls, stats)
                    ids = [written_id(c).encode() for c in calls.waiting_in(session_id, parent)]
            # (the size of the rows the batch covers: the group commit's measure, the bytes read)
            nbytes = sqlite_source.size_of(rows)
            stats.bytes_read += nbytes
            # (its new rows and malformed ones counted when the transaction commits)
            self.ctx.ledger.commit_store_batch(batch, nbytes, upto, marks)
            after, marks = upto, None
        if left_out:
            self.ctx.turns[(cp.agent, session_id)] = turn
        return after

    def _turn_at(
        self, conn: sqlite3.Connection, layout: sqlite_source.Layout, agent: str,
        session_id: str, after: sqlite_source.Cursor,
    ) -> str | None:  # fmt: skip
        """The run kind of the turn a session's read resumes in (None: the user's): known from
        the last read in this process, else from the last user message before the cursor
        (read back once; a session read from its start begins with no turn)."""
        known = self.ctx.turns.get((agent, session_id), _UNKNOWN)
        if known is not _UNKNOWN:
            return known  # type: ignore[return-value]
        if after[0] < 0:
            return None
        max_bytes = self.ctx.cfg.ingest.max_line_bytes
        back = sqlite_source.LOOK_BACK_ROWS
        rows = sqlite_source.rows_before(conn, layout, session_id, after[0], back)
        for _seq, json_type, text, frame, size in rows:
            event, _why = sqlite_source.decode_event(json_type, text, frame, size, max_bytes)
            if event is not None and USER_ROLE in event:
                is_user, kind = src.turn_kind(event)
                if is_user:
                    return kind
        return None
