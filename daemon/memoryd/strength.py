"""Hit strength: what each hit says about need, derived from the hits table.

A search returns up to six files; the one the agent needed is usually first, or is read
next. Strength is the rank of each search hit among its call's results (by score), and
when the agent then read the file (a ``memory_get`` of it later in the same session). A
strong hit (retrieved first, or read) is what the expire policies count and ``explain``
prints. :func:`strength_pairs` is the one rule over rows read by :func:`load_hit_rows`;
:func:`strong_flags` the same rule in one pass; ``hits.strong_from`` (kept by triggers:
:mod:`memoryd.kept_strength`) is held to it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


class HitRow(NamedTuple):
    """A row of ``hits`` with what strength needs (a tuple: 100,000 of them load fast)."""

    agent: str
    call_id: str
    path: str
    kind: str  # search | get
    ts: float
    score: float | None
    session: str | None


class Strength(NamedTuple):
    """What one hit says about need: ``rank`` (1 = first; None = unknown, or a get) and
    ``read_at`` (the first later read in the same session; None = never read)."""

    rank: int | None
    read_at: float | None

    @property
    def label(self) -> str:
        """first | read | came along | unknown (rank unknown and not read)."""
        if self.rank == 1:
            return "first"
        if self.read_at is not None:
            return "read"
        return "came along" if self.rank is not None else "unknown"


def hit_strengths(rows: Sequence[HitRow]) -> list[Strength]:
    """Each row's strength, in the order given (see :func:`strength_pairs`)."""
    return [Strength(rank, read_at) for rank, read_at in strength_pairs(rows)]


def reads_by_session(rows: Sequence[tuple[Any, ...]]) -> dict[tuple[str, str, str], list[float]]:
    """(agent, session, path) → the times of the gets (reads) there, sorted: what tells a
    search hit read afterwards (rows as for :func:`strength_pairs`; a row of no session
    reads nothing)."""
    gets: dict[tuple[str, str, str], list[float]] = {}
    for agent, _call_id, path, kind, ts, _score, session in rows:
        if kind != "search" and session:
            g = gets.get((agent, session, path))
            if g is None:
                gets[(agent, session, path)] = [ts]
            else:
                g.append(ts)
    for lst in gets.values():
        lst.sort()
    return gets


def strength_pairs(rows: Sequence[tuple[Any, ...]]) -> list[tuple[int | None, float | None]]:
    """(rank, read_at) of each row (``HitRow`` fields, or plain tuples in that order), in
    the order given; a get is its own read: rank None, read at its time. Rank is 1 + the
    results of the same call with a higher score (unknown when any score of the call is
    missing); a read is a ``get`` of the same file by the same agent in the same session at
    or after the search."""
    calls: dict[tuple[str, str], list[float | None]] = {}
    for agent, call_id, _path, kind, _ts, score, _session in rows:
        if kind == "search":
            lst = calls.get((agent, call_id))
            if lst is None:
                calls[(agent, call_id)] = [score]
            else:
                lst.append(score)
    gets = reads_by_session(rows)
    # per call: its scores when every one is known, else None (every rank unknown)
    ranked = {k: (None if None in v else v) for k, v in calls.items()}
    out: list[tuple[int | None, float | None]] = []
    bisect_left = bisect.bisect_left
    for agent, call_id, path, kind, ts, score, session in rows:
        if kind != "search":
            out.append((None, ts))
            continue
        scores = ranked[(agent, call_id)]
        rank: int | None = None
        if scores is not None:
            rank = 1 + sum(1 for x in scores if x > score)
        read_at = None
        if session:
            later = gets.get((agent, session, path))
            if later:
                i = bisect_left(later, ts)
                read_at = later[i] if i < len(later) else None
        out.append((rank, read_at))
    return out


def strong_flags(rows: Sequence[tuple[Any, ...]], t: float) -> list[bool]:
    """Whether each row is a strong hit as known at ``t`` (``HitRow`` fields, or plain
    tuples in that order): :func:`strength_pairs` and
    :func:`memoryd.policy.replay.is_strong` in one, with no rank counted and no pair built
    (the expire plan asks only this of every row)."""
    top: dict[tuple[str, str], float] = {}  # per call: the highest score (NaN: none higher)
    unknown: set[tuple[str, str]] = set()  # calls with a score missing
    for agent, call_id, _path, kind, _ts, score, _session in rows:
        if kind == "search":
            if score is None:
                unknown.add((agent, call_id))
            elif score == score:  # (NaN ranks no other result below it, as in the count)
                best = top.get((agent, call_id))
                if best is None or score > best:
                    top[(agent, call_id)] = score
    gets = reads_by_session(rows)
    out = []
    bisect_left = bisect.bisect_left
    for agent, call_id, path, kind, ts, score, session in rows:
        if kind != "search" or (agent, call_id) in unknown:
            out.append(True)
            continue
        best = top.get((agent, call_id))
        if best is None or not best > score:  # rank 1: no result of its call scored higher
            out.append(True)
            continue
        later = gets.get((agent, session, path)) if session else None
        if not later:
            out.append(False)
            continue
        i = bisect_left(later, ts)
        out.append(i < len(later) and later[i] <= t)
    return out


def load_hit_rows(
    conn: Any,
    paths: Iterable[str] | None = None,
    agents: Iterable[str] | None = None,
    *,
    raw: bool = False,
) -> list[HitRow]:
    """Hit rows (of ``paths`` when given, plus every row of their calls, which rank them),
    in no particular order; one file's rows cost what that file has, not what the table
    holds. ``raw``: plain tuples in ``HitRow``'s field order (cheaper to unpack)."""
    sql = "SELECT agent, call_id, memory_path, kind, ts, score, session FROM hits"
    args: list[object] = []
    where: list[str] = []
    if paths is not None:
        wanted = sorted(set(paths))
        if not wanted:
            return []
        where.append(
            "(agent, call_id) IN (SELECT agent, call_id FROM hits "
            f"WHERE memory_path IN ({','.join('?' * len(wanted))}))"
        )
        args.extend(wanted)
    if agents is not None:
        ids = sorted(set(agents))
        where.append(f"agent IN ({','.join('?' * len(ids))})")
        args.extend(ids)
    if where:
        sql += " WHERE " + " AND ".join(where)
    if paths is not None:
        sql += " ORDER BY id"  # as recorded: the order a pass over the whole table gives
    cur = conn.execute(sql, args)
    return cur.fetchall() if raw else [HitRow._make(r) for r in cur]


def load_strong_times(
    conn: Any,
    now: float,
    horizon: float,
    paths: Iterable[str] | None = None,
    agents: Iterable[str] | None = None,
) -> list[tuple[str, float, int | None]] | None:
    """(path, time, strong) of every hit dated by ``horizon``, from ``hits.strong_from``: its
    time capped at ``now``, and whether it is strong as known at ``horizon`` (1; 0 or None:
    not), as :func:`strong_flags` says without reading the calls. ``paths``: those files'
    only. None when the database is older than that column (a read-only open does not
    migrate)."""
    if int(conn.execute("PRAGMA user_version").fetchone()[0]) < 10:
        return None
    sql = "SELECT memory_path, min(ts, ?), strong_from <= ? FROM hits WHERE ts <= ?"
    args: list[object] = [now, horizon, horizon]
    if paths is not None:
        wanted = sorted(set(paths))
        if not wanted:
            return []
        sql += f" AND memory_path IN ({','.join('?' * len(wanted))})"
        args.extend(wanted)
    if agents is not None:
        ids = sorted(set(agents))
        sql += f" AND agent IN ({','.join('?' * len(ids))})"
        args.extend(ids)
    return conn.execute(sql, args).fetchall()


def file_summary(
    conn: Any, path: str, agents: Iterable[str] | None = None
) -> dict[str, int] | None:
    """:func:`strength_summary` of one file's hits from its own rows alone: the rank asked of
    its call's rows through the unique key, the read of ``strong_from`` (or, for a result of
    unknown rank, of the session's reads). None when the database is older than that
    column."""
    if int(conn.execute("PRAGMA user_version").fetchone()[0]) < 10:
        return None
    sql = """SELECT h.kind != 'search',
        EXISTS (SELECT 1 FROM hits AS c WHERE c.agent = h.agent AND c.call_id = h.call_id
            AND c.kind = 'search' AND c.score IS NULL),
        EXISTS (SELECT 1 FROM hits AS c WHERE c.agent = h.agent AND c.call_id = h.call_id
            AND c.kind = 'search' AND c.score > h.score),
        h.strong_from IS NOT NULL,
        h.session IS NOT NULL AND h.session != '' AND EXISTS (SELECT 1 FROM hits AS g
            WHERE g.agent = h.agent AND g.session = h.session AND g.memory_path = h.memory_path
            AND g.kind != 'search' AND g.ts >= h.ts)
        FROM hits AS h WHERE h.memory_path = ?"""
    args: list[object] = [path]
    if agents is not None:
        ids = sorted(set(agents))
        sql += f" AND h.agent IN ({','.join('?' * len(ids))})"
        args.extend(ids)
    out = {"first": 0, "read": 0, "read_directly": 0, "came_along": 0, "rank_unknown": 0}
    for is_get, unknown, outranked, strong, read in conn.execute(sql, args):
        if is_get:
            out["read_directly"] += 1
        elif unknown:  # (rank unknown: read if a get of it came at or after it)
            out["read" if read else "rank_unknown"] += 1
        elif not outranked:
            out["first"] += 1
        else:  # (ranked lower: strong from its first read, if any)
            out["read" if strong else "came_along"] += 1
    out["strong"] = out["first"] + out["read"] + out["read_directly"]
    return out


def rows_of_files(rows: Sequence[Any], paths: Iterable[str]) -> list[Any]:
    """The rows of ``paths`` and every row of their calls (a search's other results rank
    them), in the order given; rows are ``HitRow`` or plain tuples in its order."""
    wanted = set(paths)
    calls = {(r[0], r[1]) for r in rows if r[2] in wanted}
    return [r for r in rows if r[2] in wanted or (r[0], r[1]) in calls]


def strength_summary(rows: Sequence[HitRow], strengths: Sequence[Strength], path: str) -> dict:
    """One file's hits by strength: first, read (after a search or directly), came along."""
    out = {"first": 0, "read": 0, "read_directly": 0, "came_along": 0, "rank_unknown": 0}
    for r, s in zip(rows, strengths, strict=True):
        if r.path != path:
            continue
        if r.kind != "search":
            out["read_directly"] += 1
        elif s.label == "first":
            out["first"] += 1
        elif s.label == "read":
            out["read"] += 1
        elif s.label == "came along":
            out["came_along"] += 1
        else:
            out["rank_unknown"] += 1
    out["strong"] = out["first"] + out["read"] + out["read_directly"]
    return out
