"""Family E of generated histories (support.histories_e): reproducible, consistent,
of a heavy user's size, readable by the replay and ``write_history``, and made of what it
says: need set off by the outside world (alert storms, meetings, deadlines, disputes about a
past day) and met by path reads much of the time (issue 28's harm measure needs such a
family: a path read is what OpenClaw answered empty for an archived note)."""

from __future__ import annotations

import itertools

import pytest

from support import history_checks as hc
from support.histories import History, generated_need_events, replay_inputs
from support.histories_e import FamilyEParams, generate_e, sample_params_e

DAY = 86400.0


@pytest.fixture(scope="module")
def default() -> History:
    return generate_e(7)


def test_the_same_seed_gives_the_same_history_and_another_seed_another():
    hc.assert_reproducible(generate_e)


def test_every_hit_is_of_a_generated_note_at_or_after_its_creation(default: History):
    hc.assert_consistent(default, agents={"main"})


def test_every_search_is_for_a_note_needed_at_that_moment(default: History):
    hc.assert_searches_are_for_needed_notes(default)


def test_sampled_users_differ_and_give_histories_of_a_heavy_users_size():
    hc.assert_sampled_users_are_heavy_users(generate_e, sample_params_e, FamilyEParams(), 90_000)


def test_the_replay_and_write_history_read_it(default: History, tmp_path):
    hc.assert_replay_and_write_history_read_it(default, tmp_path, min_daily=100)


def test_most_needs_are_path_reads_and_every_need_is_a_call(default: History):
    inp = replay_inputs(default)
    events = generated_need_events(inp["needs"], inp["calls"], inp["hits"])
    via = [e.via for e in events]
    assert "other" not in via  # each need is a read or a search the history holds
    assert 0.5 < via.count("read") / len(via) < 0.9


def test_a_runbook_is_read_in_storms_months_apart(default: History):
    runbook = next(f for f in default.files if f.path.startswith("memory/runbooks/"))
    days = sorted({int((t - default.start) // DAY) for t in runbook.needs})
    gaps = [b - a for a, b in itertools.pairwise(days)]
    assert gaps and max(gaps) > 30  # storms are far apart, nothing in between


def test_a_dispute_reads_a_daily_note_months_after_its_day(default: History):
    late = [
        f for f in default.files
        if f.kind == "daily" and any(t - f.created > 20 * DAY for t in f.needs)
    ]  # fmt: skip
    assert late  # an outside question about a past day


def test_an_import_of_old_notes_arrives_on_one_day_and_is_rarely_needed(default: History):
    imported = [f for f in default.files if f.path.startswith("memory/imported/")]
    assert len({f.created // DAY for f in imported}) == 1
    asked = sum(1 for f in imported if f.needs)
    assert 0 < asked < 0.5 * len(imported)
