"""``explain`` says what the expire plan will do with a file when pruning or capacity is on.

The policy's verdict (KEEP: still in use) is not the plan's when the file's score is among
the lowest and pruning or capacity control archives it: a user reading "expire: KEEP" must
not find the note moved by the next ``expire``. Workspaces from support.explain_state's
generator; ``python -m memoryd`` as a user runs it, real files and SQLite.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memoryd.config import parse_config, resolve_paths
from memoryd.policy.expire_plan import build_plan, planned_decision_of
from memoryd.signals import snapshot
from memoryd.store import Store
from support.explain_state import NOW, build
from support.inprocess import memoryd as run_memoryd

# Pruning alone, capacity alone, both (capacity under the file count: some go by it),
# and a fraction cap that keeps some files below the threshold.
SCORE_CONFIGS = [
    {"prune_enabled": True, "prune_threshold": 0.65, "max_prune_fraction": 0.5},
    {"capacity_enabled": True, "capacity": 15, "max_prune_fraction": 0.5},
    {"prune_enabled": True, "prune_threshold": 0.61, "capacity_enabled": True, "capacity": 18},
    {"prune_enabled": True, "prune_threshold": 0.9, "max_prune_fraction": 0.1},
]


# Promotion candidates are never archived (issue 28); with promote's default thresholds most
# of these generated notes would be one, and pruning would have nothing left to take.
NO_CANDIDATES = {"hits_7d": 10**6, "hits_14d": 10**6, "hits_total": 10**6}


def _verdicts(plan) -> dict[str, tuple[str, str, str, float | None]]:
    out = {i.path: ("archive", i.rule, i.reason, i.p_need) for i in plan.archive}
    out.update({i.path: ("keep", i.rule, i.reason, i.p_need) for i in plan.keep})
    return out


@pytest.mark.parametrize("policy", ["seed", "likely"])
@pytest.mark.parametrize("score", SCORE_CONFIGS)
def test_one_files_planned_verdict_is_the_plans(tmp_path: Path, policy: str, score) -> None:
    state, rels = build(tmp_path, 7, files=30, calls=500)
    raw = {
        "openclaw": {"state_dir": str(state)},
        "expire": {"policy": policy},
        "score": score,
        "promote": NO_CANDIDATES,
    }
    cfg = parse_config(raw)
    paths = resolve_paths(cfg, {})
    with Store.open(paths.db) as store:
        plan = _verdicts(build_plan(cfg, snapshot(cfg, paths, store, NOW)))
        # Pruning or capacity did move some of the policy's keeps (what the test is about).
        assert any(rule in ("prune", "capacity") for _a, rule, _r, _p in plan.values())
        for rel in rels:
            snap = snapshot(cfg, paths, store, NOW)  # a fresh one, as explain has
            d = planned_decision_of(cfg, snap, rel)
            assert (d.action, d.rule, d.reason, d.numbers.get("p_need")) == plan[rel], rel


@pytest.mark.subprocess
def test_explain_says_the_plan_archives_a_file_the_policy_keeps(tmp_path: Path) -> None:
    """As a user sees it: ``explain`` (text, --json) of files the plan prunes, and a kept one."""
    state, _rels = build(tmp_path, 7, files=24, calls=400)
    config = tmp_path / "memoryd.toml"
    config.write_text(
        f'[openclaw]\nstate_dir = "{state}"\n[expire]\npolicy = "likely"\n'
        "[score]\nprune_enabled = true\nprune_threshold = 0.65\nmax_prune_fraction = 0.5\n"
        "[promote]\nhits_7d = 1000000\nhits_14d = 1000000\nhits_total = 1000000\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(MEMORYD_NOW=str(NOW))

    def run(*args: str) -> str:
        proc = run_memoryd(["--config", str(config), *args, "--no-scan"], env=env)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    plan = json.loads(run("expire", "--dry-run", "--json"))
    pruned = [i for i in plan["archive"] if i["rule"] == "prune"]
    assert pruned
    for item in pruned[:3]:
        doc = json.loads(run("explain", item["path"], "--json"))["expire"]
        assert (doc["action"], doc["rule"], doc["reason"]) == ("archive", "prune", item["reason"])
        assert doc["policy_verdict"]["action"] == "keep"  # what the policy alone said
        text = run("explain", item["path"])
        line = next(x for x in text.splitlines() if x.startswith("expire:"))
        assert line.startswith(f"expire: ARCHIVE — {item['reason']}"), line
        assert "KEEP" in text.split("expire:", 1)[1].splitlines()[1], text  # the policy's
    # Below the threshold, yet kept by the cap on one run's share (12 of 24 go): said so.
    capped = 0
    for item in plan["keep"]:
        doc = json.loads(run("explain", item["path"], "--json"))
        assert (doc["expire"]["action"], doc["expire"]["rule"]) == ("keep", item["rule"])
        if doc["score"]["total"] < 0.65 and item["rule"] not in ("protected", "marked", "pinned"):
            line = next(x for x in run("explain", item["path"]).splitlines() if "prune:" in x)
            assert "kept this run" in line and "at most 50% of the files" in line, line
            capped += 1
    assert capped
