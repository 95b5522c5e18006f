"""Decisions that agree with themselves (issue 28, item 5), on real files and a real database.

The live month of issue 28: ``memory/2026-11-01.md``, returned by 20 searches on one day a
month earlier, got a 0 % chance and was archived while ``explain`` said "promote:
CANDIDATE". A current promotion candidate is never archived, under every policy, and
``explain`` says the same as the plan.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memoryd.config import parse_config, resolve_paths
from memoryd.policy.expire_plan import build_plan, decision_of
from memoryd.signals import snapshot
from memoryd.store import Store
from support.inprocess import memoryd as run_memoryd

DAY = 86400.0
NOW = 1_796_000_000.0  # 2026-11-30
BUSY = "memory/2026-10-01.md"  # 20 hits on one day, a month ago
QUIET = "memory/2026-09-01.md"  # never hit


def _install(root: Path) -> Path:
    state = root / "oc"
    ws = state / "workspace"
    (ws / "memory").mkdir(parents=True)
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    for rel in (BUSY, QUIET):
        p = ws / rel
        p.write_text(f"# {rel}\n\nthe espresso grinder settings\n")
        os.utime(p, (NOW - 90 * DAY, NOW - 90 * DAY))
    cfg = parse_config({"openclaw": {"state_dir": str(state)}})
    paths = resolve_paths(cfg, {})
    paths.memoryd_dir.mkdir(parents=True, exist_ok=True)
    with Store.open(paths.db) as store, store.transaction():
        day = NOW - 31 * DAY
        store.conn.executemany(
            "INSERT INTO hits(agent, call_id, memory_path, kind, ts, query, score, session) "
            "VALUES ('main', ?, ?, 'search', ?, 'espresso grinder', 0.9, 's1')",
            [(f"c{i}", BUSY, day + i * 60) for i in range(20)],
        )
    return state


@pytest.mark.parametrize("policy", ["likely", "seed"])
def test_a_promotion_candidate_is_never_archived_and_explain_says_why(
    tmp_path: Path, policy: str
) -> None:
    state = _install(tmp_path)
    cfg = parse_config({"openclaw": {"state_dir": str(state)}, "expire": {"policy": policy}})
    paths = resolve_paths(cfg, {})
    with Store.open(paths.db, readonly=True) as store:
        snap = snapshot(cfg, paths, store, NOW)
        plan = build_plan(cfg, snap)
        kept = {k.path: k for k in plan.keep}
        assert BUSY in kept, [a.path for a in plan.archive]
        assert kept[BUSY].rule == "candidate"
        assert "promotion candidate" in kept[BUSY].reason
        assert "20 hits in total" in kept[BUSY].reason
        assert decision_of(cfg, snap, BUSY).rule == "candidate"
        # the never-hit note is no candidate: it goes as before
        assert QUIET in {a.path for a in plan.archive}


def test_explain_and_expire_dry_run_agree_on_the_candidate(tmp_path: Path) -> None:
    state = _install(tmp_path)
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(f'[openclaw]\nstate_dir = "{state}"\n')
    env = {"MEMORYD_NOW": str(NOW)}
    dry = run_memoryd(["--config", str(cfg_file), "expire", "--dry-run", "--json", "--no-scan"],
                      env=env)  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    doc = json.loads(dry.stdout)
    keep = {k["path"]: k for k in doc["keep"]}
    assert keep[BUSY]["rule"] == "candidate"
    explained = run_memoryd(["--config", str(cfg_file), "explain", BUSY, "--no-scan"], env=env)
    assert explained.returncode == 0, explained.stderr
    assert "CANDIDATE" in explained.stdout
    assert "promotion candidate" in explained.stdout


def test_explain_says_in_plain_words_why_many_past_hits_get_a_low_chance(tmp_path: Path) -> None:
    """With promotion off, the busy note of one day a month ago gets a low chance: explain
    must say why (one day's burst of use), not print "0 %" next to 20 hits unexplained."""
    state = _install(tmp_path)
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(
        f'[openclaw]\nstate_dir = "{state}"\n'
        "[promote]\nhits_7d = 1000\nhits_14d = 1000\nhits_total = 1000\n"
    )
    env = {"MEMORYD_NOW": str(NOW)}
    done = run_memoryd(["--config", str(cfg_file), "explain", BUSY, "--no-scan", "--json"], env=env)
    assert done.returncode == 0, done.stderr
    exp = json.loads(done.stdout)["expire"]
    assert exp["numbers"]["p_need"] < 0.2, exp
    why = exp["why_low"]
    assert "20 past hits" in why and "fell on 1 day" in why and "not how many times" in why
    text = run_memoryd(["--config", str(cfg_file), "explain", BUSY, "--no-scan"], env=env).stdout
    assert "why so low with 20 past hits" in text
    # a note with no hits has nothing to explain
    quiet = run_memoryd(["--config", str(cfg_file), "explain", QUIET, "--no-scan", "--json"],
                        env=env)  # fmt: skip
    assert "why_low" not in json.loads(quiet.stdout)["expire"]


def test_an_import_of_old_notes_is_new_for_expire_dry_run_and_explain(tmp_path: Path) -> None:
    """A note's age counts from the later of its own date and the moment memoryd first
    listed it: notes copied in with mtimes years back are not archived on arrival."""
    state = _install(tmp_path)
    ws = state / "workspace"
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(f'[openclaw]\nstate_dir = "{state}"\n[expire]\npolicy = "seed"\n')

    def memoryd(now: float, *args: str) -> str:
        done = run_memoryd(["--config", str(cfg_file), *args, "--no-scan"],
                           env={"MEMORYD_NOW": str(now)})  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = json.loads(memoryd(NOW, "expire", "--force", "--json"))
    assert QUIET in {a["path"] for a in first["archive"]}  # the baseline: own dates
    old = NOW - 3 * 365 * DAY
    for name in ("imported-a.md", "imported-b.md"):
        p = ws / "memory" / name
        p.write_text("# an old note, copied in today\n")
        os.utime(p, (old, old))
    later = NOW + 5 * DAY
    dry = json.loads(memoryd(later, "expire", "--dry-run", "--json"))
    kept = {k["path"]: k for k in dry["keep"]}
    assert kept["memory/imported-a.md"]["rule"] == "young", dry
    forced = json.loads(memoryd(later, "expire", "--force", "--json"))
    assert not {a["path"] for a in forced["archive"]} & {"memory/imported-a.md"}
    assert (ws / "memory" / "imported-a.md").exists()
    text = memoryd(later + DAY, "explain", "memory/imported-b.md")
    assert "first listed by memoryd" in text and "1.0 days old" in text, text
    # 31 days after it was first listed, it is old like any note
    month = json.loads(memoryd(later + 31 * DAY, "expire", "--dry-run", "--json"))
    assert "memory/imported-a.md" in {a["path"] for a in month["archive"]}


def test_expire_force_json_lists_each_archive_as_the_dry_run_did(tmp_path: Path) -> None:
    """``--force applies exactly this plan``: its ``--json`` dropped each archive's ``rule``
    and ``p_need``, so a script holding the run to the dry run it read saw them differ."""
    state = _install(tmp_path)
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(f'[openclaw]\nstate_dir = "{state}"\n')

    def memoryd(*args: str) -> dict:
        done = run_memoryd(["--config", str(cfg_file), *args, "--json", "--no-scan"],
                           env={"MEMORYD_NOW": str(NOW)})  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    dry = memoryd("expire", "--dry-run")
    forced = memoryd("expire", "--force")
    assert dry["archive"] and "p_need" in dry["archive"][0]
    assert [{k: v for k, v in a.items() if k != "id"} for a in forced["archive"]] == dry["archive"]
    assert all(isinstance(a["id"], int) for a in forced["archive"])
