"""Expire policy: the plan equals the written rule, computed independently, on random data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.config import ExpireConfig
from memoryd.policy.expire import archive_relpath, decide, free_name, plan
from memoryd.policy.expire_plan import with_pruning
from memoryd.signals import Hit, file_signals
from memoryd.workspace import MemoryFile

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)
NOW_TS = NOW.timestamp()
CFG = ExpireConfig()


def _oracle(name_date: datetime | None, mtime: datetime, hit_ts: list[float], rel: str) -> bool:
    """The seed's rule, written directly from the issue text."""
    if rel in ("MEMORY.md", "memory.md"):
        return False
    created = name_date if name_date is not None else mtime
    age = NOW - created
    window_start = (NOW - timedelta(days=30)).timestamp()
    # a hit up to a day "in the future" (another clock) counts as now; later ones do not
    recent = sum(1 for ts in hit_ts if window_start <= ts <= NOW_TS + 86400)
    return age > timedelta(days=30) and recent <= 2


files_strategy = st.lists(
    st.tuples(
        st.booleans(),  # dated name?
        st.integers(0, 120),  # age in days of the date / mtime
        st.integers(0, 86399),  # seconds into that day
        st.lists(st.floats(-5 * 86400, 90 * 86400), max_size=6),  # hit ages (s; <0 = future)
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=100, deadline=None)
@given(files_strategy)
def test_plan_equals_the_rule_on_random_workspaces(specs: list) -> None:
    sigs, expected = [], {}
    for i, (dated, age_days, secs, hit_ages) in enumerate(specs):
        when = NOW - timedelta(days=age_days, seconds=secs)
        if dated:
            day = when.date()
            rel = f"memory/{day.isoformat()}-n{i}.md"
            name_date = datetime(day.year, day.month, day.day, tzinfo=UTC)
        else:
            rel, name_date = (f"memory/topic-{i}.md", None) if i else ("MEMORY.md", None)
        hits = [Hit(NOW_TS - a, "q", f"c{j}") for j, a in enumerate(hit_ages)]
        sigs.append(file_signals(MemoryFile(rel, 10, when.timestamp()), hits, NOW_TS))
        expected[rel] = _oracle(name_date, when, [h.ts for h in hits], rel)
    got = {d.path: d.action == "archive" for d in plan(sigs, CFG)}
    assert got == expected


def _sig(rel: str, age_days: float, hits: int = 0):
    ts = NOW_TS - age_days * 86400
    return file_signals(
        MemoryFile(rel, 10, ts),
        [Hit(NOW_TS - 3600 * (k + 1), "q", f"c{k}") for k in range(hits)],
        NOW_TS,
    )


def test_protected_marked_and_pinned_are_kept_with_their_reason() -> None:
    cfg = ExpireConfig(pinned=("memory/keep/*",))
    old = 90
    assert decide(_sig("MEMORY.md", old), cfg).rule == "protected"
    assert decide(_sig("memory/a.md", old), cfg, marked={"memory/a.md"}).rule == "marked"
    assert decide(_sig("memory/keep/x.md", old), cfg).rule == "pinned"
    assert decide(_sig("memory/p/y.md", old), cfg, pins=("memory/p/*",)).rule == "pinned"
    d = decide(_sig("memory/a.md", old, hits=3), cfg)
    assert (d.action, d.rule, d.numbers["hits_window"]) == ("keep", "active", 3)
    assert "3 hits in the last 30 days" in d.reason
    d = decide(_sig("memory/a.md", 29), cfg)
    assert (d.action, d.rule) == ("keep", "young")
    d = decide(_sig("memory/a.md", old, hits=2), cfg)
    assert (d.action, d.rule) == ("archive", "expired")
    assert d.reason == "90 days old and 2 hits in the last 30 days (at most 2)"


def test_extra_prune_decisions_only_touch_unprotected_keeps() -> None:
    sigs = [_sig("memory/a.md", 3), _sig("MEMORY.md", 3)]
    extra = {"memory/a.md": ("prune", "low"), "MEMORY.md": ("prune", "low")}
    got = {d.path: (d.action, d.rule) for d in with_pruning(plan(sigs, CFG), extra)}
    assert got == {"memory/a.md": ("archive", "prune"), "MEMORY.md": ("keep", "protected")}


def test_archive_destinations_keep_the_relative_path_without_nesting_memory() -> None:
    assert archive_relpath("memory/2026-09-01.md", "memory-archive/{month}", "2026-11") == (
        "memory-archive/2026-11/memory/2026-09-01.md"
    )
    assert archive_relpath("memory/projects/x.md", "memory/archive-{month}", "2026-02") == (
        "memory/archive-2026-02/projects/x.md"
    )  # the seed's layout, without its memory/memory bug


def test_free_name_never_reuses_a_taken_name() -> None:
    taken = {"a/x.md", "a/x~2.md"}
    assert free_name("a/y.md", taken.__contains__) == "a/y.md"
    assert free_name("a/x.md", taken.__contains__) == "a/x~3.md"


def test_a_pin_with_double_star_keeps_the_files_directly_in_the_folder_too() -> None:
    """``memory/**/*.md`` is how the docs write every memory file: it pinned only the notes
    in subfolders (``*`` + ``*/`` needs a folder), and ``memory/2026-04-16.md`` was archived.
    A pin that names a file as it is written keeps it, brackets in the name and all."""
    old = 90
    for pin, rel in [
        ("memory/**/*.md", "memory/a.md"),
        ("memory/**/*.md", "memory/p/q/b.md"),
        ("**/people.md", "memory/people.md"),
        ("**/people.md", "people.md"),
        ("memory/**/notes/**/*.md", "memory/notes/x.md"),
        ("memory/**/notes/**/*.md", "memory/a/notes/b/x.md"),
        ("memory/[draft] plan.md", "memory/[draft] plan.md"),
    ]:
        d = decide(_sig(rel, old), CFG, pins=(pin,))
        assert (d.action, d.rule, rel) == ("keep", "pinned", rel), pin
        d = decide(_sig(rel, old), ExpireConfig(pinned=(pin,)))
        assert (d.action, d.rule, rel) == ("keep", "pinned", rel), pin
    for pin, rel in [
        ("memory/**/*.md", "memory.md.bak/x.md"),
        ("memory/projects/**/*.md", "memory/projectsx.md"),
        ("**/people.md", "memory/other-people.md"),
    ]:
        assert decide(_sig(rel, old), CFG, pins=(pin,)).rule != "pinned", (pin, rel)


def test_a_pin_of_a_folder_keeps_the_notes_in_it() -> None:
    """``memoryd pin memory/projects`` was kept as a glob no note's path can equal ("matches
    no memory file now; it will keep any that comes to match"): it kept nothing, ever."""
    old = 90
    for pin in ("memory/projects", "memory/projects/", "./memory/projects"):
        for rel in ("memory/projects/x.md", "memory/projects/a/b.md"):
            assert decide(_sig(rel, old), CFG, pins=(pin,)).rule == "pinned", (pin, rel)
        assert decide(_sig("memory/projects-old.md", old), CFG, pins=(pin,)).rule != "pinned"


def test_double_star_inside_a_name_is_a_star_not_any_folders() -> None:
    """``**/`` stands for any folders or none only as a whole part of the path (as in
    .gitignore): ``memory/proj**/notes.md`` is ``proj``, anything, ``/notes.md``. Read as
    ``(?:.*/)?`` after ``proj`` it also pinned ``memory/projnotes.md``, a note it does not name."""
    pin = "memory/proj**/notes.md"
    assert decide(_sig("memory/projects/notes.md", 90), CFG, pins=(pin,)).rule == "pinned"
    assert decide(_sig("memory/projnotes.md", 90), CFG, pins=(pin,)).rule != "pinned"


def test_a_folder_glob_with_a_trailing_slash_keeps_the_notes_in_those_folders() -> None:
    """``memory/projects/`` keeps the notes in that folder (3853d04); ``memory/*/``, written
    the same way, kept nothing: its ``/`` at the end asked for a path ending in ``/``."""
    for pin in ("memory/*/", "memory/p*/"):
        assert decide(_sig("memory/projects/x.md", 90), CFG, pins=(pin,)).rule == "pinned", pin
        assert decide(_sig("memory/top.md", 90), CFG, pins=(pin,)).rule != "pinned", pin


def test_a_note_dated_ahead_by_its_name_is_said_so_not_a_negative_age() -> None:
    """A note named for a day to come (``memory/2026-12-25.md``, written ahead for it) is
    young until 30 days after that day, as it should be; its reason said "-52.5 days old
    (created from name)". It says how far ahead it is dated."""
    d = decide(_sig("memory/2026-12-25.md", 90), CFG)
    assert (d.action, d.rule) == ("keep", "young")
    assert "-" not in d.reason.split(" days")[0], d.reason
    assert d.reason.startswith("dated 51.5 days ahead (created from name)"), d.reason
    assert d.numbers["age_days"] < 0  # (the number itself is kept: the rule counts from it)
