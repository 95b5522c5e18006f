"""The one hit-count query: each memory file's hits as of a moment, in windows of days.

``memoryd hits``, the signals, the reports and ``explain`` all count with :func:`hit_counts`,
so they agree on every file. It reads ``hits`` only, through any ``sqlite3.Connection``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

# A hit dated up to this much after ``now`` counts, as happening now (the live view: a
# transcript written by another clock, or a clock stepped back, must never make a file in
# use look unused). A replay allows none: at run t it sees the hits with ts <= t.
CLOCK_SKEW = 86400.0
_DAY = 86400.0


class HitTally(NamedTuple):
    """One file's hits as of ``now``: in all, in each window asked for, and the last one."""

    total: int | None  # None when not asked for (``hit_counts(..., total=False)``)
    last: float | None  # never after ``now`` (a hit within the skew allowance counts as now)
    within: tuple[int, ...]  # hits in the last d days (now - d days <= ts), per window asked


def hit_counts(
    conn: sqlite3.Connection, now: float, windows: Iterable[float] = (),
    agents: Iterable[str] | None = None, *, skew: float = CLOCK_SKEW, total: bool = True,
    seek_files_max: int | None = None,
) -> dict[str, HitTally]:  # fmt: skip
    """memory_path → :class:`HitTally`: the one hit-count query (module docstring).

    A hit dated up to ``skew`` seconds after ``now`` counts as a hit at ``now``; a later one
    not at all, so a history can be read "as of" any past day. ``windows`` are in days;
    ``total=False`` leaves the all-time count out (``None``) and older hits unread.

    One statement that seeks, per file, in the covering index ``hits_by_path_ts``: the files by
    a skip scan, the last hit by one step back from the upper bound, and each count by a range
    over disjoint bands between the windows' lower bounds, so every hit is visited once. Past
    ``seek_files_max`` files (default :data:`SEEK_FILES_MAX`) one GROUP BY pass over the index
    is cheaper, with the same results (docs/benchmarks.md, "The count query").
    """
    days = tuple(windows)
    upper = now + skew
    lows = [now - d * _DAY for d in days]
    params: dict[str, object] = {"upper": upper}
    # Several statements, one snapshot: a scan committing between them (the first hit of
    # another agent) must not make the agent filter, left out by the first, wrong for the last.
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        agent_sql = _agent_clause(conn, agents, params)
        limit = SEEK_FILES_MAX if seek_files_max is None else seek_files_max
        # Without the index (dropped by a first scan's bulk load until its end) every seek
        # would be a scan of the whole table: one pass instead.
        if not _has_path_index(conn) or _more_files_than(conn, limit):
            return _counts_in_one_pass(conn, now, lows, total, agent_sql, params)
        return _counts_by_file(conn, now, upper, lows, total, agent_sql, params)
    finally:
        if own and conn.in_transaction:
            conn.execute("COMMIT")


def hits_since(
    conn: sqlite3.Connection, since: float | None = None, upper: float | None = None
) -> int:
    """How many hits were recorded with ``since <= ts <= upper`` (an open end: no bound),
    across every file and agent, counted in an index alone (a SUM over the rows is a full
    scan)."""
    sql, args = "SELECT COUNT(*) FROM hits", []
    bounds = [b for b in (("ts >= ?", since), ("ts <= ?", upper)) if b[1] is not None]
    if bounds:
        sql += " WHERE " + " AND ".join(c for c, _ in bounds)
        args = [v for _, v in bounds]
    (n,) = conn.execute(sql, args).fetchone()
    return int(n)


def hit_tally_of_spellings(
    conn: sqlite3.Connection, spellings: Sequence[str], now: float, windows: Iterable[float],
    agents: Iterable[str] | None, *, skew: float = CLOCK_SKEW, total: bool = True,
) -> HitTally | None:  # fmt: skip
    """The :class:`HitTally` of one file whose hits are recorded under several spellings
    (:mod:`memoryd.pathmatch`): one hit per call, under :func:`hit_counts`'s rule. None when
    it has no hit up to then. Rare, so a plain read suffices."""
    sql = (
        "SELECT agent, call_id, MIN(ts) FROM hits WHERE memory_path IN "
        f"({','.join('?' * len(spellings))}) AND ts <= ?"
    )
    args: list[object] = [*spellings, now + skew]
    if agents is not None:
        ids = sorted(set(agents))
        sql += f" AND agent IN ({','.join('?' * len(ids))})"
        args.extend(ids)
    sql += " GROUP BY agent, call_id"
    times = sorted(min(ts, now) for _a, _c, ts in conn.execute(sql, args))
    if not times:
        return None
    within = tuple(sum(1 for t in times if t >= now - d * _DAY) for d in windows)
    return HitTally(len(times) if total else None, times[-1], within)


# Past this many files, one aggregate pass over the index costs less than the seeks per file.
SEEK_FILES_MAX = 3000


def _has_path_index(conn: sqlite3.Connection) -> bool:
    """Whether ``hits_by_path_ts`` exists (see :data:`HIT_INDEXES`)."""
    sql = "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'hits_by_path_ts'"
    return conn.execute(sql).fetchone() is not None


def _more_files_than(conn: sqlite3.Connection, limit: int) -> bool:
    """Whether ``hits`` names more than ``limit`` files: a skip scan that stops there."""
    return len(_distinct(conn, "memory_path", limit + 1)) > limit


def _distinct(conn: sqlite3.Connection, column: str, limit: int = -1) -> list[str]:
    """The distinct values of ``column`` (the first column of an index of ``hits``), in
    order, at most ``limit`` of them: a skip scan, one seek per value, not a pass over
    every row."""
    sql = (
        f"WITH RECURSIVE v(x) AS (SELECT MIN({column}) FROM hits UNION ALL "
        f"SELECT (SELECT MIN({column}) FROM hits WHERE {column} > v.x) "
        "FROM v WHERE v.x IS NOT NULL LIMIT ?) SELECT x FROM v WHERE x IS NOT NULL"
    )
    return [x for (x,) in conn.execute(sql, (limit,))]


def _counts_by_file(
    conn: sqlite3.Connection, now: float, upper: float, lows: list[float], total: bool,
    agent_sql: str, params: dict[str, object],
) -> dict[str, HitTally]:  # fmt: skip
    """The seek plan: per file, its last hit and a range count per band."""
    # Band edges, newest first; a window starting after the upper bound holds no hit at all.
    edges = sorted({lo for lo in lows if lo <= upper}, reverse=True)

    def of_file(path: str, condition: str) -> str:
        return f"FROM hits WHERE memory_path = {path} AND {condition}{agent_sql}"

    counts = []
    top = "ts <= :upper"  # a band ends where its newer neighbour starts
    for i, edge in enumerate(edges):
        params[f"e{i}"] = edge
        counts.append(f"(SELECT COUNT(*) {of_file('paths.path', f'ts >= :e{i} AND {top}')})")
        top = f"ts < :e{i}"
    if total:
        counts.append(f"(SELECT COUNT(*) {of_file('paths.path', top)})")

    # The skip scan carries each file's last hit along, so a file with none (of these
    # agents, up to now) is left out before any count runs: a recursive table is never
    # inlined, its last hit is looked up once. (The next path is, twice: a seek each.)
    def last_of(path: str) -> str:
        return f"(SELECT ts {of_file(path, 'ts <= :upper')} ORDER BY ts DESC LIMIT 1)"

    after = "(SELECT MIN(memory_path) FROM hits WHERE memory_path > paths.path)"
    sql = (
        "WITH RECURSIVE paths(path, last) AS ("
        f"SELECT first.path, {last_of('first.path')} "
        "FROM (SELECT MIN(memory_path) AS path FROM hits) AS first "
        f"UNION ALL SELECT {after}, {last_of(after)} FROM paths WHERE paths.path IS NOT NULL) "
        f"SELECT path, last{''.join(f', {c}' for c in counts)} FROM paths WHERE last IS NOT NULL"
    )
    # Window j is the sum of the bands from the newest down to its own lower edge.
    upto = [edges.index(lo) + 1 if lo <= upper else 0 for lo in lows]
    out: dict[str, HitTally] = {}
    for path, newest, *bands in conn.execute(sql, params):
        since = [0]
        for n in bands[: len(edges)]:
            since.append(since[-1] + n)
        everything = since[-1] + bands[-1] if total else None
        out[path] = HitTally(everything, min(newest, now), tuple(since[k] for k in upto))
    return out


def _counts_in_one_pass(
    conn: sqlite3.Connection, now: float, lows: list[float], total: bool, agent_sql: str,
    params: dict[str, object],
) -> dict[str, HitTally]:  # fmt: skip
    """The one-pass plan: every aggregate on every index entry, grouped in index order."""
    params.update({f"w{j}": lo for j, lo in enumerate(lows)})
    within = "".join(f", SUM(ts >= :w{j})" for j in range(len(lows)))
    sql = (
        f"SELECT memory_path, COUNT(*), MAX(ts){within} FROM hits "
        f"WHERE ts <= :upper{agent_sql} GROUP BY memory_path"
    )
    return {
        path: HitTally(everything if total else None, min(last, now), tuple(since))
        for path, everything, last, *since in conn.execute(sql, params)
    }


def _agent_clause(
    conn: sqlite3.Connection, agents: Iterable[str] | None, params: dict[str, object]
) -> str:
    """`` AND +agent IN (:a0, …)`` for the per-file counts, its values put in ``params``;
    ``""`` when no hit is of another agent (then the filter would only cost time).

    The agents present come from a skip scan of the unique key, one seek per agent. The unary
    ``+`` keeps SQLite off that index in the counts (without statistics the planner takes
    ``agent IN`` for a selective search): the covering index answers them instead.
    """
    if agents is None:
        return ""
    ids = sorted(set(agents))
    if set(_distinct(conn, "agent")) <= set(ids):
        return ""
    names = []
    for i, agent in enumerate(ids):
        params[f"a{i}"] = agent
        names.append(f":a{i}")
    return f" AND +agent IN ({','.join(names)})"
