"""``explain`` decides on one file's rows, and its verdict is the plan's for that file.

``explain`` reads only the file's hits (and its calls' rows, which rank them), while
``expire`` reads every hit; the two must never disagree. A workspace is generated from a
seed: searches with scores (some unknown), reads in the same session, hits under another
spelling of a listed name (folded, as on a Mac: ``MEMORYD_FS_TRAITS=macos``), some in the
same call as the name itself, hits within and beyond the clock-skew allowance, a deleted
note's hits and a mark. Real SQLite, real files; the last test runs ``python -m memoryd``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memoryd import signals as signals_module
from memoryd.config import EXPIRE_POLICIES, parse_config, resolve_paths
from memoryd.policy import expire as expire_policy
from memoryd.policy.expire_plan import (
    build_plan,
    decision_of,
    policy_decisions,
    promotion_candidates,
)
from memoryd.policy.replay import is_strong
from memoryd.signals import Snapshot, snapshot
from memoryd.store import Store
from memoryd.strength import rows_of_files, strength_pairs, strong_flags
from support.explain_state import DAY, NOW, build
from support.inprocess import memoryd as run_memoryd


def _snapshot(state: Path, policy: str) -> tuple[object, Snapshot]:
    cfg = parse_config({"openclaw": {"state_dir": str(state)}, "expire": {"policy": policy}})
    paths = resolve_paths(cfg, {})
    store = Store.open(paths.db)
    return cfg, snapshot(cfg, paths, store, NOW)


@pytest.fixture(params=[3, 11])
def workspace(request, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list]:
    monkeypatch.setenv("MEMORYD_FS_TRAITS", "macos")
    return build(tmp_path, request.param)


@pytest.mark.parametrize("policy", EXPIRE_POLICIES)
def test_one_files_verdict_is_its_verdict_in_the_plan_for_every_file(workspace, policy) -> None:
    state, rels = workspace
    cfg, snap = _snapshot(state, policy)
    if policy == "seed":
        nominated = promotion_candidates(cfg, snap)
        every = expire_policy.plan(snap.signals, cfg.expire, snap.marked, snap.pins, nominated)
    else:
        every = policy_decisions(cfg, snap)
    assert sorted(d.path for d in every) == sorted(rels)
    for d in every:
        assert decision_of(cfg, snap, d.path) == d, d.path
    # The plan the user is shown (pruning off: its verdicts are these) agrees too.
    plan = build_plan(cfg, snap)
    shown = {i.path: (i.to is not None, i.rule, i.reason, i.p_need) for i in plan.archive}
    shown.update({i.path: (False, i.rule, i.reason, i.p_need) for i in plan.keep})
    for d in every:
        alone = decision_of(cfg, snap, d.path)
        assert shown[d.path] == (
            alone.action == "archive",
            alone.rule,
            alone.reason,
            alone.numbers.get("p_need"),
        )
    # The generated history does reach what the test is about: folded spellings and marks.
    assert snap.attribution.owner and snap.marked


def test_one_files_measures_and_rows_are_those_read_with_every_file(workspace) -> None:
    state, rels = workspace
    _cfg, alone = _snapshot(state, "likely")
    _cfg, every = _snapshot(state, "likely")
    all_rows = every.hit_rows(raw=False)
    for rel in rels:
        one, sig = alone.signals_of(rel), every.by_path[rel]
        assert one is not None
        for measure in ("activation", "fast_rate", "slow_rate", "trend", "daily",
                        "distinct_days", "queries", "hit_times"):  # fmt: skip
            assert getattr(one, measure) == getattr(sig, measure), (rel, measure)
        assert alone.hit_rows([rel], raw=False) == rows_of_files(all_rows, [rel])
    assert alone._hits is None  # one file at a time never read every hit
    assert alone.signals_of("memory/not-there.md") is None


def _queries_as_every_hit_counts_them(snap: Snapshot, days: float) -> list[str]:
    """The definition: over every hit at or before now, each call's query once."""
    since = snap.now - days * DAY
    counts: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for hits in snap.hits.values():
        for h in hits:
            if h.ts >= since and h.query and (h.agent, h.call_id) not in seen:
                seen.add((h.agent, h.call_id))
                counts[h.query.strip()] = counts.get(h.query.strip(), 0) + 1
    return [q for q, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


@pytest.mark.parametrize("share", [0.0, 0.1, 1.0])  # the plan by the call key, either, by ts
def test_recent_queries_by_sql_are_those_every_hit_gives(
    workspace, share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(signals_module, "RECENT_BY_TS_MAX", share)
    state, _rels = workspace
    _cfg, snap = _snapshot(state, "likely")
    for days in (0, 1, 7, 30, 400):
        expected = _queries_as_every_hit_counts_them(snap, days)
        assert snap.recent_queries(days) == expected, days
    assert snap.recent_queries(30)  # the workspace has recent queries at all


@pytest.mark.subprocess
def test_explain_prints_the_verdict_expire_plans(tmp_path: Path) -> None:
    """As a user sees it: ``explain --json`` of a file and ``expire --dry-run --json``."""
    state, rels = build(tmp_path, 5, files=24, calls=500)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(OPENCLAW_STATE_DIR=str(state), MEMORYD_NOW=str(NOW), MEMORYD_FS_TRAITS="macos")

    def run(*args: str) -> dict:
        proc = run_memoryd([*args, "--json", "--no-scan"], env=env)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    plan = run("expire", "--dry-run")
    planned = {i["path"]: ("archive", i) for i in plan["archive"]}
    planned.update({i["path"]: ("keep", i) for i in plan["keep"]})
    assert sorted(planned) == sorted(rels)
    for rel in rels[::4]:
        exp = run("explain", rel)["expire"]
        action, item = planned[rel]
        assert (exp["action"], exp["rule"], exp["reason"]) == (action, item["rule"], item["reason"])
        assert exp["numbers"].get("p_need") == item.get("p_need")


_rows = st.lists(
    st.tuples(
        st.sampled_from(["main", "main", "main", "ops"]),
        st.sampled_from(["c1", "c2"]),
        st.sampled_from(["memory/a.md", "memory/b.md"]),
        st.sampled_from(["search", "get"]),
        st.sampled_from([0.0, 1.0, 2.0, 3.0]),  # ties: a read at the very time of the search
        st.sampled_from([0.2, 0.5, 0.9, 0.2, 0.5, 0.9, None, float("nan")]),
        st.sampled_from(["s1", "s1", "s1", "s2", "", None]),
    ),
    max_size=14,
)


_SECOND_READ_AT_3 = [
    ("main", "c1", "memory/a.md", "search", 1.0, 0.9, "s1"),
    ("main", "c1", "memory/b.md", "search", 1.0, 0.5, "s1"),  # second, read at 3 (by t = 3)
    ("main", "g1", "memory/b.md", "get", 3.0, None, "s1"),
    ("main", "c2", "memory/a.md", "search", 2.0, float("nan"), "s2"),  # nothing ranks above
    ("main", "c2", "memory/b.md", "search", 2.0, 0.1, "s2"),
]


@settings(max_examples=60, deadline=None)
@example(rows=_SECOND_READ_AT_3, t=3.0)
@example(rows=_SECOND_READ_AT_3, t=2.9)
@given(rows=_rows, t=st.sampled_from([-1.0, 0.0, 1.0, 1.5, 3.0, float("inf")]))
def test_the_plans_strong_flags_are_the_strength_rule(rows, t: float) -> None:
    """The expire plan's one pass (no ranks counted) says "strong" exactly where the rank
    and read of :func:`strength_pairs` and ``is_strong`` do, on any rows."""
    expected = [
        is_strong(kind, rank, read_at, t)
        for (_a, _c, _p, kind, _ts, _s, _se), (rank, read_at) in zip(
            rows, strength_pairs(rows), strict=True
        )
    ]
    assert strong_flags(rows, t) == expected
