"""Per-file hit counts read one covering index by seeks and ranges, and never the table.

``memoryd hits``, ``explain``, ``reflect`` and ``expire`` all start from "how many hits per
memory file"; at a year of hits (200 k rows) that query is the command. The statements are
recorded as the real functions run them on a real SQLite file, then asked for their plan.
"""

from __future__ import annotations

import random
import sqlite3
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd import hit_counts as hit_count_module
from memoryd import signals
from memoryd.store import Store
from memoryd.tierstore import records as tiers

NOW = 1_790_000_000.0
DAY = 86400.0
PATHS = [f"memory/2026-{m:02d}-{d:02d}.md" for m in range(1, 7) for d in range(1, 21)]
AGENTS = ("main", "ops", "other")


class RecordingConnection(sqlite3.Connection):
    """A real connection that keeps every statement it runs on ``hits``, with its arguments."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ran: list[tuple[str, tuple | dict]] = []

    def execute(self, sql, params=(), /):  # type: ignore[override]
        if "FROM hits" in sql and not sql.lstrip().upper().startswith("EXPLAIN"):
            # named placeholders (``:upper``) keep their mapping: a sequence would bind them by
            # position, with the names for values (3.12+ warns; 3.14 refuses)
            kept = dict(params) if isinstance(params, Mapping) else tuple(params)
            self.ran.append((sql, kept))
        return super().execute(sql, params)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A migrated state database with 3,000 hits spread over 180 days and three agents."""
    Store.open(tmp_path / "state.db").close()
    conn = sqlite3.connect(tmp_path / "state.db", isolation_level=None, factory=RecordingConnection)
    s = Store(conn, tmp_path / "state.db")
    rng = random.Random(7)
    with s.transaction():
        conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    rng.choice(AGENTS),
                    f"c{i}",
                    rng.choice(PATHS),
                    "search",
                    NOW - rng.random() * 180 * DAY,
                )
                for i in range(3000)
            ]
            # and some dated in the future: within the day's skew allowance, and beyond it
            + [
                (AGENTS[i % 3], f"f{i}", PATHS[i], "search", NOW + (i % 4) * DAY / 2)
                for i in range(40)
            ],
        )
    conn.ran.clear()
    try:
        yield s
    finally:
        conn.close()  # (3.13 warns of a connection left to the collector)


def plans(store: Store) -> list[str]:
    """The query plan of each statement recorded since the last call."""
    conn = store.conn
    out = []
    for sql, params in conn.ran:  # type: ignore[attr-defined]
        rows = conn.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall()
        out.append(" / ".join(r[3] for r in rows))
    conn.ran.clear()  # type: ignore[attr-defined]
    return out


def truth(store: Store, since: float, agents: tuple[str, ...] | None) -> Counter[str]:
    """Hits since ``since`` as of NOW: one dated up to a day after NOW counts, later ones not."""
    rows = store.conn.execute("SELECT memory_path, ts, agent FROM hits").fetchall()
    return Counter(
        p for p, ts, a in rows if since <= ts <= NOW + DAY and (agents is None or a in agents)
    )


def reads_of_hits(plan: str) -> list[str]:
    """The steps of a plan that read ``hits`` (each should name a covering index)."""
    return [step for step in plan.split(" / ") if " hits" in step]


@pytest.mark.parametrize("agents", [None, ("main",), ("main", "ops"), AGENTS])
def test_the_counts_of_hits_read_only_the_covering_index(
    store: Store, agents: tuple[str, ...] | None
) -> None:
    since = NOW - 30 * DAY
    windows = store.hit_counts(NOW, (30,), agents)
    ever = store.hit_counts(NOW, (), agents)
    windows_90 = signals.count_windows((90,))
    counts = signals.counts_from(store.hit_counts(NOW, windows_90, agents), windows_90)
    ran = plans(store)
    # One statement per count, and with agents asked for, one look at which agents the hits
    # are of (a skip scan of an index that starts with the agent: the unique key, or the
    # session index of migration 10), so a filter that keeps every hit is left out.
    # (Besides, per count, a skip scan that counts the files up to SEEK_FILES_MAX.)
    by_agent = ("sqlite_autoindex_hits_1", "hits_by_session")
    probes = [p for p in ran if any(f"COVERING INDEX {ix} " in p + " " for ix in by_agent)]
    assert len(probes) == (0 if agents is None else 3)
    counting = [p for p in ran if "hits_by_path_ts (memory_path=? AND ts" in p]
    assert len(counting) == 3
    for plan in ran:
        assert "TEMP B-TREE" not in plan, plan  # nothing sorted
        for step in reads_of_hits(plan):  # never the table, never a whole-index scan
            assert step.startswith("SEARCH hits USING COVERING INDEX"), plan
    # and the counts are the counts
    assert {p: t.within[0] for p, t in windows.items() if t.within[0]} == truth(
        store, since, agents
    )
    assert {p: t.total for p, t in ever.items()} == truth(store, float("-inf"), agents)
    assert all(t.last is not None and t.last <= NOW for t in ever.values())
    assert {p: c.d30 for p, c in counts.items() if c.d30} == truth(store, NOW - 30 * DAY, agents)


def test_past_many_files_the_counts_are_one_pass_over_the_index(store: Store) -> None:
    """With more files than seeks pay for, one aggregate pass in index order: the same counts."""
    by_seeks = store.hit_counts(NOW, (30, 7), ("main", "ops"))
    plans(store)
    in_one_pass = hit_count_module.hit_counts(
        store.conn, NOW, (30, 7), ("main", "ops"), seek_files_max=0
    )
    ran = plans(store)
    assert in_one_pass == by_seeks
    assert [p for p in ran if "SCAN hits" in p] == [
        "SCAN hits USING COVERING INDEX hits_by_path_ts"
    ]


def test_the_tier_store_reads_its_hit_keys_from_the_same_index(store: Store) -> None:
    tiers.last_retrievals(store)
    tiers.refcount_document(store, NOW)
    ran = plans(store)
    assert len(ran) == 2
    for plan in ran:
        assert "INDEX hits_by_path_ts" in plan, plan


def test_a_database_of_the_old_schema_gets_the_covering_index_on_open(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    Store.open(db).close()
    conn = sqlite3.connect(db)
    conn.executescript(
        "DROP INDEX hits_by_path_ts;"
        "CREATE INDEX hits_by_path_ts ON hits(memory_path, ts);"
        "ALTER TABLE transcript_db_cursors DROP COLUMN seq_rows;"  # (a later migration's)
        "DROP INDEX IF EXISTS hits_by_path_anchor;"  # (migration 13's, on the column)
        "ALTER TABLE hits DROP COLUMN anchor;"  # (migration 11's)
        "PRAGMA user_version = 4;"  # the schema just before the covering index (5)
    )
    conn.close()
    with Store.open(db) as s:
        columns = [r[2] for r in s.conn.execute("PRAGMA index_info(hits_by_path_ts)")]
    assert columns == ["memory_path", "ts", "agent"]


# Hit times on a coarse grid around NOW (whole hours, ± 100 days), so that hits fall exactly
# on window edges, on the upper bound (NOW + skew) and beyond it, and many share a time.
hit_rows = st.lists(
    st.tuples(
        st.sampled_from(AGENTS),
        st.sampled_from(PATHS[:6]),
        st.integers(-100 * 24, 3 * 24).map(lambda h: NOW + h * 3600.0),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(
    rows=hit_rows,
    windows=st.lists(st.sampled_from([1, 7, 14, 30, 90, 0.5]), max_size=4),
    agents=st.none() | st.sets(st.sampled_from([*AGENTS, "nobody"])),
    skew=st.sampled_from([0.0, DAY, 3600.0]),
    total=st.booleans(),
    seek_files_max=st.sampled_from([None, 0, 2]),  # the seeks, the one pass, either
)
def test_the_hit_count_is_the_plain_count_on_any_history(
    rows: list[tuple[str, str, float]],
    windows: list[float],
    agents: set[str] | None,
    skew: float,
    total: bool,
    seek_files_max: int | None,
) -> None:
    """Every file with a hit of these agents up to NOW + skew, its count in each window (in
    the order asked for, repeats included), in all, and its last hit (as NOW at the latest)."""
    with Store.memory() as s:
        s.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts) VALUES (?, ?, ?, ?, ?)",
            [(a, f"c{i}", p, "search", ts) for i, (a, p, ts) in enumerate(rows)],
        )
        got = hit_count_module.hit_counts(
            s.conn, NOW, windows, agents, skew=skew, total=total, seek_files_max=seek_files_max
        )
    seen = [(p, ts) for a, p, ts in rows if ts <= NOW + skew and (agents is None or a in agents)]
    want = {}
    for path in {p for p, _ in seen}:
        times = [ts for p, ts in seen if p == path]
        want[path] = hit_count_module.HitTally(
            len(times) if total else None,
            min(max(times), NOW),
            tuple(sum(1 for ts in times if ts >= NOW - d * DAY) for d in windows),
        )
    assert got == want


def test_without_the_covering_index_the_counts_read_the_table_once(store: Store) -> None:
    """A first scan of a large backlog drops the hit indexes until its end (and one killed
    leaves them dropped until a writable open): ``explain`` or ``expire --dry-run`` reading
    then (read-only) must not seek per file in a table without an index, a whole scan of it
    per file and band (minutes at 200 k hits on 3,000 files), but count in one pass."""
    want = store.hit_counts(NOW, (30, 7), ("main", "ops"))
    with store.transaction():
        store.drop_hit_indexes()
    plans(store)
    got = store.hit_counts(NOW, (30, 7), ("main", "ops"))
    ran = plans(store)
    assert got == want
    for plan in ran:
        scans = [step for step in plan.split(" / ") if step.startswith("SCAN hits")]
        assert len(scans) <= 1, plan  # the table read once by a statement, at most
        assert not ("CORRELATED" in plan and scans), plan  # and never once per row of another


class ConcurrentWriterConnection(sqlite3.Connection):
    """A real connection during whose first statement on ``hits`` another connection (a
    scan in the daemon) commits a hit of another agent, as it may between two statements."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.writer: sqlite3.Connection | None = None

    def execute(self, sql, params=(), /):  # type: ignore[override]
        cursor = super().execute(sql, params)
        if self.writer is not None and "FROM hits" in sql:
            writer, self.writer = self.writer, None
            writer.execute(
                "INSERT INTO hits(agent, call_id, memory_path, kind, ts) "
                "VALUES ('ops', 'late', 'memory/a.md', 'search', ?)",
                (NOW - DAY,),
            )
        return cursor


def test_the_counts_are_of_one_moment_while_a_scan_commits(tmp_path: Path) -> None:
    """``memoryd hits --agent main`` while the daemon commits the first hit of agent ``ops``:
    the agents looked at first and the counts after must see the same hits, so an ``ops``
    hit is never counted as ``main``'s (it was: the look found only ``main``'s hits, left
    the agent filter out, and the count then read the new one)."""
    db = tmp_path / "state.db"
    with Store.open(db) as s, s.transaction():
        s.conn.execute(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts) "
            "VALUES ('main', 'c1', 'memory/a.md', 'search', ?)",
            (NOW - 2 * DAY,),
        )
    writer = sqlite3.connect(db, isolation_level=None)
    conn = sqlite3.connect(db, isolation_level=None, factory=ConcurrentWriterConnection)
    try:
        conn.writer = writer
        got = hit_count_module.hit_counts(conn, NOW, (7,), ("main",))
        assert conn.writer is None  # the other agent's hit was committed meanwhile
        assert got == {"memory/a.md": hit_count_module.HitTally(1, NOW - 2 * DAY, (1,))}
        # and a caller's own transaction is left as it was (the expire job reads in one)
        conn.execute("BEGIN")
        hit_count_module.hit_counts(conn, NOW, (7,), ("main",))
        assert conn.in_transaction
        conn.execute("COMMIT")
    finally:
        conn.close()
        writer.close()
