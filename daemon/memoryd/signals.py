"""Per-file signals: what the hit history says about each memory file.

Pure functions over plain values (the file list, the hits, ``now``), and :class:`Snapshot`,
the one read of the workspace and the database that feeds them. Every decision in
``memoryd.policy`` reads these numbers and ``memoryd explain`` prints them, so a verdict can
be traced back to counts a person can check. The definitions (kind, created, windows,
activation, trend) are docs/lifecycle.md's ("Signals"). A hit up to ``CLOCK_SKEW`` after
``now`` counts as now, a later one not at all: the rule lives in
:func:`memoryd.hit_counts.hit_counts`, and :func:`count_hits` is its twin over times in memory.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, tzinfo
from functools import cached_property
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from .config import Config, Paths, schedule_timezone
from .files_seen import first_seen_of
from .fsutil import read_note
from .hit_counts import CLOCK_SKEW, HitTally, hit_counts, hits_since
from .kept_strength import strengths_kept
from .pathmatch import attributed_tallies, attribution_for, canonical_rows, merged_hits
from .store import Store
from .strength import (
    HitRow,
    file_summary,
    hit_strengths,
    load_hit_rows,
    load_strong_times,
    rows_of_files,
    strength_summary,
)
from .workspace import (
    LONG_TERM_NAMES,
    MemoryFile,
    archive_excludes,
    list_memory_files,
    report_skipped_names,
)

DAY = 86400.0
HOUR_IN_DAYS = 1.0 / 24.0
ACTR_DECAY = 0.5
FAST_TAU_DAYS = 3.0
SLOW_TAU_DAYS = 21.0
RISING_RATIO = 1.5
COOLING_RATIO = 0.5
DORMANT_DAYS = 14.0
SPARK_DAYS = 30

_TS = itemgetter(0)  # a Hit's time

KIND_LONG_TERM, KIND_DAILY, KIND_TOPIC = "long-term", "daily", "topic"
_DATE_NAME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?:$|[^0-9])")


class Hit(NamedTuple):
    """One hit as the signals need it (a row of ``hits``, trimmed). A named tuple: ``reflect``
    makes one per hit of the history, and a tuple is made in C."""

    ts: float
    query: str | None = None
    call_id: str = ""
    agent: str = ""


@dataclass(frozen=True)
class HitCounts:
    """Hits of one file in the fixed windows, as one SQL aggregate gives them."""

    total: int = 0
    d7: int = 0
    d14: int = 0
    d30: int = 0
    last: float | None = None
    extra: Mapping[float, int] = field(default_factory=dict)  # other windows (days → hits)


@dataclass(frozen=True)
class FileSignals:
    """Everything measured about one memory file at ``now``.

    Counts are plain fields (an expire plan needs nothing else). The measures over every
    hit are computed on first use from ``source``, which may be a loader, so ``memoryd
    expire`` never reads hit rows it does not need.
    """

    path: str
    kind: str
    size: int
    mtime: float
    created: float
    created_from: str  # "name" | "mtime"
    now: float
    counts: HitCounts
    source: Sequence[Hit] | Callable[[], Sequence[Hit]] = field(
        default=(), repr=False, compare=False
    )
    tz: tzinfo = field(default=UTC, repr=False, compare=False)
    # The hit times alone, sorted and dated as :attr:`hit_times` has them (from
    # :meth:`Snapshot.kept_times`); None (or a loader giving None): take them from ``source``.
    times: Callable[[], Sequence[float] | None] | None = field(
        default=None, repr=False, compare=False
    )

    # -- counts
    @property
    def hits_7d(self) -> int:
        return self.counts.d7

    @property
    def hits_14d(self) -> int:
        return self.counts.d14

    @property
    def hits_30d(self) -> int:
        return self.counts.d30

    @property
    def hits_total(self) -> int:
        return self.counts.total

    @property
    def last_hit(self) -> float | None:
        return self.counts.last

    @property
    def age_days(self) -> float:
        return (self.now - self.created) / DAY

    @property
    def days_since_hit(self) -> float | None:
        return None if self.last_hit is None else (self.now - self.last_hit) / DAY

    def hits_within(self, days: float) -> int:
        """Hits in the last ``days`` days (``now - days <= ts <= now``)."""
        known = {7: self.counts.d7, 14: self.counts.d14, 30: self.counts.d30, **self.counts.extra}
        if days in known:
            return known[days]
        return len(self.hit_times) - bisect.bisect_left(self.hit_times, self.now - days * DAY)

    # -- measures over every hit, computed on first use
    @cached_property
    def hits(self) -> tuple[Hit, ...]:
        src = self.source() if callable(self.source) else self.source
        now, horizon = self.now, self.now + CLOCK_SKEW
        if not src or max(map(_TS, src)) <= now:  # (load_hits dated them: a pass in C)
            return tuple(src)
        return tuple(
            h if h.ts <= now else Hit(now, h.query, h.call_id, h.agent)
            for h in src
            if h.ts <= horizon
        )

    @cached_property
    def hit_times(self) -> tuple[float, ...]:
        given = None if self.times is None else self.times()
        if given is not None:
            return tuple(given)
        return tuple(sorted(map(_TS, self.hits)))

    @cached_property
    def activation(self) -> float | None:
        return activation(self.hit_times, self.now)

    @cached_property
    def _rates(self) -> tuple[float, float]:
        return rates(self.hit_times, self.now)

    @property
    def fast_rate(self) -> float:
        return self._rates[0]

    @property
    def slow_rate(self) -> float:
        return self._rates[1]

    @property
    def trend(self) -> str:
        since = self.days_since_hit  # (a dormant file's label needs no rate)
        if since is None or since > DORMANT_DAYS:
            return "dormant"
        return trend_label(self.fast_rate, self.slow_rate, since)

    @cached_property
    def _days(self) -> tuple[tuple[int, ...], int]:
        today = _day_index(self.now, self.tz)
        daily = [0] * SPARK_DAYS
        days: set[date] = set()
        for ts in self.hit_times:
            d = _day_index(ts, self.tz)
            days.add(d)
            back = (today - d).days
            if 0 <= back < SPARK_DAYS:
                daily[SPARK_DAYS - 1 - back] += 1
        return tuple(daily), len(days)

    @property
    def daily(self) -> tuple[int, ...]:
        """Hits per calendar day over the last SPARK_DAYS days, oldest first."""
        return self._days[0]

    @property
    def distinct_days(self) -> int:
        return self._days[1]

    @cached_property
    def queries(self) -> tuple[tuple[str, int], ...]:
        """(query, times asked), most asked first; trimmed and case-folded."""
        counts: dict[str, int] = {}
        for h in self.hits:
            q = (h.query or "").strip()
            if q:
                key = q.casefold()
                counts[key] = counts.get(key, 0) + 1
        return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def distinct_queries(self) -> int:
        return len(self.queries)


def file_kind(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1]
    if rel in LONG_TERM_NAMES:
        return KIND_LONG_TERM
    return KIND_DAILY if name_date(name) is not None else KIND_TOPIC


def name_date(name: str) -> date | None:
    """The valid ``YYYY-MM-DD`` a file name starts with, if any."""
    m = _DATE_NAME.match(name)
    if not m:
        return None
    try:
        return date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return None


def created_time(rel: str, mtime: float, tz: tzinfo = UTC) -> tuple[float, str]:
    """(epoch, "name" | "mtime"): the date in the file name, else its mtime."""
    d = None if rel in LONG_TERM_NAMES else name_date(rel.rsplit("/", 1)[-1])
    if d is None:
        return mtime, "mtime"
    return datetime.combine(d, time(0), tz).timestamp(), "name"


def activation(hit_times: Iterable[float], now: float) -> float | None:
    """ACT-R base-level activation ``ln Σ t^-0.5`` (t in days, at least an hour)."""
    total = 0.0
    for ts in hit_times:
        t = max((now - ts) / DAY, HOUR_IN_DAYS)
        total += t**-ACTR_DECAY
    return math.log(total) if total > 0 else None


def rates(hit_times: Iterable[float], now: float) -> tuple[float, float]:
    """(fast, slow) exponentially weighted hit rates in hits per day, each summed in the order
    of ``hit_times`` (``reduce`` over ``add``, not ``sum``, which may compensate)."""
    exp = math.exp
    ages = [max(now - ts, 0.0) / DAY for ts in hit_times]
    fast = functools.reduce(operator.add, map(exp, [-age / FAST_TAU_DAYS for age in ages]), 0.0)
    slow = functools.reduce(operator.add, map(exp, [-age / SLOW_TAU_DAYS for age in ages]), 0.0)
    return fast / FAST_TAU_DAYS, slow / SLOW_TAU_DAYS


def trend_label(fast: float, slow: float, days_since_hit: float | None) -> str:
    if days_since_hit is None or days_since_hit > DORMANT_DAYS or slow <= 0:
        return "dormant"
    if fast >= RISING_RATIO * slow:
        return "rising"
    if fast <= COOLING_RATIO * slow:
        return "cooling"
    return "steady"


def _day_index(ts: float, tz: tzinfo) -> date:
    return datetime.fromtimestamp(ts, tz).date()


def count_hits(
    times: Sequence[float], now: float, extra: Iterable[float] = (), *, skew: float = CLOCK_SKEW
) -> HitCounts:
    """The windowed counts of sorted hit times, as :func:`memoryd.hit_counts.hit_counts` counts
    rows: a hit up to ``skew`` after ``now`` counts as at ``now``, a later one not at all."""
    kept = [min(t, now) for t in times[: bisect.bisect_right(times, now + skew)]]
    n = len(kept)

    def within(d: float) -> int:
        return n - bisect.bisect_left(kept, now - d * DAY)

    return HitCounts(
        total=n,
        d7=within(7),
        d14=within(14),
        d30=within(30),
        last=kept[-1] if kept else None,
        extra={d: within(d) for d in extra},
    )


def file_signals(
    f: MemoryFile,
    hits: Sequence[Hit],
    now: float,
    tz: tzinfo = UTC,
    *,
    counts: HitCounts | None = None,
    loader: Callable[[], Sequence[Hit]] | None = None,
    times: Callable[[], Sequence[float] | None] | None = None,
) -> FileSignals:
    """The signals of one file from its hits (any order; hits after ``now`` ignored).
    ``counts`` and ``loader`` let a caller supply counts from SQL and defer reading the hits;
    ``times``: :attr:`FileSignals.times`."""
    created, created_from = created_time(f.rel, f.mtime, tz)
    if counts is None:
        counts = count_hits(sorted(h.ts for h in hits), now)
    return FileSignals(
        path=f.rel,
        kind=file_kind(f.rel),
        size=f.size,
        mtime=f.mtime,
        created=created,
        created_from=created_from,
        now=now,
        counts=counts,
        source=loader if loader is not None else tuple(hits),
        tz=tz,
        times=times,
    )


# The windows every file's count has, in days (HitCounts.d7, d14, d30).
COUNT_DAYS = (7, 14, 30)


def count_windows(extra: Iterable[float] = ()) -> tuple[float, ...]:
    """The windows to count hits in: :data:`COUNT_DAYS`, then ``extra``'s others, sorted."""
    return (*COUNT_DAYS, *sorted(set(extra) - set(COUNT_DAYS)))


def counts_from(tallies: Mapping[str, HitTally], windows: Sequence[float]) -> dict[str, HitCounts]:
    """memory_path → windowed counts from :func:`memoryd.hit_counts.hit_counts`'s tallies over
    ``windows`` (from :func:`count_windows`)."""
    extra = windows[len(COUNT_DAYS) :]
    out = {}
    for path, tally in tallies.items():
        d7, d14, d30, *more = tally.within
        out[path] = HitCounts(  # (total: None only when hit_counts was told not to count it)
            tally.total or 0, d7, d14, d30, tally.last, dict(zip(extra, more, strict=True))
        )
    return out


def load_hits(
    conn: object,
    now: float,
    *,
    since: float | None = None,
    paths: Iterable[str] | None = None,
    agents: Iterable[str] | None = None,
) -> dict[str, list[Hit]]:
    """memory_path → hits (ts <= now, and >= since when given) from the state database.

    One query; ``paths`` are filtered in SQL when few, else in Python (cheaper than a huge IN
    list). Times are capped at now by min() in SQL; each Hit is made by tuple.__new__.
    """
    sql = "SELECT memory_path, min(ts, ?), query, call_id, agent FROM hits WHERE ts <= ?"
    args: list[object] = [now, now + CLOCK_SKEW]
    if since is not None:
        sql += " AND ts >= ?"
        args.append(since)
    wanted = set(paths) if paths is not None else None
    if wanted is not None and len(wanted) <= 50:
        sql += f" AND memory_path IN ({','.join('?' * len(wanted))})"
        args.extend(sorted(wanted))
    if agents is not None:
        ids = sorted(set(agents))
        sql += f" AND agent IN ({','.join('?' * len(ids))})"
        args.extend(ids)
    out: dict[str, list[Hit]] = {}
    make = tuple.__new__
    for row in conn.execute(sql, args):  # type: ignore[attr-defined]
        path = row[0]
        if wanted is not None and path not in wanted:
            continue
        lst = out.get(path)
        if lst is None:
            lst = out[path] = []
        lst.append(make(Hit, row[1:]))
    return out


# Above this share of the rows in the window, one pass over the calls' key beats a sort.
RECENT_BY_TS_MAX = 0.1


def recent_queries(
    conn: Any, now: float, days: float, agents: Iterable[str] | None = None
) -> list[str]:
    """Queries asked in the last ``days`` days before ``now`` (skew allowed), each call once,
    most asked first (ties by text), trimmed.

    One SQL aggregate (a call's query is that of its first row that has one). Calls are
    grouped in the order of the unique key when the window holds more than
    :data:`RECENT_BY_TS_MAX` of the rows, else found by ``hits_by_ts`` and sorted: the same
    counts either way.
    """
    since, upper = now - days * DAY, now + CLOCK_SKEW
    if since > now:
        return []  # (a hit counts at ``now`` at the latest: none is that recent)
    in_window = hits_since(conn, since, upper)
    if not in_window:
        return []
    (highest,) = conn.execute("SELECT MAX(id) FROM hits").fetchone()  # ~ the rows, at once
    ts = "+ts" if in_window > RECENT_BY_TS_MAX * (highest or 0) else "ts"  # '+': no index
    sql = (
        f"SELECT query, MIN(id) FROM hits WHERE {ts} >= ? AND {ts} <= ? "
        "AND query IS NOT NULL AND query <> ''"
    )
    args: list[object] = [since, upper]
    if agents is not None:
        ids = sorted(set(agents))
        sql += f" AND agent IN ({','.join('?' * len(ids))})"
        args.extend(ids)
    sql = f"SELECT query, COUNT(*) FROM ({sql} GROUP BY agent, call_id) GROUP BY query"
    counts: dict[str, int] = {}
    for query, n in conn.execute(sql, args):
        key = query.strip()
        counts[key] = counts.get(key, 0) + n
    return [q for q, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


# (path → sorted hit times, path → sorted strong hit times): Snapshot.kept_times
KeptTimes = tuple[dict[str, list[float]], dict[str, list[float]]]


def sorted_times_of_strong(rows: Iterable[tuple[str, float, Any]]) -> KeptTimes:
    """:func:`times_of_strong`'s two maps, each sorted. Pure."""
    times, strong = times_of_strong(rows)
    for lst in times.values():
        lst.sort()
    for lst in strong.values():
        lst.sort()
    return times, strong


def times_of_strong(rows: Iterable[tuple[str, float, Any]]) -> KeptTimes:
    """(path → its times, path → its strong times), unsorted, from (path, time, strong) rows
    as :func:`memoryd.strength.load_strong_times` reads them. Pure."""
    times: dict[str, list[float]] = {}
    strong: dict[str, list[float]] = {}
    for path, ts, is_strong in rows:
        times.setdefault(path, []).append(ts)
        if is_strong:
            strong.setdefault(path, []).append(ts)
    return times, strong


def sparkline(counts: Sequence[int]) -> str:
    """Unicode block sparkline (▁…█), one character per count; zero is the lowest block."""
    blocks = "▁▂▃▄▅▆▇█"
    top = max(counts, default=0)
    if top <= 0:
        return blocks[0] * len(counts)
    return "".join(blocks[min(7, math.ceil(c / top * 7))] if c else blocks[0] for c in counts)


# --------------------------------------------------------------------------- the edge
# Everything above is pure. What follows reads the workspace and the database once
# and hands plain values to the policies: the one place lifecycle jobs do input.


def read_text(workspace: Path, rel: str, limit: int = 1 << 20) -> str:
    """A memory file's text (first ``limit`` bytes) by :func:`memoryd.fsutil.read_note`;
    "" if it is no note."""
    got = read_note(workspace / rel, limit)
    return "" if got is None else got[0].decode("utf-8", errors="replace")


class Snapshot:
    """The workspace, its hits and the user's marks, read once at ``now``. The hit rows are
    read (once, for every file) only when a measure needs them."""

    def __init__(self, cfg: Config, paths: Paths, store: Store, now: float) -> None:
        self.now = now
        self.tz = schedule_timezone(cfg)
        self.workspace = paths.workspace
        self._conn = store.conn
        ws = paths.workspace
        # Names that are not UTF-8 are left out (one warning), never a crash.
        self.skipped_names: list[str] = []
        self.files = list_memory_files(
            ws, archive_excludes(ws, cfg.archive.dir), self.skipped_names
        )
        report_skipped_names(self.skipped_names)
        self.agents = paths.agents_counted(ws)
        windows = count_windows((cfg.expire.window_days, cfg.score.recent_access_days))
        tallies = hit_counts(store.conn, now, windows, self.agents)
        marked, promoted = store.marks("marked"), store.marks("promoted")
        # A hit recorded under another spelling of a listed file (memory/Projects.md for
        # memory/projects.md on a Mac) counts for that file, and a mark given so protects
        # it (``memoryd mark memory/Projects.md`` opens that file there): docs/paths.md.
        self.attribution = attribution_for(
            ws, [f.rel for f in self.files], [*tallies, *marked, *promoted]
        )
        tallies = attributed_tallies(
            store.conn, tallies, self.attribution, now, windows, self.agents, skew=CLOCK_SKEW
        )
        counts = counts_from(tallies, windows)
        empty = HitCounts()
        self.signals = [
            file_signals(
                f,
                (),
                now,
                self.tz,
                counts=counts.get(f.rel, empty),
                loader=functools.partial(self._hits_of, f.rel),
                times=functools.partial(self._times_of, f.rel),
            )
            for f in self.files
        ]
        self.signals = with_first_seen(self.signals, *first_seen_of(store), now)
        owner = self.attribution.owner
        self.marked = {owner.get(p, p) for p in marked}
        # Why a mark not given by `memoryd mark` was set: promote names it.
        self.mark_notes = {owner.get(p, p): n for p, n in store.mark_notes("marked").items()}
        self.pins = tuple(sorted(store.marks("pinned")))
        self.promoted = {owner.get(p, p) for p in promoted}
        self._hits: dict[str, list[Hit]] | None = None
        self._texts: dict[str, str] = {}
        self._recent_queries: dict[float, list[str]] = {}
        self._rows: dict[tuple[str, ...] | None, list[Any]] = {}
        self._kept: KeptTimes | bool | None = False  # (False: not read yet)

    def listed_as(self, rel: str) -> str:
        """The listed file a path someone typed names on this file system (``rel`` itself
        when it is listed, or names none)."""
        listed = [f.rel for f in self.files]
        if rel in listed:
            return rel
        return attribution_for(self.workspace, listed, [rel]).owner.get(rel, rel)

    @property
    def hits(self) -> dict[str, list[Hit]]:
        """memory_path → hits (at or before ``now``), read on first use; a listed file's
        hits recorded under another spelling are its own (one per call)."""
        if self._hits is None:
            self._hits = merged_hits(
                load_hits(self._conn, self.now, agents=self.agents), self.attribution.owner
            )
        return self._hits

    def _hits_of(self, rel: str) -> list[Hit]:
        return self.hits.get(rel, [])

    def kept_times(self) -> KeptTimes | None:
        """(path → sorted hit times, path → sorted strong hit times) from :meth:`strong_times`,
        read once a snapshot, with no :class:`Hit` a row; None when that cannot say it."""
        if self._kept is False:
            rows = self.strong_times()
            self._kept = None if rows is None else sorted_times_of_strong(rows)
        assert self._kept is not True
        return self._kept

    def _times_of(self, rel: str) -> list[float] | None:
        """A listed file's hit times from :meth:`kept_times` (None: from its hits) unless
        every file's hits are read already."""
        if self._hits is not None:
            return None
        kept = self.kept_times()
        return None if kept is None else kept[0].get(rel, [])

    def times_by_path(self) -> Mapping[str, Sequence[float]]:
        """path → the sorted times of its hits (dated as :attr:`hits` dates them), for every
        path with hits, listed or not (the reflect page's heatmap)."""
        kept = self.kept_times() if self._hits is None else None
        if kept is not None:
            return kept[0]
        return {path: sorted(map(_TS, lst)) for path, lst in self.hits.items()}

    def hits_since(self, since: float) -> dict[str, list[Hit]]:
        """path → its hits dated ``since`` or later (``since`` before ``now``), as
        :attr:`hits` has them: read alone (the last days' rows, not the table) unless they
        are read already or a path is named under another spelling (merged first)."""
        if self._hits is not None or self.attribution.owner:
            return {
                path: got
                for path, lst in self.hits.items()
                if (got := [h for h in lst if h.ts >= since])
            }
        return load_hits(self._conn, self.now, since=since, agents=self.agents)

    def hit_rows(self, paths: Iterable[str] | None = None, *, raw: bool = True) -> list[HitRow]:
        """Every hit row with what strength needs, each under the listed file it names;
        ``paths``: only those files' rows and their calls' (read as such from the database)."""
        recorded = None
        if paths is not None:
            paths = list(paths)
            recorded = [p for rel in paths for p in self.attribution.spellings(rel)]
        # read once a snapshot: explain asks for one file's rows twice
        key = None if paths is None else tuple(paths)
        rows = self._rows.get(key)
        if rows is None:
            rows = canonical_rows(
                load_hit_rows(self._conn, recorded, agents=self.agents, raw=True),
                self.attribution.owner,
            )
            # Every row of each call is there, so renaming and keeping one row per call
            # and file gives these calls' rows as the whole table would.
            rows = self._rows[key] = rows if paths is None else rows_of_files(rows, paths)
        return list(rows) if raw else [HitRow._make(r) for r in rows]

    def strong_times(
        self, paths: Iterable[str] | None = None
    ) -> list[tuple[str, float, int | None]] | None:
        """(path, time, strong as known at now + CLOCK_SKEW) of every hit dated by then, from
        the strength kept with each hit; ``paths``: those files' only. None when that cannot
        say what :meth:`hit_rows` would: a file named under another spelling (merging can
        change strength) or strength not kept (:func:`memoryd.kept_strength.strengths_kept`)."""
        if self.attribution.owner or not strengths_kept(self._conn):
            return None
        horizon = self.now + CLOCK_SKEW
        return load_strong_times(self._conn, self.now, horizon, paths, agents=self.agents)

    def strength_summary(self, rel: str) -> dict[str, int]:
        """One listed file's hits by strength (:func:`memoryd.strength.strength_summary`), from
        the kept strength when it can say it (as :meth:`strong_times`), else from the rows."""
        if not self.attribution.owner and strengths_kept(self._conn):
            kept = file_summary(self._conn, rel, self.agents)
            if kept is not None:
                return kept
        rows = self.hit_rows([rel], raw=False)
        return strength_summary(rows, hit_strengths(rows), rel)

    def hits_of(self, rel: str) -> list[Hit]:
        """One listed file's hits (as :attr:`hits` has them), read alone unless every
        file's hits are read already."""
        if self._hits is not None:
            return self._hits.get(rel, [])
        spellings = self.attribution.spellings(rel)
        found = load_hits(self._conn, self.now, paths=spellings, agents=self.agents)
        return merged_hits(found, {p: rel for p in spellings[1:]}).get(rel, [])

    def signals_of(self, rel: str) -> FileSignals | None:
        """A listed file's signals whose measures over every hit read that file's hits alone
        (``explain``); None when ``rel`` is not a listed memory file."""
        sig = self.by_path.get(rel)
        if sig is None:
            return None
        return dataclasses.replace(sig, source=functools.partial(self.hits_of, rel), times=None)

    @property
    def by_path(self) -> dict[str, FileSignals]:
        return {s.path: s for s in self.signals}

    def text(self, rel: str) -> str:
        if rel not in self._texts:
            self._texts[rel] = read_text(self.workspace, rel)
        return self._texts[rel]

    def recent_queries(self, days: float) -> list[str]:
        """Queries the agent asked in the last ``days`` days, most asked first (counted once a
        snapshot)."""
        found = self._recent_queries.get(days)
        if found is None:
            found = self._recent_queries[days] = recent_queries(
                self._conn, self.now, days, self.agents
            )
        return list(found)


FIRST_SEEN = "first seen"  # FileSignals.created_from when the age counts from that
FUTURE_MTIME = "first seen; mtime ahead"  # ... because the file's mtime is in the future
FUTURE_SLACK = DAY  # an mtime this far ahead of the clock is not a date the file had


def with_first_seen(
    signals: list[FileSignals], seen: Mapping[str, float], baseline: float | None, now: float
) -> list[FileSignals]:
    """``signals`` with each age counted from the later of the file's own date and the moment
    memoryd first listed it (an import of old notes is new); a file listed at the baseline
    keeps its own date, one not listed yet is seen ``now``. Pure. An mtime more than a day
    ahead of ``now`` is no date the file had: the age counts from when memoryd first listed
    it (``now`` at the latest), as is a first listing recorded ahead of ``now``."""
    out = []
    for sig in signals:
        first = seen.get(sig.path, now)
        if sig.created_from == "mtime" and sig.created > now + FUTURE_SLACK:
            # (a copy from a machine whose clock ran ahead: believed, the note would be
            # "young" until the clock caught up, kept whatever its use)
            sig = dataclasses.replace(sig, created=min(first, now), created_from=FUTURE_MTIME)
        elif baseline is not None and first > baseline and first > sig.created:
            # (listed "later than now" by a run on a clock ahead: now at the latest)
            sig = dataclasses.replace(sig, created=min(first, now), created_from=FIRST_SEEN)
        out.append(sig)
    return out


def snapshot(cfg: Config, paths: Paths, store: Store, now: float) -> Snapshot:
    """Read the primary workspace's memory files, their hit counts and the marks."""
    return Snapshot(cfg, paths, store, now)
