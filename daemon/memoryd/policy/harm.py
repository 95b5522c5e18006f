"""What an archive cost the agent: of the archived notes later needed, which it still reached.

Every need of an archived note is replayed against the archive as it stood then, and each
such archive sorted into **same call**, **later call** or **not at all** (docs/decisions.md,
"Harm, not only prediction"; ``search_same_call=False`` replays the time before the plugin's
search hook). Where the archive is in OpenClaw's own index, a search whose results held the
note reaches it too (way ``index``); the archives a kept note would have served are counted
apart (``as if kept``): the archive's own cost.

Pure: the two rules that live elsewhere are passed in as functions (``candidates``: the
restore-on-demand matches of a call; ``recall``: which archived notes ``memoryd_recall``
would bring back for a query), so each rule still exists once.
"""

from __future__ import annotations

import bisect
import functools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import NamedTuple, overload

from .candidates import DAY, HORIZON_DAYS
from .replay import Call, PathHits, ReplayHit

READ, SEARCH, OTHER = "read", "search", "other"

# candidates(call index) → (path, score[, names it]) best first, as replay's restore takes
Candidates = Callable[[int], Sequence[tuple[str, float] | tuple[str, float, bool]]]
# recall(query, {archived path: text}) → the archived paths memoryd_recall brings back; when
# it has a method reaches(query, path, text, loader) (tierstore.search.ArchiveRecall), harm
# asks that instead
Recall = Callable[[str, Mapping[str, str]], Iterable[str]]


class NeedEvent(NamedTuple):
    """One moment the agent needed a note, and how it went for it: ``read`` (a
    ``memory_get`` of its path), ``search`` (``call``: the index of the search in the
    replay's calls) or ``other`` (no call of the agent's for it is known). A tuple: one is
    made per need at every ``simulate``."""

    path: str
    ts: float
    via: str
    call: int | None = None
    # whether OpenClaw's own search found the note for this need (a read always does); on
    # an install every need is such a hit, a generated need may be a search that missed it
    found: bool = True


@dataclass
class Harm:
    """One policy's archives that were needed within the horizon, by what the agent reached."""

    needed: int = 0
    same_call: int = 0
    later_call: int = 0
    not_reached: int = 0
    # how each reached archive was reached: (same | later, read | search | recall)
    ways: Counter[tuple[str, str]] = field(default_factory=Counter)
    # how the first need of each archive asked for it (read, search, other)
    first_asked: Counter[str] = field(default_factory=Counter)
    # The archives a kept note would have served, apart (a need OpenClaw's search missed is
    # not the archive's cost): those whose first need found it, with how each was reached;
    # those some need in the window found it for, with how many were not reached at all.
    kept_first: int = 0
    kept_ways: Counter[tuple[str, str]] = field(default_factory=Counter)
    kept_any: int = 0
    kept_not_reached: int = 0

    @property
    def same_call_rate(self) -> float:
        return self.same_call / self.needed if self.needed else 0.0

    @property
    def not_reached_rate(self) -> float:
        return self.not_reached / self.needed if self.needed else 0.0

    @property
    def same_call_as_kept_rate(self) -> float:
        """Of the archives whose first need would have found the note kept, the share the
        agent reached in that same call."""
        same = sum(n for (when, _how), n in self.kept_ways.items() if when == "same")
        return same / self.kept_first if self.kept_first else 0.0

    @property
    def not_reached_as_kept_rate(self) -> float:
        """Of the archives some need would have found the note kept for, the share the agent
        did not reach at all."""
        return self.kept_not_reached / self.kept_any if self.kept_any else 0.0

    def without_plugin(self) -> Harm:
        """The same archives for an agent without the plugin: the daemon brings the note back
        for the next call (a search of an index holding the archive still finds it)."""
        ways, moved = _later_without_plugin(self.ways)
        kept_ways, _ = _later_without_plugin(self.kept_ways)
        return Harm(self.needed, self.same_call - moved, self.later_call + moved,
                    self.not_reached, ways, Counter(self.first_asked), self.kept_first,
                    kept_ways, self.kept_any, self.kept_not_reached)  # fmt: skip

    def document(self) -> dict[str, object]:
        """The JSON entry (``simulate --json``'s ``harm``)."""
        return {
            "needed": self.needed,
            "same_call": self.same_call,
            "later_call": self.later_call,
            "not_reached": self.not_reached,
            "same_call_rate": round(self.same_call_rate, 4),
            "not_reached_rate": round(self.not_reached_rate, 4),
            "ways": {f"{when} {how}": n for (when, how), n in sorted(self.ways.items())},
            "first_asked": dict(sorted(self.first_asked.items())),
            "as_if_kept": {
                "first_need_found": self.kept_first,
                "same_call_rate": round(self.same_call_as_kept_rate, 4),
                "some_need_found": self.kept_any,
                "not_reached": self.kept_not_reached,
                "not_reached_rate": round(self.not_reached_as_kept_rate, 4),
            },
        }


def _later_without_plugin(ways: Counter[tuple[str, str]]) -> tuple[Counter[tuple[str, str]], int]:
    """``ways`` with the same-call reads and searches (the plugin's hooks) moved to a later
    call, and how many moved."""
    out, moved = Counter(ways), 0
    for how in (READ, SEARCH):
        n = out.pop(("same", how), 0)
        if n:
            out[("later", how)] += n
            moved += n
    return out, moved


_TS = attrgetter("ts")


@dataclass(frozen=True)
class HarmIndex:
    """What :func:`harm` looks up in, the same for every policy of a replay (built once by
    :func:`harm_index`): each note's hit times, and its need events with their times, in
    order of time."""

    hit_times: Mapping[str, Sequence[float]]
    events: Mapping[str, Sequence[NeedEvent]]
    event_times: Mapping[str, Sequence[float]]


def harm_index(hits: Iterable[ReplayHit], events: Iterable[NeedEvent]) -> HarmIndex:
    """The :class:`HarmIndex` of a replay's hits and need events. Pure."""
    times: dict[str, list[float]] = {}
    for h in hits:
        times.setdefault(h.path, []).append(h.ts)
    for ts in times.values():
        ts.sort()
    by_path: dict[str, list[NeedEvent]] = {}
    for e in events:
        by_path.setdefault(e.path, []).append(e)
    for lst in by_path.values():
        lst.sort(key=_TS)
    event_times = {path: [e.ts for e in lst] for path, lst in by_path.items()}
    return HarmIndex(times, by_path, event_times)


def need_index(prepared: Mapping[str, PathHits], calls: Sequence[Call]) -> HarmIndex:
    """:func:`harm_index` of a real install's need events (each strong hit: a read, or the
    search by the call recorded at its time, else ``other``), from the replay's
    :func:`memoryd.policy.replay.prepare`; made one by one as :func:`harm` reads them. Pure."""
    at: dict[float, int] = {}
    for i, c in enumerate(calls):
        at.setdefault(c.ts, i)
    times = {path: ph.ts for path, ph in prepared.items()}
    events = {path: _NeedEvents(ph.strong_hits, at) for path, ph in prepared.items() if ph.strong}
    event_times = {path: ph.strong for path, ph in prepared.items() if ph.strong}
    return HarmIndex(times, events, event_times)


class _NeedEvents(Sequence[NeedEvent]):
    """A note's need events (a strong hit's, the search by the call recorded at its time),
    each made when asked for."""

    def __init__(self, hits: Sequence[ReplayHit], at: Mapping[float, int]) -> None:
        self.hits, self.at = hits, at

    def __len__(self) -> int:
        return len(self.hits)

    @overload
    def __getitem__(self, k: int) -> NeedEvent: ...
    @overload
    def __getitem__(self, k: slice) -> list[NeedEvent]: ...
    def __getitem__(self, k: int | slice) -> NeedEvent | list[NeedEvent]:
        if isinstance(k, slice):
            return [self._event(h) for h in self.hits[k]]
        return self._event(self.hits[k])

    def _event(self, h: ReplayHit) -> NeedEvent:
        if h.kind == "get":
            return NeedEvent(h.path, h.ts, READ)
        call = self.at.get(h.ts)
        return NeedEvent(h.path, h.ts, SEARCH, call) if call is not None else NeedEvent(
            h.path, h.ts, OTHER)  # fmt: skip


class _Archive:
    """Which notes were archived at a moment: the replay's episodes (archived at a run,
    back at its first hit after that), as the replay's own state follows them."""

    def __init__(self, decisions: Sequence[tuple[float, Sequence[str]]],
                 hits: Iterable[ReplayHit] | Mapping[str, Sequence[float]]):  # fmt: skip
        """``hits``: the replay's hits, or each note's sorted hit times (HarmIndex)."""
        times = hits if isinstance(hits, Mapping) else harm_index(hits, ()).hit_times
        self.episodes: list[tuple[str, float, float]] = []
        for t, chosen in decisions:
            for path in chosen:
                ts = times.get(path, [])
                i = bisect.bisect_right(ts, t)
                self.episodes.append((path, t, ts[i] if i < len(ts) else math.inf))
        self.by_path: dict[str, list[tuple[float, float]]] = {}
        for path, left, back in self.episodes:
            self.by_path.setdefault(path, []).append((left, back))
        # for all_at: the episodes by the moment they began, each moment's from the latest end
        # back, so those still open at ts are a prefix
        begun: dict[float, list[tuple[float, str]]] = {}
        for path, left, back in self.episodes:
            begun.setdefault(left, []).append((-back, path))
        self._lefts = sorted(begun)
        self._open: list[tuple[list[float], list[str]]] = []
        for left in self._lefts:
            ends = sorted(begun[left])
            self._open.append(([e for e, _p in ends], [p for _e, p in ends]))
        self._at: dict[float, list[str]] = {}  # (the results of a search at ts share one)

    def archived_at(self, path: str, ts: float) -> bool:
        return any(left < ts <= back for left, back in self.by_path.get(path, ()))

    def all_at(self, ts: float) -> list[str]:
        """Every note archived at ``ts`` (an episode with left < ts <= back), sorted (a list
        the caller must not change: the next question at ``ts`` gets it again)."""
        got = self._at.get(ts)
        if got is None:
            held: set[str] = set()
            for ends, paths in self._open[: bisect.bisect_left(self._lefts, ts)]:
                held.update(paths[: bisect.bisect_right(ends, -ts)])  # (back >= ts)
            got = self._at[ts] = sorted(held)
        return got


def _search_restores(
    cands: Sequence[tuple[str, float] | tuple[str, float, bool]],
    archive: _Archive,
    ts: float,
    still: str,
) -> str | None:
    """The note restore on demand brings back for a search at ``ts`` (the daemon's rule, as
    :func:`memoryd.policy.replay.replay` replays it). ``still``: a note not reached yet,
    archived whatever later hits the replay saw of it. Only the best match can be restored
    (``cands`` best first); a second that scores as well is a tie, which restores nothing."""
    if not cands or (len(cands) > 1 and cands[1][1] >= cands[0][1]):
        return None
    path, _score, *named = cands[0]
    if path != still and not archive.archived_at(path, ts):
        return None
    return None if named == [False] else str(path)


def _pool_at(archive: _Archive, texts: Mapping[str, str], pools: dict[float, dict[str, str]],
             ts: float, path: str) -> Mapping[str, str]:  # fmt: skip
    """The texts of the notes archived at ``ts`` with ``path``'s (those ``texts`` has), the
    archive's part once a moment (``pools``)."""
    pool = pools.get(ts)
    if pool is None:
        pool = pools[ts] = {p: texts[p] for p in archive.all_at(ts) if p in texts}
    if path not in pool and path in texts:
        pool = {**pool, path: texts[path]}
    return pool


def harm(
    decisions: Sequence[tuple[float, Sequence[str]]],
    hits: Sequence[ReplayHit],
    events: Sequence[NeedEvent],
    calls: Sequence[Call],
    *,
    candidates: Candidates | None = None,
    recall: Recall | None = None,
    texts: Mapping[str, str] | None = None,
    horizon_days: float = HORIZON_DAYS,
    search_same_call: bool = True,
    index: HarmIndex | None = None,
    archive_indexed: bool = False,
) -> Harm:
    """Sort one policy's needed archives by what the agent reached (module docstring).

    An archive at run ``t`` is *needed* when a need event of its note falls in
    ``(t, t + horizon]``; those needs are tried in order, and the first that reaches the note
    decides (``same``: the first need in its own call, else ``later``). ``index``:
    :func:`harm_index` of ``hits`` and ``events``, if at hand. ``archive_indexed``: the
    archive is in OpenClaw's own index, so a search that found the note reaches it.
    """
    horizon = horizon_days * DAY
    if index is None:
        index = harm_index(hits, events)
    archive = _Archive(decisions, index.hit_times)
    by_path, times_of = index.events, index.event_times
    recalled: dict[tuple[str, float, str], set[str]] = {}
    pools: dict[float, dict[str, str]] = {}
    reaches = getattr(recall, "reaches", None)
    out = Harm()
    for path, left, _back in archive.episodes:
        evs = by_path.get(path, [])
        times = times_of.get(path, [])
        lo, hi = bisect.bisect_right(times, left), bisect.bisect_right(times, left + horizon)
        if lo >= hi:
            continue
        out.needed += 1
        first_need = evs[lo]
        out.first_asked[first_need.via] += 1
        kept_first = kept_any = first_need.found
        reached: tuple[str, str] | None = None
        k = lo
        for k in range(lo, hi):  # (its needs in the window, in order, until one reaches it)
            e = evs[k]
            kept_any = kept_any or e.found
            first = k == lo
            if e.via == READ:
                reached = ("same" if first else "later", READ)
                break
            if e.via != SEARCH or e.call is None:
                continue
            if archive_indexed and e.found:
                reached = ("same" if first else "later", "index")
                break
            cands = candidates(e.call) if candidates is not None else ()
            if _search_restores(cands, archive, e.ts, path) == path:
                reached = ("same" if first and search_same_call else "later", SEARCH)
                break
            if recall is not None and texts is not None:
                key = (calls[e.call].query, e.ts, path)
                if key not in recalled:
                    pool = functools.partial(_pool_at, archive, texts, pools, e.ts, path)
                    query = calls[e.call].query
                    if reaches is not None:  # (the same answer, sooner)
                        text = texts.get(path)
                        got = text is not None and reaches(query, path, text, pool)
                        recalled[key] = {path} if got else set()
                    else:
                        recalled[key] = set(recall(query, pool()))
                if path in recalled[key]:
                    reached = ("later", "recall")
                    break
        if not kept_any:  # (the loop stopped early: the needs after the one that reached it)
            kept_any = any(evs[j].found for j in range(k + 1, hi))
        out.kept_first += kept_first
        out.kept_any += kept_any
        if reached is None:
            out.not_reached += 1
            out.kept_not_reached += kept_any
            continue
        out.ways[reached] += 1
        if kept_first:
            out.kept_ways[reached] += 1
        if reached[0] == "same":
            out.same_call += 1
        else:
            out.later_call += 1
    return out
