"""Family B of generated histories (support.histories_b): the held-out family of
issue 24 must be a history the replay reads, reproducible from its seed, and really of
other need processes than family A (memoryless notes, hubs that only come along)."""

from __future__ import annotations

import random

from memoryd.policy import replay as rp
from support.histories import replay_inputs
from support.histories_b import FamilyBParams, generate_b, sample_params_b

SMALL = FamilyBParams(days=200, projects=3, rituals=2, synonym_refs=4, memoryless=6, hubs=2,
                      scratch=15)  # fmt: skip


def test_the_same_seed_gives_the_same_history_and_another_seed_another():
    a, b, c = generate_b(3, SMALL), generate_b(3, SMALL), generate_b(4, SMALL)
    assert [(h.path, h.ts, h.score) for h in a.hits] == [(h.path, h.ts, h.score) for h in b.hits]
    assert [h.ts for h in a.hits] != [h.ts for h in c.hits]


def test_every_search_is_for_a_needed_note_that_is_among_its_results():
    h = generate_b(5, SMALL)
    results: dict[str, set[str]] = {}
    for x in h.hits:
        if x.kind == "search":
            results.setdefault(x.call_id, set()).add(x.path)
            assert x.score is not None and x.session
    needs = h.needs
    for call, ts, query, needed in h.calls:
        assert query.strip()
        assert needed in results[call]
        assert ts in needs[needed]


def test_hubs_come_along_far_more_often_than_they_are_needed():
    h = generate_b(6, SMALL)
    hubs = {f.path for f in h.files if f.kind == "hub"}
    hub_hits = sum(1 for x in h.hits if x.path in hubs)
    hub_needs = sum(len(h.needs.get(p, ())) for p in hubs)
    assert hub_hits > 5 * max(hub_needs, 1)


def test_sampled_parameters_differ_and_the_replay_reads_the_history():
    params = sample_params_b(random.Random(1))
    assert params != FamilyBParams()
    h = generate_b(7, SMALL)
    inp = replay_inputs(h)
    assert inp["runs"] and inp["calls"]
    (res,) = rp.replay(inp["files"], inp["hits"], inp["runs"], [rp_seed()], needs=inp["needs"])
    assert res.archived > 0 and res.need is not None


def rp_seed():
    from memoryd.policy.candidates import Seed

    return Seed()
