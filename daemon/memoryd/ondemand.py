"""Restore on demand: a search or a read that asks for an archived file brings it back.

OpenClaw's ``memory_search`` never sees the archive, so the agent cannot find a note expire
archived; memoryd can. After each ingest pass the daemon reads the ``memory_search`` and
``memory_get`` calls new since its checkpoint, scores each query against the files expire
archived before it (:mod:`memoryd.policy.restore_match`), and undoes the archive move of the
best match through the journal (:meth:`memoryd.mover.Mover.undo`). The plugin asks the same
before a call (``memoryd on-read`` / ``on-search``), so that very call gets the note. The
rules that keep it safe (only memoryd's own archives, never over a user's file, history is
no request, the checkpoint and its slack) are in docs/lifecycle.md, "Restore on demand".

Every outcome is one JSON log line (``restore.on_demand`` / ``restore.on_demand_conflict``),
a counter, an entry of :data:`memoryd.ondemand_outcomes.RECENT_META` and a notification.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .config import Config, Paths
from .move_journal import EXPIRE_BATCH, restore_on_demand_batch
from .ondemand_outcomes import (
    READ_TRIGGER,
    RECENT_META,
    notification_text,
    outcome_words,
    push_recent,
    recent_events,
)
from .store import Store

if TYPE_CHECKING:
    from .mover import Mover
    from .pathmatch import FsTraits

CHECKPOINT_META = "restore.checkpoint"  # transcript time of the newest search looked at
FLOOR_META = "restore.floor"  # searches stamped at or before this are history, never requests
SLACK_SECONDS = 600.0
# Searches stamped after the clock when the floor is set (:func:`ignore_until`), [agent, call
# id, stamp] each, kept until the searches looked at have passed their stamp.
HISTORY_CALLS_META = "restore.history_calls"
HISTORY_CALLS_MAX = 10_000  # (a flood of stamps ahead: the earliest named, the rest new)
MAX_TEXT_BYTES = 256 * 1024  # of an archived file's text, scored (notes are far smaller)
READ_LOG_NOTE = "restored on demand: read"  # the log line's words for such a restore
SEARCH_LOG_NOTE = "restored on demand: search"  # and for a search's
OPENING_CHARS = 600  # of a note a search brought back, handed to the agent in that call


class Archived(NamedTuple):
    """A file expire archived that could come back: its journal entry, as paths. (A named
    tuple: ``status`` imports this module, and importing dataclasses costs more than it.)"""

    move_id: int
    src: str  # absolute original path
    dst: str  # absolute archived path
    archived_at: float  # journal time the move finished
    sha256: str | None = None  # of the bytes archived, as journaled


class Search(NamedTuple):
    """One ``memory_search`` call read from the ``calls`` table."""

    agent: str
    call_id: str
    query: str
    ts: float


# --------------------------------------------------------------------------- pure


def candidates_for(
    search: Search, archived: Sequence[Archived], workspaces: Mapping[str, Sequence[str]]
) -> list[Archived]:
    """The archived files ``search`` may bring back: archived before it, in its agent's
    workspace (``workspaces``: agent → workspace folders, absolute)."""
    roots = workspaces.get(search.agent, ())
    out = []
    for a in archived:
        if a.archived_at >= search.ts:
            continue
        if any(a.src.startswith(root.rstrip("/") + "/") for root in roots):
            out.append(a)
    return out


MAX_ASKED_CHARS = 4096  # of a path asked by memory_get (longer: no file memoryd archived)


def read_target(asked: str, root: str) -> str | None:
    """The absolute, normalised path a ``memory_get`` of ``asked`` names in the workspace
    ``root``, or None. Pure and lexical: the model's path is data, so a ``..`` part, a NUL, an
    empty or overlong name name nothing, and no symlink is looked at."""
    if not asked or len(asked) > MAX_ASKED_CHARS or "\x00" in asked:
        return None
    if ".." in asked.replace("\\", "/").split("/"):
        return None
    base = os.path.normpath(root)
    full = os.path.normpath(asked if os.path.isabs(asked) else os.path.join(base, asked))
    return full if full.startswith(base.rstrip("/") + "/") else None


def archived_at_path(
    asked: str,
    roots: Sequence[str],
    archived: Sequence[Archived],
    *,
    copy: bool = False,
    traits_of: Callable[[Sequence[Archived]], FsTraits] | None = None,
) -> Archived | None:
    """The archived file (the latest, if archived more than once) whose original path a read
    of ``asked`` names in ``roots``, the reader's workspace; with ``copy``, the one whose
    archived copy it names. None when it names no file memoryd archived.

    A name spelled otherwise than the journal has it (``Café.md`` for an NFD ``café.md``)
    names it where the file system opens both spellings as one file: ``traits_of`` says how
    the archive's file system compares names, asked only when some archived file could be
    that name under some file system's folding. Pure but for ``traits_of``."""
    targets = {t for root in roots if (t := read_target(asked, root)) is not None}
    if not targets:
        return None

    def path_of(a: Archived) -> str:
        return os.path.normpath(a.dst if copy else a.src)

    named = [a for a in archived if path_of(a) in targets]
    if not named and traits_of is not None:
        from .pathmatch import MACOS_DEFAULT, fold  # (most reads name no archived file)

        widest = {fold(t, MACOS_DEFAULT) for t in targets}
        near = [a for a in archived if fold(path_of(a), MACOS_DEFAULT) in widest]
        if near and (traits := traits_of(near)).folds:
            keys = {fold(t, traits) for t in targets}
            named = [a for a in near if fold(path_of(a), traits) in keys]
    return max(named, key=lambda a: (a.archived_at, a.move_id), default=None)


def archive_traits(roots: Sequence[str]) -> Callable[[Sequence[Archived]], FsTraits]:
    """How the file system of a workspace's archive compares names (``MEMORYD_FS_TRAITS``
    or asked of the archived copies, which are on it), for :func:`archived_at_path`."""

    def traits_of(near: Sequence[Archived]) -> FsTraits:
        from pathlib import Path

        from .pathmatch import traits_for

        # (the journal holds resolved paths: asked below whichever spelling of the workspace,
        # as given or resolved, holds the archived copies)
        for root in sorted({os.path.normpath(r) for r in roots}):
            inside = [a.dst[len(root) + 1 :] for a in near if a.dst.startswith(root + os.sep)]
            if inside:
                return traits_for(Path(root), inside)
        return traits_for(Path("/"), [])

    return traits_of


def text_for_matching(rel: str, body: str) -> str:
    """What a query is scored against: the file's name words, then its text."""
    name = rel.rsplit("/", 1)[-1].removesuffix(".md")
    return f"{name.replace('-', ' ').replace('_', ' ')}\n{body}"


def opening_of(text: str, limit: int = OPENING_CHARS) -> str:
    """The first lines of a note, at most ``limit`` characters (cut at a line end when one is
    near): what the search that brought it back shows the agent."""
    body = text.strip()
    if len(body) <= limit:
        return body
    cut = body[:limit]
    at = cut.rfind("\n")
    return (cut[:at] if at >= limit // 2 else cut).rstrip() + "\n…"


# --------------------------------------------------------------------------- shell


def _as_time(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def ignore_until(store: Store, now: float) -> None:
    """Make every search counted so far history (the first check; the switch off): those
    stamped at or before ``now``, and those stamped after it by their ids
    (:data:`HISTORY_CALLS_META`). They are named, not the floor raised to their stamp: a
    session whose clock runs ahead must not hide other sessions' searches."""
    ahead = store.conn.execute(
        "SELECT agent, call_id, ts FROM calls WHERE ts > ? ORDER BY ts LIMIT ?",
        (now, HISTORY_CALLS_MAX),
    ).fetchall()
    with store.transaction():
        store.set_meta(CHECKPOINT_META, repr(now))
        store.set_meta(FLOOR_META, repr(now))
        _keep_history_calls(store, {(a, c): ts for a, c, ts in ahead})


def _keep_history_calls(store: Store, named: Mapping[tuple[str, str], float]) -> None:
    """Write :data:`HISTORY_CALLS_META` (within the caller's transaction)."""
    import json

    store.set_meta(HISTORY_CALLS_META, json.dumps([[*k, ts] for k, ts in named.items()]))


def _history_calls(store: Store) -> dict[tuple[str, str], float]:
    """The calls :func:`ignore_until` named as history, with their stamps (a damaged
    value: none)."""
    import json

    try:
        named = json.loads(store.get_meta(HISTORY_CALLS_META) or "[]")
        return {(str(a), str(c)): float(ts) for a, c, ts in named}
    except (ValueError, TypeError, RecursionError):
        return {}


def archived_files(store: Store) -> list[Archived]:
    """Done archive moves of expire that were not undone and whose archived copy is there."""
    from .move_journal import archived_moves

    return [
        Archived(m.id, m.src, m.dst, m.created if m.finished is None else m.finished, m.sha256)
        for m in archived_moves(store, EXPIRE_BATCH)
        if m.dst and os.path.lexists(m.dst)
    ]


class RestoreOnDemand:
    """The daemon's watcher; :meth:`check` runs on the ingest thread after each pass."""

    def __init__(self, cfg: Config, paths: Paths) -> None:
        self.cfg, self.paths = cfg, paths
        self._seen: dict[tuple[str, str], float] = {}  # calls looked at, within the slack
        self._reported: set[tuple[int, str]] = set()  # (move id, outcome) left alone
        self._texts: dict[str, tuple[int, int, str]] = {}  # dst → (mtime_ns, size, text)
        # workspace file → (size, mtime, text): the notes a restore must answer better than
        self._present: dict[str, tuple[int, float, str]] = {}

    def reconfigure(self, cfg: Config, paths: Paths) -> None:
        """A reload: the agents (and their workspaces) may have changed."""
        self.cfg, self.paths = cfg, paths

    def _workspaces(self) -> dict[str, list[str]]:
        """agent id → its workspace, as given and resolved (the journal has either)."""
        out: dict[str, list[str]] = {}
        for agent in self.paths.agents:
            roots = {str(agent.workspace), os.path.realpath(agent.workspace)}
            out.setdefault(agent.id, []).extend(sorted(roots))
        return out

    def _rel(self, path: str) -> str:
        """``path`` relative to the workspace it is in, as status and notifications show it."""
        owner = self.paths.owner_of(path)
        return owner[1] if owner else path

    def _present_texts(self, agent: str) -> dict[str, str]:
        """The memory files in ``agent``'s workspace now (path → text as scored), remembered
        by (size, mtime): an archived note must beat all of them."""
        from .signals import read_text
        from .workspace import archive_excludes, list_memory_files

        out: dict[str, str] = {}
        for a in self.paths.agents:
            if a.id != agent:
                continue
            ws = a.workspace
            for f in list_memory_files(ws, archive_excludes(ws, self.cfg.archive.dir)):
                key = str(ws / f.rel)
                cached = self._present.get(key)
                if cached is None or cached[:2] != (f.size, f.mtime):
                    body = read_text(ws, f.rel, MAX_TEXT_BYTES)
                    cached = (f.size, f.mtime, text_for_matching(f.rel, body))
                    self._present[key] = cached
                out[key] = cached[2]
        return out

    def _text(self, mover: Mover, a: Archived) -> str | None:
        """What a query is scored against, remembered by (mtime, size); None when the archived
        copy cannot be read safely."""
        from .fsutil import read_note
        from .move_files import MoveError

        try:
            st = os.lstat(a.dst)
            cached = self._texts.get(a.dst)
            if cached and cached[:2] == (st.st_mtime_ns, st.st_size):
                return cached[2]
            mover.check_path(a.dst)  # no symlinks, inside memoryd's folders
        except (OSError, MoveError):
            return None
        # A FIFO or a device there is "not a note" (counted, logged once), never a wait.
        got = read_note(a.dst, MAX_TEXT_BYTES)
        if got is None:
            return None
        text = text_for_matching(self._rel(a.src), got[0].decode("utf-8", "replace"))
        self._texts[a.dst] = (st.st_mtime_ns, st.st_size, text)
        return text

    def _new_searches(self, store: Store, since: float) -> list[Search]:
        """The ``memory_search`` calls stamped after ``since``, oldest first."""
        rows = store.conn.execute(
            "SELECT agent, call_id, query, ts FROM calls WHERE tool = 'search' "
            "AND query IS NOT NULL AND ts IS NOT NULL AND ts > ? ORDER BY ts",
            (since,),
        ).fetchall()
        return [Search(str(a), str(c), str(q), float(t)) for a, c, q, t in rows]

    def _new_reads(self, store: Store, since: float) -> list[tuple[Search, bool]]:
        """The answered ``memory_get`` calls stamped after ``since``, oldest first (the path
        asked is ``query``), each with whether it returned text (a hit was counted). One not
        answered yet waits for a later check: its read may still be under way."""
        rows = store.conn.execute(
            "SELECT c.agent, c.call_id, c.query, c.ts, EXISTS (SELECT 1 FROM hits h "
            "WHERE h.agent = c.agent AND h.call_id = c.call_id) FROM calls c "
            "WHERE c.tool = 'get' AND c.answered = 1 AND c.query IS NOT NULL "
            "AND c.ts IS NOT NULL AND c.ts > ? ORDER BY c.ts",
            (since,),
        ).fetchall()
        return [(Search(str(a), str(c), str(q), float(t)), bool(h)) for a, c, q, t, h in rows]

    def restore_read(
        self,
        store: Store,
        agent: str,
        asked: str,
        *,
        call_id: str = "",
        ts: float | None = None,
        before_moving: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Before (or after) a ``memory_get`` of ``asked`` by ``agent``: bring back the file
        memoryd archived from that path, if and only if nothing is at that path now.

        The answer's ``outcome``: ``restored``, ``none`` (no file memoryd archived has that
        path), ``present`` (something is there), ``left_alone``, or what :meth:`_restore` says.
        Counts no hit: the scanner counts the read that follows. ``before_moving`` runs only
        when a move is about to be made (a command sets up its log there: most reads move
        nothing, and logging costs a hook most of its time)."""
        from .mover import mover_for

        roots = self._workspaces().get(agent, [])
        found = (
            archived_at_path(asked, roots, archived_files(store), traits_of=archive_traits(roots))
            if roots
            else None
        )
        if found is None:
            return {"outcome": "none", "path": asked, "agent": agent}
        rel = self._rel(found.src)
        if os.path.lexists(found.src):
            return {"outcome": "present", "path": rel, "agent": agent}
        read = Search(agent, call_id, asked, time.time() if ts is None else ts)
        if before_moving is not None:
            before_moving()
        from .log import get_logger

        log = get_logger("memoryd.ondemand")
        event = self._restore(store, mover_for(store, self.paths), found, read, 1.0, log,
                              trigger=READ_TRIGGER)  # fmt: skip
        if event is None:  # left alone, and said so before
            return {"outcome": "left_alone", "path": rel, "agent": agent}
        return event

    def restore_search(
        self,
        store: Store,
        agent: str,
        query: str,
        *,
        call_id: str = "",
        ts: float | None = None,
        before_moving: Callable[[], None] | None = None,
        answer_by: float | None = None,
    ) -> dict[str, Any]:
        """Before a ``memory_search`` of ``query`` by ``agent`` runs: bring back the archived
        note the query names better than every note in the workspace
        (:func:`memoryd.policy.restore_match.best_match`), so the agent gets it in that call.

        The answer's ``outcome``: ``none``, ``tied`` (archived notes the query names as well,
        their ``paths``; none moved), ``left_alone``, or what :meth:`_restore` says; a restore
        has the note's ``opening`` lines and counts one search hit under ``call_id``, since the
        plugin answers that search itself and the scanner counts none. Past ``answer_by`` (the
        hook's deadline) the restore stands but no hit is counted, and ``late`` says so."""
        from .mover import mover_for
        from .policy.restore_match import best_match, tied_matches, top_matches

        search = Search(agent, call_id or f"on-search:{time.time_ns()}", query,
                        time.time() if ts is None else ts)  # fmt: skip
        none = {"outcome": "none", "query": query, "agent": agent}
        pool = candidates_for(search, archived_files(store), self._workspaces())
        if not pool:
            return none
        mover = mover_for(store, self.paths)
        texts = {str(a.move_id): t for a in pool if (t := self._text(mover, a)) is not None}
        # the workspace is read only when an archived note passes the threshold (rarely)
        leaders = top_matches(query, texts)
        if not leaders[0]:
            return none
        srcs = {a.src for a in pool}
        present = {k: v for k, v in self._present_texts(agent).items() if k not in srcs}
        found = best_match(query, texts, present, leaders)
        if found is None:
            # Archived notes the query names as well: none comes back by itself; their paths
            # are the answer (a read of one brings it back).
            tied = tied_matches(query, texts, present, leaders)
            if tied:
                by_id = {str(a.move_id): a for a in pool}
                paths = sorted(self._rel(by_id[k].src) for k in tied)
                return {**none, "outcome": "tied", "paths": paths}
            return none
        chosen = next(a for a in pool if str(a.move_id) == found[0])
        if before_moving is not None:
            before_moving()
        from .log import get_logger

        event = self._restore(store, mover, chosen, search, found[1],
                              get_logger("memoryd.ondemand"))  # fmt: skip
        if event is None:  # said before, or brought back meanwhile by another process
            return {**none, "outcome": "left_alone", "path": self._rel(chosen.src)}
        if event["outcome"] == "restored":
            if answer_by is not None and time.time() > answer_by:
                event["late"] = True  # the agent got the search's own answer, not this note
            else:
                self._count_hit(store, search, event["path"], "search", found[1])
            event["opening"] = opening_of(texts[found[0]].split("\n", 1)[-1])
        return event

    def check(self, store: Store) -> list[dict[str, Any]]:
        """Look at the searches new since the checkpoint; restore what they ask for."""
        from .log import get_logger
        from .mover import mover_for
        from .policy.restore_match import best_match

        checkpoint = _as_time(store.get_meta(CHECKPOINT_META))
        floor = _as_time(store.get_meta(FLOOR_META))
        if checkpoint is None or floor is None:
            # First check on this state (or a damaged value): the history already in the
            # database is not a request, so it never restores anything.
            ignore_until(store, time.time())
            return []
        archived = archived_files(store)
        self._forget_gone(archived)
        if not archived:
            return []
        low = max(checkpoint - SLACK_SECONDS, floor, min(a.archived_at for a in archived))
        named = _history_calls(store)
        if any(ts <= low for ts in named.values()):  # (passed: no longer selected anyway)
            named = {k: ts for k, ts in named.items() if ts > low}
            with store.transaction():
                _keep_history_calls(store, named)
        skip = self._seen.keys() | named.keys()
        searches = [s for s in self._new_searches(store, low) if (s.agent, s.call_id) not in skip]
        reads = [r for r in self._new_reads(store, low) if (r[0].agent, r[0].call_id) not in skip]
        if not searches and not reads:
            return []
        log = get_logger("memoryd.ondemand")
        mover = mover_for(store, self.paths)
        workspaces = self._workspaces()
        events: list[dict[str, Any]] = []
        restored_ids: set[int] = set()
        present_by_agent: dict[str, dict[str, str]] = {}

        def pool_for(call: Search) -> list[Archived]:
            self._seen[(call.agent, call.call_id)] = call.ts
            found = candidates_for(call, archived, workspaces)
            return [a for a in found if a.move_id not in restored_ids]

        for read, got_text in reads:
            pool = pool_for(read)
            # An empty read names the note's own path; a read with text, its archived copy:
            # either way the note goes home.
            asked_in = workspaces.get(read.agent, ())
            chosen = archived_at_path(
                read.query, asked_in, pool, copy=got_text, traits_of=archive_traits(asked_in)
            )
            if chosen is None or os.path.lexists(chosen.src):
                continue  # not a path memoryd archived, or a file has the note's name now
            event = self._restore(store, mover, chosen, read, 1.0, log, trigger=READ_TRIGGER)
            if event is not None:
                events.append(event)
                if event["outcome"] == "restored":
                    restored_ids.add(chosen.move_id)
                    if not got_text:  # (a copy's read was counted, under the note's name)
                        self._count_hit(store, read, event["path"], "get")
        for search in searches:
            pool = pool_for(search)
            texts = {str(a.move_id): t for a in pool if (t := self._text(mover, a)) is not None}
            found = None
            if texts:
                if search.agent not in present_by_agent:
                    present_by_agent[search.agent] = self._present_texts(search.agent)
                # a file back at an archived one's path is that case (a conflict), not a rival
                srcs = {a.src for a in pool}
                present = {k: v for k, v in present_by_agent[search.agent].items()
                           if k not in srcs}  # fmt: skip
                found = best_match(search.query, texts, present)
            if found is None:
                continue
            chosen = next(a for a in pool if str(a.move_id) == found[0])
            event = self._restore(store, mover, chosen, search, found[1], log)
            if event is not None:
                events.append(event)
                if event["outcome"] == "restored":
                    restored_ids.add(chosen.move_id)
        live = {k for p in present_by_agent.values() for k in p}
        if present_by_agent:
            self._present = {k: v for k, v in self._present.items() if k in live}
        # A search stamped in the future (a skewed clock, a damaged line) must not move the
        # checkpoint past the searches still to come.
        newest = min(max(s.ts for s in (*searches, *(r for r, _ in reads))), time.time())
        self._prune_seen(max(checkpoint, newest) - SLACK_SECONDS)
        from .fsutil import NOT_A_NOTE_COUNTER, take_not_notes

        with store.transaction():
            if newest > checkpoint:
                store.set_meta(CHECKPOINT_META, repr(newest))
            store.bump(NOT_A_NOTE_COUNTER, take_not_notes())
        return events

    def _forget_gone(self, archived: list[Archived]) -> None:
        """Drop what is kept about archives no longer there, so the memos of a daemon running
        for months do not grow (a forgotten outcome is still in the recent events)."""
        live = {a.dst for a in archived}
        for dst in [d for d in self._texts if d not in live]:
            del self._texts[dst]
        ids = {a.move_id for a in archived}
        self._reported = {key for key in self._reported if key[0] in ids}

    def sizes(self) -> dict[str, int]:
        """How many entries each of its memos holds (the daemon's footprint log)."""
        return {
            "seen": len(self._seen),
            "texts": len(self._texts),
            "reported": len(self._reported),
            "present": len(self._present),
        }

    def _prune_seen(self, below: float) -> None:
        for key in [k for k, ts in self._seen.items() if ts < below]:
            del self._seen[key]

    def _restore(
        self,
        store: Store,
        mover: Mover,
        a: Archived,
        search: Search,
        score: float,
        log: Any,  # memoryd.log.get_logger's
        trigger: str = "search",
    ) -> dict[str, Any] | None:
        """Restore ``a`` for ``search`` (or a read: ``trigger``), or say why not; None when that
        was said before, or when another process brought the note back meanwhile."""
        from . import faults
        from .move_files import MoveError

        rel, archived_rel = self._rel(a.src), self._rel(a.dst)
        event: dict[str, Any] = {
            "at": time.time(),
            "trigger": trigger,
            "path": rel,
            "archived": archived_rel,
            "query": search.query,
            "score": round(score, 3),
            "agent": search.agent,
            "call_id": search.call_id,
            "search_ts": search.ts,
            "move_id": a.move_id,
        }
        faults.point("ondemand.chosen")
        if not self._live(store, a):
            return None  # brought back meanwhile: memoryd's own file, not a conflict
        left_alone = self._left_alone(a)
        if left_alone is None:
            try:
                undo_id = mover.undo(a.move_id, batch=restore_on_demand_batch(), unchanged=True)
            except (MoveError, OSError) as exc:
                if not self._live(store, a):
                    return None  # a recall or a restore took it back first: it is back
                # A note saved at its name, or the archived copy edited, between the check
                # above and the move: the same cases as before it, not a failure.
                left_alone = self._left_alone(a)
                if left_alone is None:
                    event["outcome"] = "failed"
                    event["error"] = str(exc)
                    self._record(store, event, "restore_on_demand_failures")
                    log.error("restore.on_demand_failed", **event)
                    return event
        if left_alone is not None:
            faults.point("ondemand.left_alone")
            # A file at the note's name may be memoryd's own move still in flight, which holds
            # the journal's lock until journaled: read the row again under that lock.
            with mover.settled():
                if not self._live(store, a):
                    return None  # brought back by that move: not a conflict
            key = (a.move_id, left_alone)
            if key in self._reported or any(
                e.get("move_id") == a.move_id and e.get("outcome") == left_alone
                for e in recent_events(store)
            ):
                self._reported.add(key)
                return None  # reported once already (also before a restart)
            self._reported.add(key)
            event["outcome"] = left_alone
            self._record(store, event, "restore_on_demand_conflicts")
            log.warning("restore.on_demand_conflict", **event, note=outcome_words(left_alone))
            self._notify(event)
            return event
        event["outcome"] = "restored"
        event["undo_id"] = undo_id
        event["latency"] = round(time.time() - search.ts, 3)
        self._record(store, event, "restored_on_demand")
        note = READ_LOG_NOTE if trigger == READ_TRIGGER else SEARCH_LOG_NOTE
        log.info("restore.on_demand", **event, note=note)
        self._notify(event)
        return event

    @staticmethod
    def _live(store: Store, a: Archived) -> bool:
        """Whether ``a``'s journal entry still holds the note in the archive."""
        from .move_journal import superseded_by

        row = store.conn.execute("SELECT state FROM moves WHERE id = ?", (a.move_id,)).fetchone()
        return row is not None and row[0] == "done" and superseded_by(store, a.move_id) is None

    def _left_alone(self, a: Archived) -> str | None:
        """Why ``a`` is not to be moved back: a file at its name, or an edited archived copy."""
        if os.path.lexists(a.src):
            return "conflict"
        if not self._unchanged(a):
            return "changed"
        return None

    @staticmethod
    def _unchanged(a: Archived) -> bool:
        """Whether the archived copy still holds the bytes memoryd archived."""
        from .move_files import MoveError, sha256_file

        try:
            return a.sha256 is not None and sha256_file(a.dst)[0] == a.sha256
        except (OSError, MoveError):
            return False

    @staticmethod
    def _count_hit(
        store: Store, call: Search, rel: str, kind: str, score: float | None = None
    ) -> None:
        """Count once a hit the scanner could not see: a read answered empty whose note came
        back after it (``get``), or a search the plugin answered with the note (``search``)."""
        with store.transaction():
            store.conn.execute(
                "INSERT OR IGNORE INTO hits(agent, call_id, memory_path, kind, ts, query, "
                "score) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (call.agent, call.call_id, rel, kind, call.ts, call.query, score),
            )

    def _record(self, store: Store, event: Mapping[str, Any], counter: str) -> None:
        with store.transaction():
            store.set_meta(RECENT_META, push_recent(store.get_meta(RECENT_META), event))
            store.bump(counter)
            if counter == "restored_on_demand" and event.get("trigger") == READ_TRIGGER:
                store.bump("restored_on_demand_reads")

    def _notify(self, event: Mapping[str, Any]) -> None:
        """Send from a thread of its own: the ingest thread never waits on the network."""
        import threading

        from .notify import notify

        text = notification_text(event)
        threading.Thread(
            target=notify, args=(self.cfg, self.paths, text), name="memoryd-notify", daemon=True
        ).start()
