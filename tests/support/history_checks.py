"""What every generated history family must be, checked the same way for each: reproducible
from its seed, consistent (hits of generated notes, after their creation; each search for a
note needed at that moment), of a heavy user's size, and readable by the replay and by
``write_history``. The families' own need processes are checked in their own test files."""

from __future__ import annotations

import random
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from support.histories import History, replay_inputs, write_history

DAY = 86400.0


def assert_reproducible(generate: Callable[..., History]) -> None:
    a, b, c = generate(3), generate(3), generate(4)

    def key(h: History) -> list[tuple[object, ...]]:
        return [(x.path, x.ts, x.kind, x.query, x.score, x.session) for x in h.hits]

    assert key(a) == key(b) and a.calls == b.calls
    assert [(f.path, f.text, f.needs) for f in a.files] == [(f.path, f.text, f.needs)
                                                             for f in b.files]  # fmt: skip
    assert key(a) != key(c)


def assert_consistent(h: History, agents: set[str]) -> None:
    """Hits in time order, of generated notes at or after their creation, by ``agents``;
    each note's text holds its words; daily notes named by their date."""
    created = {f.path: f.created for f in h.files}
    assert len(created) == len(h.files)
    assert [x.ts for x in h.hits] == sorted(x.ts for x in h.hits)
    for x in h.hits:
        assert x.path in created and x.ts >= created[x.path]
        assert h.start <= x.ts <= h.end
    assert {x.agent for x in h.hits} <= agents
    for f in h.files:
        assert f.size == len(f.text.encode()) and f.text.startswith("# ")
        assert all(f.created <= t < h.end for t in f.needs)
        assert all(w in f.text for w in f.words)
        if f.kind == "daily":
            assert re.fullmatch(r"memory/\d{4}-\d\d-\d\d\.md", f.path)
        else:
            assert f.path.startswith("memory/") and f.path.endswith(".md")


def assert_searches_are_for_needed_notes(h: History) -> None:
    """Each search call is for a note needed at that moment; its hits share the query, the
    time and the session, with a score each; every other call is a get of one note."""
    needs = h.needs
    by_call: dict[str, list[Any]] = {}
    for x in h.hits:
        by_call.setdefault(x.call_id, []).append(x)
    for cid, ts, query, needed in h.calls:
        assert query.strip() and ts in needs[needed]
        hits = by_call[cid]
        assert {x.kind for x in hits} == {"search"} and {x.query for x in hits} == {query}
        assert all(isinstance(x.score, float) for x in hits)
        assert len({x.path for x in hits}) == len(hits) and len({x.ts for x in hits}) == 1
        assert len({x.session for x in hits}) == 1
    searched = {cid for cid, *_ in h.calls}
    for cid, hits in by_call.items():
        if cid not in searched:
            assert [(x.kind, x.query, x.score) for x in hits] == [("get", None, None)]


def retrieval(h: History) -> tuple[int, int, int, list[int]]:
    """(searches, the needed note among the results, first among them, how often each
    other note came along, most first)."""
    by_call: dict[str, list[Any]] = {}
    for x in h.hits:
        if x.kind == "search":
            by_call.setdefault(x.call_id, []).append(x)
    found = first = 0
    along: Counter[str] = Counter()
    for cid, _ts, _q, needed in h.calls:
        ranked = [x.path for x in sorted(by_call[cid], key=lambda x: -(x.score or 0))]
        found += needed in ranked
        first += ranked[0] == needed
        along.update(p for p in ranked if p != needed)
    return len(h.calls), found, first, sorted(along.values(), reverse=True)


def assert_sampled_users_are_heavy_users(
    generate: Callable[..., History], sample: Callable[[random.Random], Any], default: Any,
    seed_base: int,
) -> None:  # fmt: skip
    drawn = [sample(random.Random(seed_base + s)) for s in range(3)]
    assert len(set(drawn)) == 3 and default not in drawn
    for s, p in enumerate(drawn):
        h = generate(s, p)
        assert 330 <= (h.end - h.start) / DAY <= 480
        assert 150 <= len(h.files) <= 650
        assert 2000 <= len(h.hits) <= 30_000 and len(h.calls) > 300


def assert_replay_and_write_history_read_it(h: History, tmp_path: Path, min_daily: int) -> None:
    inp = replay_inputs(h)
    assert inp["runs"] and len(inp["calls"]) == len(h.calls)
    daily = sum(1 for f in h.files if f.kind == "daily")
    assert sum(1 for f in inp["files"] if f.kind == "daily") == daily >= min_daily
    upto = h.start + 60 * DAY
    write_history(h, tmp_path / "ws", tmp_path / "state.db", upto=upto)
    assert all((tmp_path / "ws" / f.path).is_file() for f in h.files)
    with sqlite3.connect(tmp_path / "state.db") as conn:
        (hits,) = conn.execute("SELECT count(*) FROM hits").fetchone()
        (calls,) = conn.execute("SELECT count(*) FROM calls").fetchone()
    assert hits == sum(1 for x in h.hits if x.ts <= upto) > 0
    assert 0 < calls < hits
