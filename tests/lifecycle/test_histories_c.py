"""Family C of generated histories (support.histories_c): a third held-out family must
be reproducible from its seed, consistent (hits of generated notes, after their creation; each
search for a note needed then), of a heavy user's size, readable by the replay and by
``write_history``, and really made of its own need processes (calendar dates, deadlines,
weekly roll-ups, a drifting knowledge base)."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime

import pytest

from support import history_checks as hc
from support.histories import History
from support.histories_c import FamilyCParams, generate_c, sample_params_c

DAY = 86400.0


@pytest.fixture(scope="module")
def default() -> History:
    return generate_c(11)


def test_the_same_seed_gives_the_same_history_and_another_seed_another():
    hc.assert_reproducible(generate_c)


def test_every_hit_is_of_a_generated_note_at_or_after_its_creation(default: History):
    hc.assert_consistent(default, agents={"main", "work"})


def test_every_search_is_for_a_note_needed_at_that_moment(default: History):
    hc.assert_searches_are_for_needed_notes(default)


def test_the_needed_note_is_usually_found_not_always_first_and_other_notes_come_along(
    default: History,
):
    n, found, first, along = hc.retrieval(default)
    assert 0.6 * n < found < 0.98 * n  # usually found, sometimes not at all
    assert first < 0.97 * found
    assert along[0] > 4 * along[len(along) // 2]  # some come along far more often
    assert {x.agent for x in default.hits if x.kind == "search"} == {"main", "work"}


def test_sampled_users_differ_and_give_histories_of_a_heavy_users_size():
    hc.assert_sampled_users_are_heavy_users(generate_c, sample_params_c, FamilyCParams(), 50_000)


def test_the_replay_and_write_history_read_it(default: History, tmp_path):
    hc.assert_replay_and_write_history_read_it(default, tmp_path, min_daily=1)


def _dated(f, label: str) -> str:
    m = re.search(rf"^{label}: (\S+)$", f.text, re.M)
    assert m, f.text
    return m.group(1)


def test_an_annual_note_is_needed_only_in_the_weeks_before_its_date(default: History):
    annual = [f for f in default.files if f.kind == "annual" and f.needs]
    assert annual
    for f in annual:
        month, day = map(int, _dated(f, "date").split("-"))
        for t in f.needs:
            d = datetime.fromtimestamp(t, UTC)
            anchors = [datetime(y, month, day, tzinfo=UTC).timestamp()
                       for y in (d.year - 1, d.year, d.year + 1)]  # fmt: skip
            assert any(-32 * DAY <= t - a <= 2.5 * DAY for a in anchors), (f.path, d)
        days = sorted({datetime.fromtimestamp(t, UTC).toordinal() for t in f.needs})
        assert days[-1] - days[0] < 40 or days[-1] - days[0] > 300  # one window, or a year on


def test_a_due_note_is_needed_in_a_run_up_to_its_deadline_and_then_never(default: History):
    due = [f for f in default.files if f.kind == "due"]
    assert len(due) > 10
    ran_up = 0
    for f in due:
        deadline = datetime.fromisoformat(_dated(f, "due")).replace(tzinfo=UTC).timestamp()
        assert all(t <= deadline + 4 * DAY for t in f.needs)
        if deadline + DAY < default.end and deadline - f.created > 30 * DAY:
            assert f.needs[-1] >= deadline - 11 * DAY
            quiet = [t for t in f.needs if f.created + 4 * DAY < t < deadline - 11 * DAY]
            assert len(quiet) <= 1  # at most a check half way
            ran_up += 1
    assert ran_up > 3


def test_the_weekly_roll_up_reads_the_dailies_and_then_is_needed_instead(default: History):
    dailies = [f for f in default.files if f.kind == "daily"]
    weeklies = [f for f in default.files if f.kind == "weekly"]
    assert len(dailies) > 100 and len(weeklies) > 20
    for w in weeklies:
        year, week = map(int, w.path[len("memory/weekly/"):-3].split("-W"))
        of_week = [f for f in dailies
                   if datetime.fromtimestamp(f.created, UTC).isocalendar()[:2] == (year, week)]
        assert of_week
        for f in of_week:  # each read in the hour before the weekly was written
            assert any(w.created - 3600 <= t <= w.created for t in f.needs)
    late_daily = sum(1 for f in dailies for t in f.needs if t > f.created + 8 * DAY)
    after_weekly = sum(len(w.needs) for w in weeklies)
    assert late_daily / len(dailies) < 0.5 * after_weekly / len(weeklies)  # per note


def test_the_knowledge_base_favourites_change_over_the_year(default: History):
    refs = [f for f in default.files
            if f.kind == "reference" and f.created < default.start + 7 * DAY]  # fmt: skip
    first = Counter({f.path: sum(t < default.start + 100 * DAY for t in f.needs) for f in refs})
    last = Counter({f.path: sum(t > default.end - 100 * DAY for t in f.needs) for f in refs})
    favourites = [p for p, _ in first.most_common(3)]
    assert any(last[p] < first[p] / 2 for p in favourites)  # a favourite fades
    neglected = sorted(first, key=lambda p: first[p])[: len(first) // 2]
    assert any(last[p] >= 3 for p in neglected)  # and a neglected old note rises
