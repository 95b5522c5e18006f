"""Family D of generated histories (support.histories_d): a fourth, sealed held-out
family must be reproducible from its seed, consistent (hits of generated notes, after their
creation; each search for a note needed then), of a heavy user's size, readable by the replay
and by ``write_history``, and really made of its own need processes (exam crunches, spaced
repetition, habit streaks, superseded versions, index-then-link reads, seasonal hobbies, a
changing recipe rotation, lab write-ups)."""

from __future__ import annotations

import itertools
import re
from datetime import UTC, date, datetime

import pytest

from support import history_checks as hc
from support.histories import History
from support.histories_d import FamilyDParams, generate_d, sample_params_d

DAY = 86400.0


@pytest.fixture(scope="module")
def default() -> History:
    return generate_d(11)


def _days(ts: list[float]) -> list[int]:
    return sorted({int(t // DAY) for t in ts})


def test_the_same_seed_gives_the_same_history_and_another_seed_another():
    hc.assert_reproducible(generate_d)


def test_every_hit_is_of_a_generated_note_at_or_after_its_creation(default: History):
    hc.assert_consistent(default, agents={"main"})


def test_every_search_is_for_a_note_needed_at_that_moment(default: History):
    hc.assert_searches_are_for_needed_notes(default)


def test_the_needed_note_is_usually_found_not_always_first_and_other_notes_come_along(
    default: History,
):
    n, found, first, along = hc.retrieval(default)
    assert 0.6 * n < found < 0.97 * n  # usually found, sometimes not at all
    assert first < 0.9 * found
    assert along[0] > 4 * along[len(along) // 2]  # some come along far more often


def test_sampled_users_differ_and_give_histories_of_a_heavy_users_size():
    hc.assert_sampled_users_are_heavy_users(generate_d, sample_params_d, FamilyDParams(), 70_000)


def test_the_replay_and_write_history_read_it(default: History, tmp_path):
    hc.assert_replay_and_write_history_read_it(default, tmp_path, min_daily=51)


def _local_midnight(h: History, d: date) -> float:
    tz = h.params.tz_hours  # type: ignore[attr-defined]
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() - tz * 3600


def test_lecture_notes_are_crammed_before_the_exam_and_rest_over_the_break(default: History):
    courses: dict[str, list] = {}
    for f in default.files:
        if f.kind in ("syllabus", "lecture"):
            courses.setdefault(f.path.rsplit("/", 1)[0], []).append(f)
    judged = crunch = crunch_days = quiet = quiet_days = 0
    for notes in courses.values():
        (syl,) = [f for f in notes if f.kind == "syllabus"]
        exam = _local_midnight(default, date.fromisoformat(
            re.search(r"^exam: (\S+)$", syl.text, re.M).group(1)))  # type: ignore[union-attr]
        if exam + 21 * DAY > default.end:
            continue
        lectures = [f for f in notes if f.kind == "lecture"]
        crunch += sum(exam - 14 * DAY <= t < exam + 2 * DAY for f in lectures for t in f.needs)
        crunch_days += 16 * len(lectures)
        # once the week's homework is done a lecture note is hardly needed until the crunch
        quiet += sum(f.created + 7 * DAY <= t < exam - 14 * DAY for f in lectures for t in f.needs)
        quiet_days += sum(max(0.0, exam - 14 * DAY - f.created - 7 * DAY) / DAY for f in lectures)
        # over the break after the exam nobody looks (a next term may bring some back later)
        assert not [t for f in notes for t in f.needs if exam + 2 * DAY <= t < exam + 20 * DAY]
        judged += 1
    assert judged >= 4
    assert crunch / crunch_days > 5 * quiet / quiet_days  # per note and day


def test_flashcards_are_reviewed_at_growing_intervals(default: History):
    cards = [f for f in default.files if f.kind == "card" and len(f.needs) >= 5]
    assert len(cards) > 10
    gaps = [[b - a for a, b in itertools.pairwise(f.needs)] for f in cards]
    mean = [sum(g[k] for g in gaps) / len(gaps) for k in range(4)]
    assert mean[0] < mean[1] < mean[3] and mean[3] > 4 * mean[0]


def test_a_habit_is_needed_daily_for_weeks_then_dropped_and_sometimes_resumed(
    default: History,
):
    habits = [f for f in default.files if f.kind == "habit"]
    assert habits
    resumed = 0
    for f in habits:
        days = _days(f.needs)
        runs = [[days[0]]]
        for a, b in itertools.pairwise(days):
            if b - a > 10:
                runs.append([])
            runs[-1].append(b)
        for run in runs:
            if run[-1] - run[0] >= 7:
                assert len(run) >= 0.6 * (run[-1] - run[0] + 1)  # most days of the streak
        resumed += len(runs) > 1
        assert max(run[-1] - run[0] for run in runs) >= 5
    assert resumed >= 1


def test_a_superseded_version_comes_along_but_is_hardly_needed(default: History):
    drafts = {f.path: f for f in default.files if f.kind == "draft"}
    after_needs = along = successor_needs = 0
    old_days = 0.0
    successor_of = {}
    for path, f in drafts.items():
        v = int(path[path.rindex("-v") + 2: -3])
        nxt = drafts.get(f"{path[: path.rindex('-v')]}-v{v + 1}.md")
        if nxt is None:
            continue
        successor_of[nxt.path] = path
        after_needs += sum(t > nxt.created + DAY for t in f.needs)
        old_days += (default.end - nxt.created) / DAY
        successor_needs += len(nxt.needs)
    assert successor_of
    by_call: dict[str, set[str]] = {}
    for x in default.hits:
        if x.kind == "search":
            by_call.setdefault(x.call_id, set()).add(x.path)
    for cid, _ts, _q, needed in default.calls:
        if needed in successor_of:
            along += successor_of[needed] in by_call[cid]
    assert after_needs / old_days < 0.02  # hardly ever needed once replaced
    assert along > 2 * after_needs and along > 10  # yet it keeps coming along


def test_index_notes_are_read_by_path_and_lead_to_a_linked_note(default: History):
    index = {f.path: f for f in default.files if f.kind == "index"}
    assert index
    links = {p: {"memory/" + m for m in re.findall(r"\]\(([^)]+)\)", f.text)}
             for p, f in index.items()}  # fmt: skip
    gets = [x for x in default.hits if x.kind == "get"]
    followed = reads = 0
    for i, x in enumerate(gets):
        if x.path not in index or x.ts not in index[x.path].needs:
            continue  # (an index that came along with a search is sometimes read too)
        reads += 1
        nxt = gets[i + 1: i + 4]
        followed += any(y.session == x.session and y.ts - x.ts <= 130 and y.path in links[x.path]
                        for y in nxt)  # fmt: skip
    assert reads > 200 and reads == sum(len(f.needs) for f in index.values())
    assert followed > 0.3 * reads


def test_a_hobby_is_needed_only_in_its_season(default: History):
    hobbies: dict[str, list[float]] = {}
    for f in default.files:
        if f.kind == "hobby":
            hobbies.setdefault(f.path.rsplit("/", 1)[0], []).extend(f.needs)
    assert len(hobbies) >= 2
    for needs in hobbies.values():
        doys = sorted({datetime.fromtimestamp(t, UTC).timetuple().tm_yday for t in needs})
        gaps = [b - a for a, b in itertools.pairwise(doys)] + [doys[0] + 365 - doys[-1]]
        assert max(gaps) >= 130  # a long off-season every year


def test_the_recipe_rotation_changes_and_a_dropped_favourite_goes_quiet(default: History):
    recipes = [f for f in default.files if f.kind == "recipe"]
    joined = [f for f in recipes if len(f.needs) >= 4 and f.needs[0] > default.start + 60 * DAY]
    dropped = [f for f in recipes
               if any(k >= 3 and len(f.needs) - k <= 1 and default.end - t >= 120 * DAY
                      for k, t in enumerate(f.needs, 1))]  # fmt: skip
    assert joined and dropped
    assert sum(not f.needs for f in recipes) >= 5  # clipped to try, never cooked


def test_a_write_up_reads_weeks_old_dailies_together(default: History):
    dailies = [f for f in default.files if f.kind == "daily"]
    old = sorted((t, f.path) for f in dailies for t in f.needs if t > f.created + 14 * DAY)
    assert old and len(old) < 0.2 * sum(len(f.needs) for f in dailies)  # mostly needed fresh
    together = max(len({p for t, p in old if a <= t < a + 3 * DAY}) for a, _ in old)
    assert together >= 4  # but a write-up reads a stretch of them again within a few days
