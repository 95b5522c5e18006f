"""`memoryd simulate`, hit strength and the replay-chosen default.

The replay core is tested on small hand-made histories whose answers are worked
out in the comments; the command end to end on a generated year (real files,
real SQLite, ``python -m memoryd``) against an independent re-count written here
as plain loops; hit strength from real transcript lines through a real scan.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.policy import candidates as pc
from memoryd.policy import replay as rp
from memoryd.policy import restore_match as rm
from memoryd.strength import HitRow, hit_strengths
from support import research_policies as rpol
from support import transcripts as tx
from support.histories import (
    GenParams,
    generate,
    replay_inputs,
    sample_params,
    write_history,
)
from support.inprocess import memoryd as run_memoryd

DAY = 86400.0
T0 = 1_700_000_000.0


def at(days: float) -> float:
    return T0 + days * DAY


def hits_at(path: str, days: list[float], **kw: object) -> list[rp.ReplayHit]:
    return [rp.ReplayHit(path, at(d), **kw) for d in days]  # type: ignore[arg-type]


RUNS = [at(30 * n) for n in range(1, 11)]  # days 30, 60, …, 300


def by_name(results: list[rp.PolicyResult]) -> dict[str, rp.PolicyResult]:
    return {r.name: r for r in results}


# --------------------------------------------------------------------------- hand-made


def test_a_file_hit_every_40_days_is_lost_by_the_seed_rule_every_time() -> None:
    # Hits at days 0.5, 40.5, …; runs every 30 days. Seed: young at 30; at 60 one hit in
    # [30, 60] → archive, back at 80.5; 90 archive, back 120.5; 120 still out; 150, 180,
    # 210 archive; 240 still out (back 240.5); 270, 300 archive: 7 archives, all false.
    f = rp.ReplayFile("memory/people.md", at(0), 100)
    hits = hits_at(f.path, [0.5 + 40 * k for k in range(10)], rank=1)
    res = by_name(rp.replay([f], hits, RUNS, [pc.Seed(), pc.Never(), rpol.Rhythm()]))
    seed = res["seed"]
    archived_on = [round((t - T0) / DAY) for t, a in seed.decisions if a]
    assert archived_on == [60, 90, 150, 180, 210, 270, 300]
    assert seed.archived == seed.hits.false_archives == seed.hits.strong_false_archives == 7
    assert seed.false_archive_rate == 1.0
    assert seed.hits.cold_total == 0  # always hit within 60 days: never cold
    assert res["none"].archived == 0
    # rhythm keeps it once it has seen a 40-day gap (silence ≤ max(45, 1.5 × 40))
    assert res["rhythm"].hits.false_archives == 0
    assert rp.replay([f], hits, RUNS, [pc.Likely()])[0].archived == 0
    assert len(seed.decisions) == len(RUNS)  # every run listed, empty ones included


def test_a_monthly_file_is_archived_each_month_by_seed_and_kept_by_rhythm() -> None:
    # Hit the day after each run (days 1, 31, 61, …): the seed rule sees one hit in its
    # window at every run from day 60 on and archives it nine times, each false.
    f = rp.ReplayFile("memory/finances.md", at(0), 10)
    hits = hits_at(f.path, [1 + 30 * k for k in range(11)], rank=1)
    res = by_name(rp.replay([f], hits, RUNS, [pc.Seed(), rpol.Rhythm(), pc.Likely()]))
    assert res["seed"].archived == res["seed"].hits.false_archives == 9
    assert res["rhythm"].archived == 0
    assert res["likely"].archived == 0
    # The same hits as a file that only ever came along (3rd result, never read): the
    # seed rule cannot tell the difference, likely can (and lets it go).
    along = hits_at(f.path, [1 + 30 * k for k in range(11)], rank=3)
    res = by_name(rp.replay([f], along, RUNS, [pc.Seed(), pc.Likely()]))
    assert res["seed"].archived == 9 and res["likely"].archived == 9


def test_a_project_that_dies_is_archived_once_and_covers_its_cold_runs() -> None:
    # Daily hits on days 0.5 … 59.5, then silence. Cold runs (no hit in the next 60
    # days): 60 … 300, nine of them. Seed keeps it at 60 (30 hits in its window) and
    # archives at 90: cold coverage 8/9. Rhythm waits 45 days of silence: 120, 7/9.
    f = rp.ReplayFile("memory/projects/boat.md", at(0), 2048)
    hits = hits_at(f.path, [d + 0.5 for d in range(60)])
    res = by_name(rp.replay([f], hits, RUNS, [pc.Seed(), rpol.Rhythm(), pc.Cut(30)]))
    seed = res["seed"]
    assert [round((t - T0) / DAY) for t, a in seed.decisions if a] == [90]
    assert seed.hits.false_archives == 0
    assert (seed.hits.cold_archived, seed.hits.cold_total) == (8, 9)
    assert seed.bytes_out_avg == 2048 * 8 / 10
    assert (res["rhythm"].hits.cold_archived, res["rhythm"].hits.cold_total) == (7, 9)
    # cut30 archives it at 60, although it is hit at 60.5? No: its last hit is 59.5.
    assert [round((t - T0) / DAY) for t, a in res["cut30"].decisions if a] == [60]


def test_protected_files_take_part_but_are_never_archived_nor_counted_cold() -> None:
    f = rp.ReplayFile("MEMORY.md", at(0), 10, protected=True)
    res = rp.replay([f], [], RUNS, [pc.Cut(30)])[0]
    assert res.archived == 0 and res.hits.cold_total == 0


# --------------------------------------------------------------------------- protocol edges


class Spy(pc.Policy):
    """Archives everything older than 30 days and remembers what it saw."""

    name = "spy"

    def __init__(self) -> None:
        self.seen: dict[float, pc.FileView] = {}

    def decide(self, v: pc.FileView) -> pc.Verdict:
        self.seen[v.t] = v
        return pc.Verdict(v.age_days > 30, "spy", "")


def test_a_hit_exactly_at_the_run_is_seen_and_does_not_make_the_archive_false() -> None:
    t = RUNS[1]  # day 60
    f = rp.ReplayFile("memory/a.md", at(0))
    spy = Spy()
    res = rp.replay([f], [rp.ReplayHit(f.path, t)], [t], [spy])[0]
    assert spy.seen[t].times == (t,)
    assert res.archived == 1 and res.hits.false_archives == 0


def test_a_hit_at_the_horizon_is_a_false_archive_one_second_later_is_not() -> None:
    t = RUNS[1]
    f, g = rp.ReplayFile("memory/a.md", at(0)), rp.ReplayFile("memory/b.md", at(0))
    hits = [rp.ReplayHit(f.path, t + 60 * DAY), rp.ReplayHit(g.path, t + 60 * DAY + 1)]
    res = rp.replay([f, g], hits, [t], [Spy()], 60)[0]
    assert res.archived == 2
    assert dict(res.hits.lost) == {"memory/a.md": 1}
    assert spy_free_cold(res) == (1, 1)  # b: no hit in (t, t+60d], archived


def spy_free_cold(res: rp.PolicyResult) -> tuple[int, int]:
    return res.hits.cold_archived, res.hits.cold_total


def test_a_file_created_after_the_run_takes_no_part_in_it() -> None:
    t = RUNS[1]
    old, new = rp.ReplayFile("memory/old.md", at(0)), rp.ReplayFile("memory/new.md", t + 1)
    spy = Spy()
    res = rp.replay([old, new], [], [t], [spy])[0]
    assert res.decisions == [(t, ["memory/old.md"])]
    assert res.hits.cold_total == 1


def test_a_policy_sees_strength_only_as_known_at_the_run() -> None:
    # A search hit ranked 2nd on day 40, read on day 61: weak at the run on day 60,
    # strong at the run on day 90.
    f = rp.ReplayFile("memory/a.md", at(0))
    hit = rp.ReplayHit(f.path, at(40), "search", rank=2, read_at=at(61))
    spy = Spy()
    rp.replay([f], [hit], [at(60), at(90)], [spy])
    assert spy.seen[at(60)].times == (at(40),) and spy.seen[at(60)].strong == ()
    # archived at 60, back at … never (no hit after 60): not seen at 90; replay again
    spy2 = Spy()
    rp.replay([f], [hit], [at(90)], [spy2])
    assert spy2.seen[at(90)].strong == (at(40),)


def test_an_archived_file_comes_back_at_its_first_hit_and_can_be_archived_again() -> None:
    f = rp.ReplayFile("memory/a.md", at(0))
    runs = [at(60), at(90), at(120)]
    res = rp.replay([f], [rp.ReplayHit(f.path, at(100))], runs, [pc.Cut(30)])[0]
    # 60: out; 90: still out (no hit yet); 100: back; 120: out again
    assert [a for _, a in res.decisions] == [["memory/a.md"], [], ["memory/a.md"]]
    assert res.hits.false_archives == 1  # the archive at 60 (hit at 100 ≤ 120)


def test_run_times_are_the_fire_times_between_first_hit_plus_30_days_and_now_minus_horizon() -> (
    None
):
    fires = [at(d) for d in range(0, 400, 10)]
    runs = rp.run_times(fires, at(5), at(300), 60)
    assert runs[0] == at(40) and runs[-1] == at(240)
    assert rp.run_times(fires, None, at(300), 60) == []


# --------------------------------------------------------------------------- strength


def test_strength_from_ranks_scores_and_later_reads() -> None:
    rows = [
        HitRow("main", "c1", "memory/a.md", "search", 100.0, 0.81, "s1"),
        HitRow("main", "c1", "memory/b.md", "search", 100.0, 0.62, "s1"),
        HitRow("main", "c1", "memory/c.md", "search", 100.0, 0.44, "s1"),
        HitRow("main", "g1", "memory/b.md", "get", 130.0, None, "s1"),
        HitRow("main", "g0", "memory/c.md", "get", 50.0, None, "s1"),  # before: not a read
        HitRow("main", "c2", "memory/a.md", "search", 200.0, None, "s2"),  # no score
        HitRow("main", "c2", "memory/b.md", "search", 200.0, 0.5, "s2"),
        HitRow("main", "g2", "memory/b.md", "get", 210.0, None, "s3"),  # another session
    ]
    s = hit_strengths(rows)
    assert [(x.rank, x.read_at) for x in s[:3]] == [(1, None), (2, 130.0), (3, None)]
    assert [x.label for x in s[:3]] == ["first", "read", "came along"]
    assert s[5].rank is None and s[6].rank is None  # a score missing: rank unknown
    assert s[6].read_at is None and s[6].label == "unknown"


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = run_memoryd(args, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_explain_tells_first_and_read_from_came_along_after_a_real_scan(tmp_path: Path) -> None:
    files = ["memory/boat.md", "memory/dock.md", "memory/misc.md"]
    sessions, _ws, cfg = tx.make_install(tmp_path, files)
    results = tx.search_payload(
        [
            {"path": "memory/boat.md", "startLine": 1, "endLine": 3, "score": 0.71},
            {"path": "memory/dock.md", "startLine": 1, "endLine": 3, "score": 0.58},
            {"path": "memory/misc.md", "startLine": 4, "endLine": 9, "score": 0.33},
        ]
    )
    lines = [
        tx.header("sess-1"),
        tx.call("c1", "memory_search", "boat dock hours", tx.T0),
        tx.result("c1", results, tx.T0 + 1),
        tx.call("c2", "memory_get", None, tx.T0 + 5, path="memory/dock.md"),
        tx.result("c2", {"path": "memory/dock.md", "text": "..."}, tx.T0 + 6, tool="memory_get"),
    ]
    (sessions / "sess-1.jsonl").write_bytes(b"".join(lines))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(HOME=str(tmp_path), MEMORYD_CONFIG=str(cfg), MEMORYD_NOW=str(tx.T0 + 3600))
    _run(env, "scan")
    got = {
        f: json.loads(_run(env, "explain", f, "--json", "--no-scan").stdout)["signals"]["strength"]
        for f in files
    }
    assert got["memory/boat.md"]["first"] == 1
    assert (got["memory/dock.md"]["read"], got["memory/dock.md"]["read_directly"]) == (1, 1)
    assert got["memory/misc.md"]["came_along"] == 1 and got["memory/misc.md"]["strong"] == 0
    text = _run(env, "explain", "memory/misc.md", "--no-scan").stdout
    assert "0 strong" in text and "1 came along" in text


# --------------------------------------------------------------------------- a generated year


def _recount_seed(doc: dict, h, tz_runs: list[float], horizon: float = 60 * DAY) -> dict:
    """The seed rule replayed by hand: plain loops over the hit rows, nothing shared."""
    files = {f.path: f for f in h.files}
    hits = [x for x in h.hits if x.path in files]
    first = {}
    for x in sorted(hits, key=lambda x: x.ts):
        first.setdefault(x.path, x.ts)
    created = {}
    for f in h.files:
        if f.kind == "daily":
            created[f.path] = f.created  # the date in the name, 00:00 UTC
        else:
            created[f.path] = min(f.created, first.get(f.path, f.created))
    # strength by hand: first in its call by score, or a get of it later in the session
    calls: dict[str, list] = {}
    for x in h.hits:
        if x.kind == "search":
            calls.setdefault(x.call_id, []).append(x)
    strong_times: dict[str, list[float]] = {}
    for x in hits:
        ok = x.kind == "get"
        if x.kind == "search":
            top = max(y.score for y in calls[x.call_id])
            ok = x.score == top or any(
                y.kind == "get" and y.path == x.path and y.session == x.session and y.ts >= x.ts
                for y in h.hits
            )
        if ok:
            strong_times.setdefault(x.path, []).append(x.ts)
    times: dict[str, list[float]] = {}
    for x in hits:
        times.setdefault(x.path, []).append(x.ts)
    out = {"archived": 0, "false": 0, "strong": 0, "cold_a": 0, "cold_n": 0, "bytes": 0.0}
    left: dict[str, float] = {}
    decisions = []
    for t in tz_runs:
        for p in list(left):
            if any(left[p] < ts <= t for ts in times.get(p, [])):
                del left[p]
        chosen = []
        for p in sorted(files):
            if created[p] > t or p in left:
                continue
            age = (t - created[p]) / DAY
            recent = sum(1 for ts in times.get(p, []) if t - 30 * DAY <= ts <= t)
            if age > 30 and recent <= 2:
                chosen.append(p)
        for p in chosen:
            left[p] = t
            out["archived"] += 1
            out["false"] += any(t < ts <= t + horizon for ts in times.get(p, []))
            out["strong"] += any(t < ts <= t + horizon for ts in strong_times.get(p, []))
        for p in files:
            if created[p] <= t and not any(t < ts <= t + horizon for ts in times.get(p, [])):
                out["cold_n"] += 1
                out["cold_a"] += p in left
        out["bytes"] += sum(files[p].size for p in left)
        decisions.append(chosen)
    out["bytes"] /= len(tz_runs)
    out["decisions"] = decisions
    return out


def test_simulate_json_on_a_generated_year_matches_an_independent_recount(tmp_path: Path) -> None:
    h = generate(7)
    state = tmp_path / "oc"
    ws = state / "workspace"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    write_history(h, ws, state / "memoryd" / "state.db")
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text('[expire]\nprotect = []\n[schedule]\ntimezone = "UTC"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    now = h.end
    env.update(
        HOME=str(tmp_path), OPENCLAW_STATE_DIR=str(state), MEMORYD_CONFIG=str(cfg),
        MEMORYD_NOW=str(now),
    )  # fmt: skip
    doc = json.loads(_run(env, "simulate", "--json", "--no-scan").stdout)
    assert doc["horizon_days"] == 60 and doc["default"] == pc.DEFAULT_POLICY
    names = [p["name"] for p in doc["policies"]]
    assert names[:4] == ["seed", "cut30", "none", pc.DEFAULT_POLICY]

    # the runs: 04:00 UTC on each first of the month, first hit + 30 d ≤ t ≤ now - 60 d
    first_hit = min(x.ts for x in h.hits)
    expected_runs = []
    d = datetime.fromtimestamp(first_hit, UTC).replace(
        day=1, hour=4, minute=0, second=0, microsecond=0
    )
    while d.timestamp() <= now:
        if first_hit + 30 * DAY <= d.timestamp() <= now - 60 * DAY:
            expected_runs.append(d.timestamp())
        d = d.replace(year=d.year + (d.month == 12), month=d.month % 12 + 1)
    assert [datetime.fromisoformat(r.replace("Z", "+00:00")).timestamp() for r in doc["runs"]] == (
        expected_runs
    )

    seed = doc["policies"][0]
    want = _recount_seed(doc, h, expected_runs)
    assert [sorted(x["archive"]) for x in seed["decisions"]] == want["decisions"]
    assert seed["archived"] == want["archived"] > 0
    assert seed["false_archives"] == want["false"]
    assert seed["false_archive_rate"] == round(want["false"] / want["archived"], 4)
    assert seed["strong_false_archives"] == want["strong"]
    assert seed["strong_false_archive_rate"] == round(want["strong"] / want["archived"], 4)
    assert seed["cold_coverage"] == round(want["cold_a"] / want["cold_n"], 4)
    assert seed["bytes_out_avg"] == round(want["bytes"], 1)
    none = doc["policies"][2]
    assert none["archived"] == 0 and all(x["archive"] == [] for x in none["decisions"])
    likely = doc["policies"][3]
    assert likely["calibration"] and sum(b["n"] for b in likely["calibration"]) > 0
    # likely learns from this history: its first runs print the generic chance, the later
    # ones a chance calibrated on the verdicts whose 60 days had passed by then
    per_run = likely["runs_calibrated"]
    assert not per_run[0]["calibrated"] and per_run[-1]["calibrated"]
    verdicts = [r["verdicts"] for r in per_run if r["calibrated"]]
    assert verdicts == sorted(verdicts) and verdicts[0] >= 200
    assert likely["calibration_generic"]
    assert doc["chance_now"]["calibrated"] and doc["chance_now"]["verdicts"] > verdicts[-1]

    text = _run(env, "simulate", "--no-scan").stdout
    assert "seed" in text and "lost most often" in text and "calibration of likely" in text
    # the first number is the strong one (later needed), "any hit" second, said to include
    # notes that merely came along
    header = next(line for line in text.splitlines() if "archived" in line and "policy" in line)
    assert header.index("later needed") < header.index("any hit")
    assert "merely came along" in text
    assert "generic, uncalibrated chance" in text and "calibrated on" in text
    # the table judges itself: bins of >= 50 verdicts within 0.10 of what followed, counted
    # from its own rows, and the same count in the JSON
    big = [b for b in likely["calibration"] if b["n"] >= 50]
    within = sum(abs(b["predicted"] - b["observed_strong"]) <= 0.10 for b in big)
    assert likely["calibration_check"]["bins"] == len(big) > 0
    assert likely["calibration_check"]["within"] == within
    assert f"within 0.10 of what followed (strong) in {within} of {len(big)} bins" in text
    # expire --dry-run and explain say the chance they print is calibrated, on how many
    dry = json.loads(_run(env, "expire", "--dry-run", "--json", "--no-scan").stdout)
    assert dry["chance_source"].startswith(
        f"calibrated on {doc['chance_now']['verdicts']} of your own past verdicts"
    )
    # and its track record there is simulate's check of the same table
    check = likely["calibration_check"]
    assert (
        f"at your past runs it was within 0.10 of what followed in {check['within']} of "
        f"{check['bins']} chance bins" in dry["chance_source"]
    ), (dry["chance_source"], check)
    # a chance whose record missed in a bin is shown as a band, not a precise percent
    # (issue 28); one that held everywhere, as a percent
    missed = check["bins"] - check["within"]
    if missed:
        assert dry["chance_source"].endswith(
            f"off by more than 0.10 in {missed} of {check['bins']} chance bins"
        )
        assert dry["chance_shown_as"] in ("band", "uncertain")
    else:
        assert dry["chance_shown_as"] == "percent"
    assert any("p_need" in k for k in dry["keep"])
    some = next(k["path"] for k in dry["keep"] if "p_need" in k)
    said = _run(env, "explain", some, "--no-scan").stdout
    assert f"calibrated on {doc['chance_now']['verdicts']} of your own past verdicts" in said
    lines = text.splitlines()
    table = lines.index(header)
    seed_line = next(line for line in lines[table:] if line.strip().startswith("seed "))
    cells = seed_line.split()
    assert cells[2] == str(want["strong"])
    assert cells[3] == f"{want['strong'] / want['archived']:.1%}"
    # harm comes first: of the archives later needed (the same count), how many the agent
    # still reached in the same call, a later call, or not at all
    harm_header = next(i for i, line in enumerate(lines) if "same call" in line)
    assert harm_header < table
    seed_doc = next(p for p in doc["policies"] if p["name"] == "seed")
    harm = seed_doc["harm"]
    assert harm["needed"] == want["strong"] > 0
    assert harm["same_call"] + harm["later_call"] + harm["not_reached"] == harm["needed"]
    # without the plugin a path read brings the note back only for the next call
    assert harm["without_plugin"]["same_call"] <= harm["same_call"]
    assert harm["without_plugin"]["not_reached"] == harm["not_reached"]
    harm_seed = next(line for line in lines[harm_header:table] if line.strip().startswith("seed "))
    assert harm_seed.split()[1:3] == [str(harm["needed"]), str(harm["same_call"])]
    assert doc["archive_indexed"] is False

    # With the archive in OpenClaw's own index (memory.search.extraPaths), a search finds
    # an archived note there: every search that needed one reaches it in that call, plugin
    # or not; the archives and the reads are as they were
    (state / "openclaw.json").write_text(
        json.dumps({"memory": {"search": {"extraPaths": ["memory-archive"]}}})
    )
    indexed = json.loads(_run(env, "simulate", "--json", "--no-scan").stdout)
    assert indexed["archive_indexed"] is True
    got = next(p for p in indexed["policies"] if p["name"] == "seed")["harm"]
    assert got["needed"] == harm["needed"]
    assert got["same_call"] >= harm["same_call"] and got["not_reached"] <= harm["not_reached"]
    searched = sum(n for way, n in got["ways"].items() if way.endswith(" index"))
    assert searched > 0 and got["ways"].get("same search", 0) == 0
    assert got["ways"].get("same read") == harm["ways"].get("same read")
    assert got["without_plugin"]["ways"].get("same index") == got["ways"].get("same index")
    assert "OpenClaw's own index holds the archive" in _run(env, "simulate", "--no-scan").stdout
    # Before it was indexed, simulate said what indexing would change, for the expire job's
    # policy alone: the same figures the indexed replay then gave
    job = doc["default"]
    for p in doc["policies"]:
        assert ("if_indexed" in p["harm"]) == (p["name"] == job)
    then = next(p for p in doc["policies"] if p["name"] == job)["harm"]["if_indexed"]
    now_harm = next(p for p in indexed["policies"] if p["name"] == job)["harm"]
    assert then == {k: v for k, v in now_harm.items() if k != "without_plugin"}
    assert all("if_indexed" not in p["harm"] for p in indexed["policies"])
    assert then["needed"] > 0
    said = (f"with the archive in OpenClaw's index (`memoryd status` gives the command), {job} "
            f"would have reached {then['same_call_rate']:.0%} in the same call")  # fmt: skip
    assert said in text


def test_simulate_reports_restores_of_archived_files_that_a_query_asks_for() -> None:
    # One note archived at day 60, asked for (its own words) on day 70: caught. A second
    # one asked for on day 70 but never hit again: a needless restore.
    a = rp.ReplayFile("memory/a.md", at(0))
    b = rp.ReplayFile("memory/b.md", at(0))
    hits = [rp.ReplayHit(a.path, at(75))]
    calls = [rp.Call(at(70), "kalo vemi"), rp.Call(at(71), "dune pax")]
    texts = {"memory/a.md": "kalo vemi notes", "memory/b.md": "dune pax list"}
    cands = [
        [(p, s) for p, s in ((p, rm.match_score(c.query, t)) for p, t in texts.items())
         if s >= rm.RESTORE_THRESHOLD]
        for c in calls
    ]  # fmt: skip
    res = rp.replay([a, b], hits, [at(60)], [pc.Cut(30)], calls=calls,
                    restore_candidates=cands.__getitem__)[0]  # fmt: skip
    assert (res.restores, res.restores_caught, res.restores_needless) == (2, 1, 1)
    # on a generated history each search knows the note it was for: a's was archived and
    # restored; the second search was for a note never archived (nothing to catch there)
    calls = [rp.Call(at(70), "kalo vemi", "memory/a.md"), rp.Call(at(71), "dune pax", "c.md")]
    res = rp.replay([a, b], hits, [at(60)], [pc.Cut(30)], calls=calls,
                    restore_candidates=cands.__getitem__)[0]  # fmt: skip
    assert (res.restores, res.restores_right, res.restores_wanted) == (2, 1, 1)


def test_restore_match_scores_the_query_words_found_in_the_note() -> None:
    text = "# Dentist\nDr. Vogel, Tuesdays.\ntags: health, teeth\n"
    assert rm.match_score("dentist vogel", text) == 1.0
    assert rm.match_score("", text) == 0.0
    assert 0 < rm.match_score("dentist appointment", text) < 1
    cands = {"memory/dentist.md": text, "memory/boat.md": "# Boat\nmooring fees\n"}
    assert rm.best_match("dentist vogel", cands) == ("memory/dentist.md", 1.0)
    assert rm.best_match("mooring schedule winter", cands) is None  # 1 of 3 words
    assert rm.best_match("the and", cands) is None  # no words to match


# --------------------------------------------------------------------------- the default


def test_the_default_meets_the_need_target_on_held_out_histories() -> None:
    """Seeds and parameters the bench never used (bench: seeds 0-11, params 10000+)."""
    policies = [pc.Seed(), pc.policy_named(pc.DEFAULT_POLICY)]
    totals = {p.name: [0, 0, 0, 0] for p in policies}  # need FA, archived, cold_a, cold_n
    for seed in range(90_001, 90_007):
        params = GenParams() if seed % 2 else sample_params(random.Random(seed * 31 + 5))
        inp = replay_inputs(generate(seed, params))
        for r in rp.replay(inp["files"], inp["hits"], inp["runs"], policies, needs=inp["needs"]):
            assert r.need is not None
            t = totals[r.name]
            t[0] += r.need.false_archives
            t[1] += r.archived
            t[2] += r.need.cold_archived
            t[3] += r.need.cold_total
    seed_t, best = totals["seed"], totals[pc.DEFAULT_POLICY]
    seed_rate, best_rate = seed_t[0] / seed_t[1], best[0] / best[1]
    seed_cov, best_cov = seed_t[2] / seed_t[3], best[2] / best[3]
    assert best_rate <= 0.5 * seed_rate, (best_rate, seed_rate)
    assert best_cov >= (2 / 3) * seed_cov, (best_cov, seed_cov)


def test_expire_dry_run_prints_each_files_chance_under_the_default_policy(tmp_path: Path) -> None:
    state = tmp_path / "oc"
    ws = state / "workspace"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    now = at(400)
    (ws / "memory").mkdir(parents=True)
    for name, age in (("memory/old-trip.md", 200), ("memory/fresh.md", 3)):
        p = ws / name
        p.write_text(f"# {name}\n")
        os.utime(p, (now - age * DAY, now - age * DAY))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(HOME=str(tmp_path), OPENCLAW_STATE_DIR=str(state), MEMORYD_NOW=str(now))
    plan = json.loads(_run(env, "expire", "--dry-run", "--json", "--no-scan").stdout)
    archive = {a["path"]: a for a in plan["archive"]}
    keep = {k["path"]: k for k in plan["keep"]}
    assert set(archive) == {"memory/old-trip.md"}
    assert 0 <= archive["memory/old-trip.md"]["p_need"] < 0.1
    assert keep["memory/fresh.md"]["rule"] == "young" and "p_need" in keep["memory/fresh.md"]
    text = _run(env, "expire", "--dry-run", "--no-scan").stdout
    assert "memory/old-trip.md" in text and "chance needed in 60 days:" in text

    cfg = tmp_path / "memoryd.toml"
    cfg.write_text('[expire]\npolicy = "bogus"\n')
    bad = run_memoryd(["simulate", "--no-scan"], env={**env, "MEMORYD_CONFIG": str(cfg)})
    assert bad.returncode == 2 and "expire.policy: must be one of" in bad.stderr
    cfg.write_text('[expire]\npolicy = "rhythm"\n')  # a research policy, once a setting
    retired = run_memoryd(["simulate", "--no-scan"], env={**env, "MEMORYD_CONFIG": str(cfg)})
    assert retired.returncode == 2 and retired.stderr.count("\n") == 1
    assert "'rhythm' was a research policy" in retired.stderr and "use 'likely'" in retired.stderr
    cfg.write_text('[expire]\npolicy = "seed"\n')
    seed_env = {**env, "MEMORYD_CONFIG": str(cfg)}
    plan = json.loads(_run(seed_env, "expire", "--dry-run", "--json", "--no-scan").stdout)
    assert [a["rule"] for a in plan["archive"]] == ["expired"]  # today's rule, no chance
    assert "p_need" not in plan["archive"][0]
    extra = ("--policy", "likely-generic")
    doc = json.loads(_run(seed_env, "simulate", "--json", "--no-scan", *extra).stdout)
    assert doc["default"] == "seed" and doc["runs"] == []  # no hits: nothing to replay
    names = [p["name"] for p in doc["policies"]]
    assert names == ["seed", "cut30", "none", "likely", "likely-generic"]
    unknown = run_memoryd(["simulate", "--policy", "nope", "--no-scan"], env=env)
    assert unknown.returncode == 2 and "unknown policy 'nope'" in unknown.stderr


def test_the_configured_seed_numbers_are_replayed_as_configured() -> None:
    from memoryd.commands.simulate import policies_for
    from memoryd.config import Config, ExpireConfig

    listed, job = policies_for(Config(expire=ExpireConfig(policy="seed", max_hits=5)), [])
    assert [p.name for p in listed] == ["seed", "cut30", "none", "likely", "configured"]
    assert job == "configured" and listed[-1].params()["max_hits"] == 5
    listed, job = policies_for(Config(expire=ExpireConfig(policy="none")), ["likely-generic"])
    assert [p.name for p in listed] == ["seed", "cut30", "none", "likely", "likely-generic"]
    assert job == "none"


def test_the_calibration_check_counts_only_bins_with_enough_verdicts() -> None:
    bins = [
        {"bin": "0.1-0.2", "n": 49, "predicted": 0.15, "observed_strong": 0.6},  # too few
        {"bin": "0.3-0.4", "n": 50, "predicted": 0.35, "observed_strong": 0.44},  # within
        {"bin": "0.5-0.6", "n": 400, "predicted": 0.55, "observed_strong": 0.40},  # 0.15 off
    ]
    check = rp.calibration_check(bins)
    assert (check["bins"], check["within"], check["largest_error"]) == (2, 1, 0.15)
    # a right chance of 0.3 over 50 verdicts still lands up to ±0.13 away by chance alone;
    # over 5,000, ±0.013
    assert abs(rp.sampling_range(0.3, 50) - 0.1296) < 1e-3
    assert abs(rp.sampling_range(0.3, 5000) - 0.01296) < 1e-4


def test_calibration_bins_count_predicted_against_what_followed() -> None:
    pairs = [(0.05, False, True, None), (0.07, True, True, None), (0.95, True, True, None)]
    bins = rp.calibration_bins(pairs)
    assert bins == [
        {"bin": "0.0-0.1", "n": 2, "predicted": 0.06, "observed_strong": 0.5, "observed_any": 1.0},
        {"bin": "0.9-1.0", "n": 1, "predicted": 0.95, "observed_strong": 1.0, "observed_any": 1.0},
    ]


_rows = st.lists(
    st.tuples(
        st.sampled_from(["c1", "c2", "c3"]),
        st.sampled_from(["memory/a.md", "memory/b.md", "memory/c.md"]),
        st.sampled_from(["search", "search", "get"]),
        st.floats(0, 1000, allow_nan=False),
        st.one_of(st.none(), st.floats(0, 1, allow_nan=False)),
        st.sampled_from(["s1", "s2", None]),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(_rows)
def test_strength_is_consistent_on_any_rows(raw: list) -> None:
    rows = [HitRow("main", c if k == "search" else f"g{i}", p, k, ts, sc if k == "search" else None,
                   se) for i, (c, p, k, ts, sc, se) in enumerate(raw)]  # fmt: skip
    out = hit_strengths(rows)
    assert len(out) == len(rows)
    for r, s in zip(rows, out, strict=True):
        if r.kind == "get":
            assert s.rank is None and s.read_at == r.ts
            continue
        call = [x for x in rows if x.kind == "search" and x.call_id == r.call_id]
        if any(x.score is None for x in call):
            assert s.rank is None
        else:
            assert s.rank == 1 + sum(1 for x in call if x.score > r.score)
        if s.read_at is not None:  # a read is a later get of that file in that session
            assert r.session and s.read_at >= r.ts
            assert any(x.kind == "get" and x.path == r.path and x.session == r.session
                       and x.ts == s.read_at for x in rows)  # fmt: skip


def test_a_restore_needs_a_query_that_names_the_archived_note_better_than_the_workspace() -> None:
    archived = {"memory/dentist.md": "# Dentist\nDr Vogel tuesdays teeth notes\n"}
    # the workspace holds notes that answer "teeth notes" just as well
    present = {
        f"memory/n{i}.md": f"# N{i}\nteeth notes list {i}\n" for i in range(5)
    }
    assert rm.best_match("teeth notes", archived) is not None  # the rule before issue 24
    assert rm.best_match("teeth notes", archived, present) is None  # the workspace has it
    # a distinctive word of the archived note (held by no other note) names it
    assert rm.best_match("vogel teeth", archived, present) == ("memory/dentist.md", 1.0)
    # a word every note holds does not name it, even when no workspace note scores higher
    common = {f"memory/c{i}.md": f"# C{i}\nnotes about cars {i}\n" for i in range(5)}
    assert rm.best_match("notes", archived, common) is None


def test_the_replay_counts_no_restore_when_a_workspace_file_answers_the_query_first() -> None:
    a = rp.ReplayFile("memory/a.md", at(0))
    b = rp.ReplayFile("memory/b.md", at(0))
    hits = [rp.ReplayHit(b.path, at(d)) for d in (40, 45, 50)]  # b kept: 3 hits in 30 days
    calls = [rp.Call(at(70), "kalo vemi")]
    for cands, want in (
        ([[("memory/b.md", 1.0, True), ("memory/a.md", 1.0, True)]], 0),  # b ties: no restore
        ([[("memory/a.md", 1.0, False)]], 0),  # a not named by the query
        ([[("memory/a.md", 1.0, True), ("memory/b.md", 0.6, True)]], 1),  # a first: restored
    ):
        res = rp.replay([a, b], hits, [at(60)], [pc.Seed()], calls=calls,
                        restore_candidates=cands.__getitem__)[0]  # fmt: skip
        assert res.decisions == [(at(60), ["memory/a.md"])]
        assert res.restores == want
        old = rp.replay([a, b], hits, [at(60)], [pc.Seed()], calls=calls,
                        restore_candidates=cands.__getitem__, restore_rule="best-archived")[0]
        assert old.restores == 1


def _held_out(family: str, seed: int) -> Any:
    """A history of ``family`` for a seed the bench never printed: an odd seed with the
    family's default parameters, an even one with parameters drawn from the seed."""
    from support import histories_b, histories_c, histories_d

    made = {  # family: (generate, default parameters, sample_params, the draw's seed mix)
        "a": (generate, GenParams, sample_params, (31, 5)),
        "b": (histories_b.generate_b, histories_b.FamilyBParams, histories_b.sample_params_b,
              (7, 1)),
        "c": (histories_c.generate_c, histories_c.FamilyCParams, histories_c.sample_params_c,
              (11, 3)),
        "d": (histories_d.generate_d, histories_d.FamilyDParams, histories_d.sample_params_d,
              (13, 7)),
    }  # fmt: skip
    gen, default, sample, (mul, add) = made[family]
    return gen(seed, default() if seed % 2 else sample(random.Random(seed * mul + add)))


def _pooled(histories: list[Any]) -> dict[str, float]:
    """The seed rule and the default replayed on ``histories`` (with restore on demand),
    pooled: need FA and coverage of each, the default's restores, and its calibration
    table's check summed over the histories (each calibrated on its own past)."""
    from support.reference_rules import restore_index

    policies = [pc.Seed(), pc.policy_named(pc.DEFAULT_POLICY)]
    totals = {p.name: [0, 0, 0, 0] for p in policies}  # need FA, archived, cold_a, cold_n
    out = dict.fromkeys(("restores", "needless", "right", "within", "bins"), 0.0)
    for h in histories:
        inp = replay_inputs(h)
        cands = restore_index(inp["calls"], inp["texts"])
        for r in rp.replay(inp["files"], inp["hits"], inp["runs"], policies, needs=inp["needs"],
                           calls=inp["calls"], restore_candidates=cands.__getitem__):  # fmt: skip
            assert r.need is not None
            t = totals[r.name]
            t[0] += r.need.false_archives
            t[1] += r.archived
            t[2] += r.need.cold_archived
            t[3] += r.need.cold_total
            if r.name == pc.DEFAULT_POLICY:
                out["restores"] += r.restores
                out["needless"] += r.restores_needless
                out["right"] += r.restores_right
                own = [c for c, f in zip(r.calibration, r.calibrated_flags, strict=True) if f]
                check = rp.calibration_check(rp.calibration_bins(own))
                out["within"] += int(check["within"])  # type: ignore[call-overload]
                out["bins"] += int(check["bins"])  # type: ignore[call-overload]
    (fa_s, n_s, ca_s, cn_s), (fa, n, ca, cn) = totals["seed"], totals[pc.DEFAULT_POLICY]
    return {**out, "fa_ratio": (fa / n) / (fa_s / n_s), "cov_ratio": (ca / cn) / (ca_s / cn_s)}


@pytest.mark.parametrize("family", ["a", "b"])
def test_the_default_meets_the_targets_on_each_family(family: str) -> None:
    """Issue 24: on family B (support.histories_b, never used to fit the generic
    model), and on family A, pooled over four histories the bench never printed: the
    default archives a needed note at most half as often as the seed rule at two thirds of
    its coverage; every restore on demand brings back the note the search was for (the
    rule before issue 24: about a third of them on family A, a tenth on B), and on B at
    most 15 % are needless (never hit again within 60 days; four histories of A are too
    few for that share, 10 % over twenty: docs/decisions.md)."""
    got = _pooled([_held_out(family, seed) for seed in range(90_001, 90_005)])
    assert got["fa_ratio"] <= 0.5 and got["cov_ratio"] >= 2 / 3, got
    assert got["restores"] > 0 and got["right"] == got["restores"], got
    if family == "b":
        assert got["needless"] <= 0.15 * got["restores"], got


@pytest.mark.parametrize("family", ["c", "d"])
def test_on_families_written_apart_the_default_still_beats_the_seed_rule(family: str) -> None:
    """Families C and D (support.histories_c, _d) were written by people who had read
    none of the other generators. Over twenty histories no rule halves the seed rule's need
    FA there (docs/decisions.md), but on four histories the bench never printed the default
    must still archive needed notes clearly less often than the seed rule at most of its
    coverage and rarely restore needlessly; on C (stable months) its printed chance must be
    within 0.10 in most bins of each history's own table. On D (a student's terms) it is
    not, and the table's own check must say so rather than hide it."""
    got = _pooled([_held_out(family, seed) for seed in range(90_001, 90_005)])
    # measured: C 0.51 and 94 % (held to 0.75 and 0.8 before D came), D 0.59 and 83 %
    most_fa, least_cov = (0.75, 0.8) if family == "c" else (0.8, 0.75)
    assert got["fa_ratio"] <= most_fa and got["cov_ratio"] >= least_cov, got
    # four histories are too few for the 15 % of twenty (measured: 6 of 38, 2 of 23)
    assert got["restores"] > 0 and got["needless"] <= 0.2 * got["restores"], got
    assert got["bins"] >= 12, got
    if family == "c":
        assert got["within"] >= 0.8 * got["bins"], got  # measured 27 of 27
    else:
        assert got["within"] < got["bins"], got  # measured 19 of 30


def test_simulate_says_what_the_expire_job_decides_with_even_two_days_before_a_runs_60th(
    tmp_path: Path,
) -> None:
    """Two days before a run's 60 days are over, the expire job already learns from it
    (calibration.SHORT_BY); simulate's tables leave that run out (its outcome is not whole
    yet) but its "now" line must be what the job would decide with: the same verdicts, runs
    and cut as `expire --dry-run` prints."""
    h = generate(7)
    state = tmp_path / "oc"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    write_history(h, state / "workspace", state / "memoryd" / "state.db")
    cfg = tmp_path / "memoryd.toml"
    cfg.write_text('[expire]\nprotect = []\n[schedule]\ntimezone = "UTC"\n')
    last = datetime.fromtimestamp(h.end - 61 * DAY, UTC)
    fire = last.replace(day=1, hour=4, minute=0, second=0, microsecond=0).timestamp()
    now = fire + 58 * DAY + 3600  # the run at `fire` is 58 days and an hour old
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMORYD_", "OPENCLAW_"))}
    env.update(HOME=str(tmp_path), OPENCLAW_STATE_DIR=str(state), MEMORYD_CONFIG=str(cfg),
               MEMORYD_NOW=str(now))  # fmt: skip
    doc = json.loads(_run(env, "simulate", "--json", "--no-scan").stdout)
    last_run = datetime.fromisoformat(doc["runs"][-1].replace("Z", "+00:00")).timestamp()
    assert last_run < fire  # the tables stop before it
    ch = doc["chance_now"]
    assert ch["calibrated"]
    dry = json.loads(_run(env, "expire", "--dry-run", "--json", "--no-scan").stdout)
    assert dry["chance_source"].startswith(
        f"calibrated on {ch['verdicts']} of your own past verdicts ({ch['runs']} runs"
    ), (dry["chance_source"], ch)
    assert f"; archive below {ch['cut']:.0%}; " in dry["chance_source"]
