"""Signals per memory file: windows, created dates, activation, trend — checked by hand."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.hit_counts import CLOCK_SKEW, hit_counts
from memoryd.signals import (
    DAY,
    Hit,
    archive_excludes,
    count_hits,
    count_windows,
    counts_from,
    created_time,
    file_kind,
    file_signals,
    load_hits,
    sparkline,
)
from memoryd.store import Store
from memoryd.workspace import MemoryFile

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC).timestamp()


def _sig(rel: str, ages_days: list[float], queries: list[str] | None = None, mtime: float = NOW):
    qs = queries or [f"q{i}" for i in range(len(ages_days))]
    hits = [
        Hit(NOW - a * DAY, q, f"c{i}", "main")
        for i, (a, q) in enumerate(zip(ages_days, qs, strict=True))
    ]
    return file_signals(MemoryFile(rel, 100, mtime), hits, NOW)


def test_kinds_follow_the_name() -> None:
    assert file_kind("MEMORY.md") == "long-term"
    assert file_kind("memory.md") == "long-term"
    assert file_kind("memory/2026-02-25.md") == "daily"
    assert file_kind("memory/2026-02-25-boat-trip.md") == "daily"
    assert file_kind("memory/dreaming/deep/2026-04-20.md") == "daily"
    assert file_kind("memory/espresso-notes.md") == "topic"
    assert file_kind("memory/2026-13-45.md") == "topic"  # not a real date
    assert file_kind("memory/20260225.md") == "topic"


def test_created_is_the_date_in_the_name_else_mtime() -> None:
    ts, source = created_time("memory/2026-02-25-boat.md", 5.0)
    assert source == "name" and ts == datetime(2026, 2, 25, tzinfo=UTC).timestamp()
    assert created_time("memory/topic.md", 1234.5) == (1234.5, "mtime")
    assert created_time("MEMORY.md", 99.0) == (99.0, "mtime")


def test_windows_count_hits_at_their_edges() -> None:
    s = _sig("memory/a.md", [0.5, 6.99, 7.01, 13.9, 29.99, 30.01, 100])
    assert (s.hits_7d, s.hits_14d, s.hits_30d, s.hits_total) == (2, 4, 5, 7)
    assert s.hits_within(7) == 2 and s.hits_within(365) == 7
    assert s.last_hit == NOW - 0.5 * DAY and s.days_since_hit == pytest.approx(0.5)


def test_a_hit_slightly_in_the_future_counts_as_now_and_later_ones_are_ignored() -> None:
    """Clock skew must never make a file in use look unused; replays ignore later hits."""
    s = _sig("memory/a.md", [-0.5, 2.0])  # half a day "ahead": another clock
    assert s.hits_total == 2 and s.hits_within(7) == 2 and s.last_hit == NOW
    s = _sig("memory/a.md", [-2.0, 2.0])  # two days ahead: after the "as of" day
    assert s.hits_total == 1 and s.last_hit == NOW - 2 * DAY


def test_activation_is_actr_base_level() -> None:
    s = _sig("memory/a.md", [1, 3, 6])
    assert s.activation == pytest.approx(math.log(1 + 3**-0.5 + 6**-0.5))
    # a hit a minute ago counts as one hour old (no infinity)
    fresh = _sig("memory/a.md", [1 / 1440])
    assert fresh.activation == pytest.approx(math.log((1 / 24) ** -0.5))
    assert _sig("memory/a.md", []).activation is None
    # peers.md: one use 14 days ago gives about -1.3
    assert _sig("memory/a.md", [14]).activation == pytest.approx(-1.32, abs=0.01)


def test_trend_labels() -> None:
    assert _sig("memory/a.md", []).trend == "dormant"
    assert _sig("memory/a.md", [20, 21, 22, 25]).trend == "dormant"  # nothing in 14 days
    assert _sig("memory/a.md", [0.2, 0.5, 1, 1.5]).trend == "rising"
    assert _sig("memory/a.md", [9, 9.5, 10, 10.5, 11, 12]).trend == "cooling"
    steady = [i * 0.5 for i in range(1, 80)]  # every 12 hours for 40 days
    assert _sig("memory/a.md", steady).trend == "steady"


def test_distinct_queries_days_and_daily_series() -> None:
    s = _sig("memory/a.md", [0.1, 0.2, 1.1, 40], ["Boat trip", "boat trip ", "espresso", ""])
    assert s.distinct_queries == 2  # case and spaces folded, empty query not counted
    assert s.distinct_days == 3
    assert s.queries[0] == ("boat trip", 2)
    assert len(s.daily) == 30 and s.daily[-1] == 2 and s.daily[-2] == 1 and sum(s.daily) == 3


def test_sparkline() -> None:
    assert sparkline([0, 0, 0]) == "▁▁▁"
    assert sparkline([0, 1, 7]) == "▁▂█"
    assert len(sparkline([3] * 30)) == 30


def test_load_hits_filters_by_time_and_agent() -> None:
    store = Store.memory()
    rows = [
        ("main", "c1", "memory/a.md", "search", NOW - DAY, "x"),
        ("main", "c2", "memory/a.md", "search", NOW + 2 * DAY, "future"),
        ("main", "c5", "memory/a.md", "search", NOW + 600, "skewed clock"),
        ("other", "c3", "memory/a.md", "get", NOW - DAY, None),
        ("main", "c4", "memory/b.md", "search", NOW - 40 * DAY, "old"),
    ]
    store.conn.executemany(
        "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query) VALUES (?,?,?,?,?,?)", rows
    )
    got = load_hits(store.conn, NOW)
    assert {p: len(v) for p, v in got.items()} == {"memory/a.md": 3, "memory/b.md": 1}
    assert max(h.ts for h in got["memory/a.md"]) == NOW  # the skewed hit, as of now
    assert len(load_hits(store.conn, NOW, agents=["main"])["memory/a.md"]) == 2
    assert "memory/b.md" not in load_hits(store.conn, NOW, since=NOW - 30 * DAY)


def test_archive_inside_memory_is_excluded_from_the_listing(tmp_path: Path) -> None:
    """Only a month's archive folder is left out: ``{month}`` is a run's YYYY-MM, so the
    user's own ``memory/archive-ideas/`` (hit, expired, explained like any note) is not one."""
    (tmp_path / "memory" / "archive-2026-10").mkdir(parents=True)
    (tmp_path / "memory" / "archive-notes").mkdir()
    (tmp_path / "memory" / "archive-2019-taxes").mkdir()
    (tmp_path / "memory" / "projects").mkdir()
    got = archive_excludes(tmp_path, "memory/archive-{month}")
    assert got == ("memory/archive-2026-10",)
    assert archive_excludes(tmp_path, "memory/./archive-{month}") == got  # (validation takes it)
    assert archive_excludes(tmp_path, "memory/archive/{month}") == ("memory/archive",)
    assert archive_excludes(tmp_path, "memory-archive/{month}") == ()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(-60 * DAY, 5 * DAY), max_size=30),
    st.sampled_from([0.0, CLOCK_SKEW]),
)
def test_the_hit_count_query_and_its_pure_twin_agree(offsets: list[float], skew: float) -> None:
    """The SQL count (``hits``, snapshots, reports) and the count over hit times in memory
    agree for hits dated in the future, with the live view's skew allowance and with a
    replay's none: within it a hit counts as now, beyond it not at all."""
    store = Store.memory()
    store.conn.executemany(
        "INSERT INTO hits(agent, call_id, memory_path, kind, ts) VALUES ('main', ?, 'm.md', "
        "'search', ?)",
        [(f"c{i}", NOW + off) for i, off in enumerate(offsets)],
    )
    windows = count_windows((1,))
    got = counts_from(hit_counts(store.conn, NOW, windows, skew=skew), windows).get("m.md")
    want = count_hits(sorted(NOW + off for off in offsets), NOW, extra=(1,), skew=skew)
    if want.total == 0:
        assert got is None
        return
    assert got == want
    assert want.total == sum(1 for off in offsets if NOW + off <= NOW + skew)
    assert got.last is not None and got.last <= NOW


def test_a_files_hits_are_dated_at_now_by_either_path() -> None:
    """FileSignals.hits takes hits already dated (every one at or before now, as load_hits
    gives them) as they are, and otherwise dates them one by one: a hit within the clock-skew
    allowance after now is at now, one beyond it is not yet. Both give what dating every
    hit gives."""
    def dated(hits: list[Hit]) -> tuple[Hit, ...]:
        return tuple(
            h if h.ts <= NOW else Hit(NOW, h.query, h.call_id, h.agent)
            for h in hits
            if h.ts <= NOW + CLOCK_SKEW
        )

    f = MemoryFile("memory/a.md", 1, NOW - 9 * DAY)
    past = [Hit(NOW - a * DAY, "q", f"c{a}", "main") for a in (0, 0.5, 3, 40)]
    future = [*past, Hit(NOW + 60, "soon", "c9", "main"), Hit(NOW + 2 * CLOCK_SKEW, "x", "c10")]
    for hits in (past, future, []):
        sig = file_signals(f, hits, NOW)
        assert sig.hits == dated(hits)
        assert all(type(h) is Hit for h in sig.hits)
        assert sig.hit_times == tuple(sorted(h.ts for h in dated(hits)))
    assert file_signals(f, future, NOW).hits[-1] == Hit(NOW, "soon", "c9", "main")


def test_an_mtime_in_the_future_ages_from_when_memoryd_first_saw_the_file() -> None:
    """A note copied from a machine whose clock ran a year ahead: ``explain`` said "-365.0
    days old" and expire kept it as young until the clock caught up, whatever its use.
    Such an mtime is no date the file had: the age counts from when memoryd first listed it
    (now at the latest); an mtime within the day's slack is believed."""
    from memoryd.signals import FUTURE_MTIME, FileSignals, with_first_seen

    fields = {f: 0 for f in FileSignals.__dataclass_fields__}  # (every field, zeroed)
    base = FileSignals(**{**fields, "path": "memory/ahead.md", "kind": "topic",
                          "created_from": "mtime"})  # fmt: skip
    ahead = dataclasses.replace(base, created=NOW + 365 * DAY)
    close = dataclasses.replace(base, path="memory/close.md", created=NOW + 3600)
    seen = {"memory/ahead.md": NOW - 40 * DAY}
    for baseline in (None, NOW - 100 * DAY):
        got = {s.path: s for s in with_first_seen([ahead, close], seen, baseline, NOW)}
        assert got["memory/ahead.md"].created == NOW - 40 * DAY
        assert got["memory/ahead.md"].created_from == FUTURE_MTIME
        assert got["memory/close.md"].created == NOW + 3600  # (skew within the slack)
    unseen = with_first_seen([ahead], {}, None, NOW)[0]
    assert unseen.created == NOW and unseen.created_from == FUTURE_MTIME


def test_a_first_listing_recorded_ahead_of_the_clock_never_makes_an_age_negative() -> None:
    """A run on a clock ahead (or ``MEMORYD_NOW`` behind the last run) recorded an import's
    first listing after "now": ``explain`` and the plan said "-186.9 days old". It counts
    as listed now at the latest, as an mtime ahead does."""
    from memoryd.signals import FIRST_SEEN, FileSignals, with_first_seen

    fields = {f: 0 for f in FileSignals.__dataclass_fields__}  # (every field, zeroed)
    old = FileSignals(**{**fields, "path": "memory/import.md", "kind": "topic", "now": NOW,
                         "created_from": "mtime", "created": NOW - 700 * DAY})  # fmt: skip
    seen = {"memory/import.md": NOW + 187 * DAY}
    [got] = with_first_seen([old], seen, NOW - 800 * DAY, NOW)
    assert (got.created, got.created_from) == (NOW, FIRST_SEEN)
    assert got.age_days == 0.0


def test_the_archive_on_disk_leaves_out_retires_sections_and_side_files(tmp_path: Path) -> None:
    """What status and restore --all list as "not in the journal": expire's notes in the
    archive's layout only. Under a fixed archive.dir retire's own file (its sections, which
    restore --last undoes) lies inside the archive folder and was listed as if stranded."""
    from memoryd.workspace import files_in_archive, retired_archive_of

    layouts = (("memory-archive", "memory-archive/memory/x.md"),
               ("memory-archive/{month}", "memory-archive/2026-01/memory/x.md"))  # fmt: skip
    for archive_dir, note in layouts:
        ws = tmp_path / archive_dir.replace("/", "_").replace("{", "").replace("}", "")
        retired = retired_archive_of(archive_dir, "MEMORY.md")
        assert retired == "memory-archive/retired/MEMORY.md"
        for rel in (note, retired, note.replace("x.md", ".x.md.memoryd-3.tmp")):
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text("t")
        assert files_in_archive(ws, archive_dir) == [note], archive_dir
