"""What a parsed transcript line adds to a batch: calls made, calls answered, hits.

Every source kind ends here, line by line, in the order it reads them: the memory calls met,
the results that answer them (:func:`.calls.answers`) and the memory files those name (a hit
each, unless the path is not a memory file or the traffic is not the user's).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from typing import Any

from .. import clock
from ..section_map import anchor_text
from ..workspace import Roots, archive_folder_of, classify_result_path
from .calls import (
    OCCURRENCE_MARK,
    Call,
    CallRow,
    Calls,
    answers,
    is_numbered,
    occurrence_id,
    stored_occurrence,
)
from .events import (
    CALL_FIELDS,
    CELL_FIELDS,
    CELL_VALUE,
    CODE,
    GET,
    RESULT_ID,
    RESULT_PARENT,
    SEARCH,
    TURN_FIELDS,
    UNRECOGNISED_FIELDS,
    CellEnded,
    ParsedLine,
    ToolResult,
)
from .ledger import Ledger
from .ledger_batch import Batch
from .parser import parse
from .sqlite_source import root_of
from .stats import ScanStats
from .tool_names import nested_prefix

SYNTHETIC_QUERY_PREFIXES = ("__dreaming",)
# The tool of a code-mode cell kept among the calls while it runs: waiting, so that its result
# line, which holds no needle, is looked for by its id (the row never counts as a memory call).
CELL = "cell"
_CELLS_MAX = 4096  # cells whose inner calls are remembered until their result (a bound)
_KEYS_MAX = 65536  # classified paths remembered (a bound for a daemon that runs for months)
_BARE_MAX = 4096  # reused ids whose bare-id row was looked up, remembered (the same bound)


class Applier:
    """Turns parsed lines into a batch's rows (pure but for looking up an unknown call)."""

    def __init__(
        self, ledger: Ledger, workspaces: dict[str, Roots], primary: Roots, tiers_root: Roots,
        count_synthetic: bool, extras: dict[str, tuple[str, ...]] | None = None,
        left_out_turns: frozenset[str] = frozenset(),
        lineage_of: Callable[[str], dict[str, str | None]] = lambda _agent: {},
        archive_dir: str = "",
    ) -> None:  # fmt: skip
        self.ledger = ledger
        self._workspaces = workspaces
        # agent → its `memory.search.extraPaths` (every spelling): notes there count too
        self._extras = extras or {}
        self._primary = primary
        self._tiers_root = tiers_root
        self.count_synthetic = count_synthetic
        # `archive.dir`: a hit on a copy expire archived there counts under the note's name
        self._archive_dir = archive_dir
        # The runs told by their turns whose lookups are left out (heartbeat, cron: as the
        # config says); a user message's TurnStarted says which turn the next lines are in.
        self.left_out_turns = left_out_turns
        # agent → (path as written → its hit key or None): a pure function of the path and the
        # agent's workspace, and a backlog names the same few hundred files over and over.
        self._keys: dict[str, dict[str, str | None]] = {}
        # (agent, numbered id) → the time and session of the call kept under the bare id, or None
        self._bare: dict[tuple[str, str], tuple[float | None, str | None] | None] = {}
        # agent → its store's session lineage (session → the one it continues, None: a root;
        # see _counted_bare), read when asked (the read context's: ReadContext.lineage),
        # and per agent the lineage the roots found so far are of
        self.lineage_of = lineage_of
        self._roots: dict[str, tuple[dict[str, str | None], dict[str, str | None]]] = {}
        # (agent, cell's call id) → its inner calls met in this process, until its result
        self._cells: dict[tuple[str, str], list[str]] = {}

    def _note_of_copy(self, workspace: Roots, key: str) -> tuple[str, bool]:
        """The key a hit on ``key``, a path in the archive folder, counts under: the note's own
        name when expire archived it there, so a note brought back keeps one history; else
        ``key``. With whether that may be remembered (a copy not journaled yet may be later)."""
        roots = (workspace,) if isinstance(workspace, str) else workspace
        spelled = [posixpath.join(posixpath.normpath(r), key) for r in roots]
        src = self.ledger.archived_from(spelled)
        if src is None:
            return key, False
        for root in map(posixpath.normpath, roots):
            if src.startswith(root + "/"):
                return src[len(root) + 1 :], True
        return key, True  # (journaled under a workspace this agent's is not: left as found)

    def memo_sizes(self) -> dict[str, int]:
        """Entries in its memos (bounded: ``_KEYS_MAX`` an agent, ``_BARE_MAX``), for the
        daemon's footprint log."""
        return {"path_keys": sum(map(len, self._keys.values())), "bare_ids": len(self._bare)}

    def line(self, line: bytes, batch: Batch, calls: Calls, stats: ScanStats) -> None:
        self.parsed(parse(line), batch, calls, stats)

    def parsed(self, parsed: ParsedLine, batch: Batch, calls: Calls, stats: ScanStats) -> None:
        """Add one parsed line's calls and hits to ``batch`` (events read in their wire form:
        kind by number of fields, a field by index, as :mod:`.events` names them)."""
        self.lines(((0, 0, parsed),), batch, calls, stats, {})

    def lines(
        self, lines: Iterable[tuple[int, int, ParsedLine]], batch: Batch, calls: Calls,
        stats: ScanStats, made_at: dict[str, int],
    ) -> None:  # fmt: skip
        """Add parsed lines (``(begin, end, parsed)``, in file order) to ``batch``; each call
        made (or carried into this session) goes into ``made_at`` with the end of its line.
        What does not change from one line to the next is looked up once.
        """
        agent = batch.cp.agent
        session = batch.session
        known = calls.known
        new_call = batch.new_call
        result = self._result
        n = malformed = 0
        # nested-tool record → the wrapper call it describes (its answer goes to that call)
        same_as: dict[str, str] = {}
        skipped: set[str] = set()  # a cell's value envelopes told by its records already
        ev: Any  # (told by its field count, which the type checker cannot follow)
        # (the names bound here: read as fast as the literal numbers they stand for)
        call_fields, cell_fields, turn_fields = CALL_FIELDS, CELL_FIELDS, TURN_FIELDS
        unrecognised_fields, id_at, parent_at = UNRECOGNISED_FIELDS, RESULT_ID, RESULT_PARENT
        for _, line_end, (events, bad) in lines:
            n += 1
            if bad:
                malformed += 1
                continue
            for ev in events:
                fields = len(ev)
                if fields != call_fields:
                    if fields == unrecognised_fields:
                        (sample,) = ev
                        batch.unrecognised(sample)
                        if stats.unrecognised_example is None:
                            stats.unrecognised_example = sample
                    elif fields == cell_fields:
                        self._cell_ended(ev, batch, calls)
                    elif fields == turn_fields:
                        batch.in_turn(ev[0], self.left_out_turns)
                    elif ev[parent_at] is not None and ev[id_at] in same_as:
                        result(ev, batch, calls, same_as[ev[id_at]])
                    elif ev[parent_at] is not None and ev[id_at] in skipped:
                        continue
                    else:
                        result(ev, batch, calls)
                    continue
                call_id, tool, query, ts, made, via, parent = ev
                if via == CELL_VALUE:  # what a cell returned: counts if it wrote no records
                    seen = known.get(call_id) or calls.lookup(call_id, self._fetch(agent))
                    if seen is None and self._cell_has_records(parent, batch, calls):
                        # kept as no call (tool CELL), answered: a copy of the line read
                        # later (an archive, a successor) is then known, and adds nothing
                        calls.add(call_id, Call(CELL, None, ts, True, session))
                        new_call(call_id, CELL, None, ts, CELL)
                        batch.answer(agent, call_id)
                        skipped.add(call_id)
                        continue
                    via = CODE
                elif parent is not None:  # a nested-tool record
                    wrapper = self._wrapper_of(parent, tool, query, made, batch, calls)
                    if wrapper is not None:
                        # the same call as a ``tool_call`` wrapper met before it: counted once,
                        # under the wrapper's id (its own result is then a copy)
                        same_as[call_id] = wrapper
                        continue
                    via = CODE  # an inner call of ``tool_search_code``: a call of its own
                    key = self._in_cell(parent, call_id, ts, made, batch, calls)
                    if key is not None:
                        made_at[key] = line_end  # (its result is looked for after this)
                elif made is not None and is_numbered(call_id):
                    # an id reused by later turns: kept per call (see calls.occurrence_id)
                    raw, call_id = call_id, occurrence_id(call_id, made)
                    if call_id not in known and self._counted_bare(agent, raw, made, session):
                        call_id = raw
                    calls.made_again(session, raw, call_id)
                # Not looked up in the database: a call seen in an earlier scan (a copy in a
                # successor file) is inserted OR IGNOREd and at worst waits until this scan ends.
                call = known.get(call_id)
                if call is None and batch.reread:  # an archive: met in an earlier scan?
                    call = calls.lookup(call_id, self._fetch(agent))
                if call is None:
                    calls.add(call_id, Call(tool, query, ts, False, session))
                    new_call(call_id, tool, query, ts, via)
                    made_at[call_id] = line_end
                elif not call.answered and call.session != session:
                    calls.carry(call_id, call, session)  # a successor's copy
                    made_at[call_id] = line_end
        stats.lines_parsed += n
        batch.malformed += malformed

    def _counted_bare(self, agent: str, raw: str, made: float, session: str) -> bool:
        """Whether the call of numbered id ``raw`` made at ``made`` in ``session`` is the one
        kept under the bare id (by an older memoryd, or as an answer met before its call): a
        copy of that call, made no later than its row's time, in the row's session or one of
        its lineage, does not count again under an occurrence id. A call in a session of
        another lineage is its own; where the lineage is not known, any earlier call is taken
        for the copy. A call re-read keeps the id it was first kept under (its hits are unique
        under that id only). See docs/ingest-sources.md, "Reused ids after an upgrade".
        """
        key = (agent, raw)
        if key in self._bare:
            row = self._bare[key]
        else:
            # (the rows this process writes under a bare numbered id are noted in ``_bare``
            # as they are made, see _result: only older rows are looked up)
            row = self.ledger.stored_call(agent, raw)
            if len(self._bare) < _BARE_MAX:
                self._bare[key] = row
        if row is None or row[0] is None or made > row[0] + 1e-3:
            return False
        kept_in = row[1]
        if not kept_in or kept_in == session:
            return True
        if self._same_lineage(agent, session, kept_in) is False:
            return self.ledger.counted_under(agent, raw, session)
        return self.ledger.stored_call(agent, occurrence_id(raw, made)) is None

    def _same_lineage(self, agent: str, session: str, other: str) -> bool | None:
        """Whether two sessions of the agent's store descend from one root (None: not known,
        a session the windows do not name, or no windows)."""
        lineage = self.lineage_of(agent)
        if not lineage:
            return None
        memo = self._roots.get(agent)
        if memo is None or memo[0] is not lineage:  # (read again: the store changed)
            memo = self._roots[agent] = (lineage, {})
        roots = memo[1]
        mine, theirs = root_of(lineage, session, roots), root_of(lineage, other, roots)
        return None if mine is None or theirs is None else mine == theirs

    def _fetch(self, agent: str) -> Callable[[str], CallRow | None]:
        return lambda cid: self.ledger.fetch_call(agent, cid)

    def _occurrence_answered(
        self, written: str, made: float | None, batch: Batch, calls: Calls
    ) -> str:
        """The occurrence of the reused id ``written`` that a record made at ``made`` answers:
        one met in this scan, else one stored by an earlier scan (the record is a copy of
        its answer, re-appended or in a successor), else ``written`` itself (none at all)."""
        found = calls.occurrence_answered(written, batch.session, batch.parent, made)
        if found == written and written not in calls.known:
            rows = self.ledger.fetch_occurrences(batch.cp.agent, written)
            found = stored_occurrence(rows, batch.session, batch.parent, made) or written
        return found

    def _wrapper_of(
        self, parent: str, tool: str, query: str | None, made: float | None, batch: Batch,
        calls: Calls,
    ) -> str | None:  # fmt: skip
        """The id a nested-tool record's call is kept under when its outer call ``parent`` is
        a memory call (a ``tool_call`` wrapper: the same call, described twice), else None
        (``tool_search_code``: its inner calls are calls of their own).

        The wrapper's call line comes first: met in this scan, or stored by an earlier one. A
        reused id is matched by the record's time, and must have asked the same thing (else it
        is a direct call of an earlier turn).
        """
        pid = parent
        numbered = is_numbered(parent)
        if numbered:
            pid = self._occurrence_answered(parent, made, batch, calls)
        call = calls.known.get(pid)
        if call is None:
            call = calls.lookup(pid, self._fetch(batch.cp.agent))
        if call is None or call.tool == CELL:
            return None
        if numbered and (call.tool != tool or call.query != query):
            return None
        return pid

    def _in_cell(
        self, cell: str, call_id: str, ts: float | None, made: float | None, batch: Batch,
        calls: Calls,
    ) -> str | None:  # fmt: skip
        """An inner call of code-mode cell ``cell``: remembered until the cell's result, looked
        for by the cell's id (a waiting row of its own, a reused id's under the time of the
        cell's first record). The row's id when the cell is met here first, else None."""
        key = (batch.cp.agent, cell)
        inner = self._cells.get(key)
        if inner is None:
            if len(self._cells) >= _CELLS_MAX:
                self._cells.clear()  # (results never written: a crashed run's cells)
            inner = self._cells[key] = []
        inner.append(call_id)
        if self._running_cell(cell, batch, calls) is not None:
            return None
        row = occurrence_id(cell, made if made is not None else ts)
        calls.add(row, Call(CELL, None, ts, False, batch.session))
        batch.new_call(row, CELL, None, ts, CELL)
        return row

    @staticmethod
    def _running_cell(cell: str, batch: Batch, calls: Calls) -> str | None:
        """The row of code-mode cell ``cell`` still waiting for its result (met in this scan
        or loaded with the calls still waiting), else None."""
        if not is_numbered(cell):
            row = calls.known.get(cell)
            return cell if row is not None and row.tool == CELL and not row.answered else None
        prefix = cell + OCCURRENCE_MARK
        running = [
            cid
            for cid in calls.waiting_in(batch.session, batch.parent)
            if cid.startswith(prefix) and calls.known[cid].tool == CELL
        ]
        return max(running, key=lambda cid: calls.known[cid].ts or 0.0) if running else None

    def _cell_has_records(self, cell: str, batch: Batch, calls: Calls) -> bool:
        """Whether code-mode cell ``cell`` wrote nested-tool records (met in this process, or
        its row kept by an earlier scan): then they tell its inner calls, not its value."""
        if (batch.cp.agent, cell) in self._cells:
            return True
        if is_numbered(cell):  # (another turn's cell may have had the id: only a running one)
            return self._running_cell(cell, batch, calls) is not None
        row = calls.known.get(cell)
        if row is None:
            row = calls.lookup(cell, self._fetch(batch.cp.agent))
        return row is not None and row.tool == CELL

    def _cell_ended(self, ev: CellEnded, batch: Batch, calls: Calls) -> None:
        """A cell's (or a wrapper's) result: if it failed, the model saw nothing of what its
        inner calls found, and their hits are taken back (in this batch's transaction)."""
        cell, made, failed, wrapper_result = ev
        since = None  # when the cell's first record was met (its row's time)
        row = None if wrapper_result else self._running_cell(cell, batch, calls)
        if row is not None:
            pending = calls.known[row]
            since = pending.ts
            calls.answer(row, pending)
            batch.answer(batch.cp.agent, row)
        inner = self._cells.pop((batch.cp.agent, cell), [])
        if not failed:
            return
        if wrapper_result:  # a tool_call wrapper whose own result failed: its call's hits
            wrapper = cell
            if is_numbered(cell):
                wrapper = calls.occurrence_answered(cell, batch.session, batch.parent, made)
            batch.take_back([*inner, wrapper], None, None)
        elif not is_numbered(cell):
            # inner calls committed by an earlier scan (a daemon that read the cell's records
            # before it ended): found by the prefix of their ids
            batch.take_back(inner, nested_prefix(cell), None)
        else:
            # an id a provider reuses: the prefix names every turn's cell, so only what was
            # found since this cell's first record, in this session
            batch.take_back(inner, None if since is None else nested_prefix(cell), since)

    def _result(
        self, ev: ToolResult, batch: Batch, calls: Calls, resolved: str | None = None
    ) -> None:
        """Apply one result; ``resolved``: the call it answers, already found (a nested-tool
        record's wrapper call)."""
        call_id, named, paths, ev_ts, _recovered, _shape, made, _parent = ev
        if resolved is not None:
            call_id = resolved
        elif is_numbered(call_id):
            call_id = self._occurrence_answered(call_id, made, batch, calls)
        call = calls.known.get(call_id)
        if call is None:
            call = calls.lookup(call_id, self._fetch(batch.cp.agent))
        if named is not None:
            tool = named
        elif call is not None:
            tool = call.tool
        else:
            return  # an unnamed result of a call that was not a memory call
        if not answers(ev, tool):
            return  # its payload is the other memory tool's answer
        agent = batch.cp.agent
        if call is None:  # the call line was never seen (e.g. before a compaction)
            call = Call(tool, None, ev_ts, True, batch.session)
            calls.add(call_id, call)
            batch.answered_unseen.append((agent, call_id, tool, ev_ts, batch.session))
            if is_numbered(call_id) and (
                len(self._bare) < _BARE_MAX or (agent, call_id) in self._bare
            ):
                self._bare[(agent, call_id)] = (ev_ts, batch.session)  # (its call, met later)
        elif call.answered:
            # Another copy of an answer already taken: its call's hits were decided by the
            # first one (a copy read without the session's key must not count what was not).
            return
        else:
            calls.answer(call_id, call)
            batch.answer(agent, call_id)
        if not paths:
            return  # an answer with no results: the call is answered, and that is all
        query = call.query if tool == SEARCH else None
        # (A batch is synthetic only for the traffic the config leaves out.)
        if batch.synthetic or (
            not self.count_synthetic
            and query is not None
            and query.startswith(SYNTHETIC_QUERY_PREFIXES)
        ):
            return
        ts = ev_ts or call.ts or clock.now()
        asked = call.query if tool == GET and call.query else ""
        keys = self._keys.get(agent)
        if keys is None:
            keys = self._keys[agent] = {}
        rows = batch.hits  # (flat, 9 values a hit; the batch's agent and session go with them)
        for path, score, start_line, end_line, anchor in paths:
            raw = path or asked
            key = keys.get(raw, keys)  # (the dict itself: not classified yet)
            if key is keys:
                workspace = self._workspaces.get(agent) or self._primary
                extra = self._extras.get(agent, ())
                key = classify_result_path(raw, workspace, self._tiers_root, extra) if raw else None
                settled = True
                if key is not None and archive_folder_of(key, self._archive_dir) is not None:
                    key, settled = self._note_of_copy(workspace, key)
                if settled and len(keys) < _KEYS_MAX:
                    keys[raw] = key
            if key is None:
                batch.non_memory += 1  # (counted when the batch is committed)
                continue
            rows.extend(
                (call_id, key, tool, ts, query, score, start_line, end_line, anchor_text(anchor))
            )
