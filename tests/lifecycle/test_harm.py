"""Harm, not only prediction (issue 28, item 7): of the archives later needed, what the agent
still reached, by replaying each need against the archive as it stood. Hand-made histories
(one archive each, so every count is known) and one generated history (the counts agree
with the replay's own false archives)."""

from __future__ import annotations

import pytest

from memoryd.policy import candidates as pc
from memoryd.policy import harm as hm
from memoryd.policy import replay as rp
from support.histories import generated_need_events, replay_inputs
from support.histories_e import generate_e
from support.reference_rules import archive_recall_picks, install_need_events, restore_index

pytestmark = pytest.mark.unit

DAY = 86400.0
T = 100 * DAY  # the run that archived memory/espresso.md
TEXTS = {
    "memory/espresso.md": "# espresso\n\ngrind size for the lever machine, tamping.\n",
    "memory/garden.md": "# garden\n\ntomatoes, watering schedule, compost.\n",
}


def _harm(events: list[hm.NeedEvent], calls: list[rp.Call]) -> hm.Harm:
    hits = [rp.ReplayHit(e.path, e.ts, "get" if e.via == "read" else "search") for e in events]
    return hm.harm(
        [(T, ["memory/espresso.md"])], hits, events, calls,
        candidates=restore_index(calls, TEXTS).__getitem__,
        recall=archive_recall_picks, texts=TEXTS,
    )  # fmt: skip


def test_a_read_of_the_archived_path_reaches_it_in_that_call_with_the_plugin():
    h = _harm([hm.NeedEvent("memory/espresso.md", T + DAY, "read")], [])
    assert (h.needed, h.same_call, h.later_call, h.not_reached) == (1, 1, 0, 0)
    # without the plugin OpenClaw answers the read empty; the daemon brings it back after
    w = h.without_plugin()
    assert (w.same_call, w.later_call, w.not_reached) == (0, 1, 0)


def test_a_search_in_the_notes_own_words_reaches_it_in_that_call_with_the_plugin():
    calls = [rp.Call(T + DAY, "espresso grind", "memory/espresso.md")]
    h = _harm([hm.NeedEvent("memory/espresso.md", T + DAY, "search", 0)], calls)
    # the plugin's search hook restores it before the search and answers that call with it
    assert (h.same_call, h.later_call, h.not_reached) == (1, 0, 0)
    assert h.ways[("same", "search")] == 1
    # without the plugin the search misses it; the daemon brings it back for the next call
    w = h.without_plugin()
    assert (w.same_call, w.later_call, w.not_reached) == (0, 1, 0)
    assert w.ways == {("later", "search"): 1}
    # and as it was before the search hook (the next search found it)
    hits = [rp.ReplayHit("memory/espresso.md", T + DAY)]
    before = hm.harm([(T, ["memory/espresso.md"])], hits,
                     [hm.NeedEvent("memory/espresso.md", T + DAY, "search", 0)], calls,
                     candidates=restore_index(calls, TEXTS).__getitem__,
                     search_same_call=False)  # fmt: skip
    assert (before.same_call, before.later_call) == (0, 1)


def test_other_words_for_the_same_thing_reach_nothing_until_a_later_read():
    calls = [rp.Call(T + DAY, "coffee beans", "memory/espresso.md")]
    synonym = hm.NeedEvent("memory/espresso.md", T + DAY, "search", 0)
    h = _harm([synonym], calls)
    assert (h.needed, h.not_reached) == (1, 1)
    h = _harm([synonym, hm.NeedEvent("memory/espresso.md", T + 3 * DAY, "read")], calls)
    assert (h.same_call, h.later_call, h.not_reached) == (0, 1, 0)
    assert h.ways[("later", "read")] == 1


def test_a_need_after_the_horizon_is_no_harm():
    h = _harm([hm.NeedEvent("memory/espresso.md", T + 61 * DAY, "read")], [])
    assert h.needed == 0


def test_recall_reaches_what_the_search_restore_does_not():
    # "lever" is in the note, but the query's other words are not: below the restore
    # threshold, so restore on demand stays still; recall finds the one archived note
    calls = [rp.Call(T + DAY, "lever coffee beans", "memory/espresso.md")]
    h = _harm([hm.NeedEvent("memory/espresso.md", T + DAY, "search", 0)], calls)
    assert h.ways[("later", "recall")] == 1 and h.not_reached == 0


def test_on_a_generated_history_the_needed_archives_are_the_replays_need_false_archives():
    inp = replay_inputs(generate_e(3))
    policies = [pc.policy_named("seed"), pc.policy_named("likely")]
    res = rp.replay(inp["files"], inp["hits"], inp["runs"], policies, needs=inp["needs"])
    events = generated_need_events(inp["needs"], inp["calls"], inp["hits"])
    cands = restore_index(inp["calls"], inp["texts"])
    for r in res:
        h = hm.harm(r.decisions, inp["hits"], events, inp["calls"],
                    candidates=cands.__getitem__, recall=archive_recall_picks,
                    texts=inp["texts"])  # fmt: skip
        assert r.need is not None and h.needed == r.need.false_archives > 0
        assert h.same_call + h.later_call + h.not_reached == h.needed
        # path reads are most of this family's needs: most archives are reached at once
        assert h.same_call > h.later_call


def test_with_the_archive_in_openclaws_index_a_search_that_finds_it_reaches_it_at_once():
    # other words for the same thing: memoryd's keyword match misses them, OpenClaw's own
    # search (embeddings) found the note; with the archive in its index it finds the copy
    calls = [rp.Call(T + DAY, "coffee beans", "memory/espresso.md")]
    synonym = hm.NeedEvent("memory/espresso.md", T + DAY, "search", 0)
    hits = [rp.ReplayHit(synonym.path, synonym.ts)]
    cands = restore_index(calls, TEXTS).__getitem__
    h = hm.harm([(T, ["memory/espresso.md"])], hits, [synonym], calls, candidates=cands,
                archive_indexed=True)  # fmt: skip
    assert (h.same_call, h.not_reached) == (1, 0) and h.ways == {("same", "index"): 1}
    # OpenClaw's own search needs no plugin: the same without it
    assert h.without_plugin().same_call == 1
    # and without the archive in the index, the same need is not reached at all
    assert _harm([synonym], calls).not_reached == 1


def test_a_need_openclaws_search_missed_anyway_is_not_counted_as_the_archives_cost():
    # the search did not find the note (its results in the history did not hold it): kept
    # in the workspace, it would have been missed the same; a later read found it
    calls = [rp.Call(T + DAY, "what was that about beans", "memory/espresso.md")]
    missed = hm.NeedEvent("memory/espresso.md", T + DAY, "search", 0, found=False)
    read = hm.NeedEvent("memory/espresso.md", T + 5 * DAY, "read")
    h = _harm([missed], calls)
    assert (h.needed, h.not_reached) == (1, 1)
    assert (h.kept_first, h.kept_any, h.kept_not_reached) == (0, 0, 0)
    h = _harm([missed, read], calls)
    assert (h.needed, h.later_call) == (1, 1)
    # its first need would have missed the kept note too; a later one would have found it
    assert (h.kept_first, h.kept_any, h.kept_not_reached) == (0, 1, 0)
    assert h.document()["as_if_kept"]["some_need_found"] == 1
    # a first need that found it counts in both, with how it was reached
    h = _harm([read], [])
    assert (h.kept_first, h.same_call_as_kept_rate) == (1, 1.0)
    assert h.without_plugin().same_call_as_kept_rate == 0.0


def test_generated_searches_found_the_note_exactly_when_their_results_held_it():
    inp = replay_inputs(generate_e(3))
    events = generated_need_events(inp["needs"], inp["calls"], inp["hits"])
    returned = {(h.path, h.ts) for h in inp["hits"] if h.kind == "search"}
    searches = [e for e in events if e.via == "search"]
    assert searches and all(e.found == ((e.path, e.ts) in returned) for e in searches)
    assert all(e.found for e in events if e.via == "read")
    assert not any(e.found for e in events if e.via == "other")


def test_on_an_install_every_need_is_one_openclaws_search_found():
    # a search hit with no call recorded at its time is still a hit: the search found it
    hits = [rp.ReplayHit("memory/espresso.md", T + DAY, "search", 1),
            rp.ReplayHit("memory/garden.md", T + 2 * DAY, "get")]  # fmt: skip
    events = install_need_events(hits, [])
    assert [(e.via, e.found) for e in events] == [("other", True), ("read", True)]
    prepared = rp.prepare(rp.by_path(hits))
    lazy = hm.need_index(prepared, [])
    assert [e for p in sorted(lazy.events) for e in lazy.events[p]] == events
